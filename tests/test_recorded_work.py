"""The work each benchmark did, recorded with its result when the run is read (``extra_info.work``): a
comparison across hardware reads it, counting nothing and loading none of the measuring side; a file written
before runs recorded it is counted from its records as before."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from perfkit.resultfile import load
from perfkit.resultfile.datasheet import COPY
from perfkit.resultfile.metrics import WORK_KEY
from perfkit.store import baselines
from perfkit.verdict.expected import (
    BACKWARD,
    EAGER,
    NoModel,
    Roofs,
    Step,
    Work,
    compacted,
    estimate,
    merged_steps,
    recorded_work,
)
from perfkit.workloads import benchwork
from tests.conftest import DATA, ROOT

H200, H100 = DATA / "baselines" / "across-h200.json", DATA / "baselines" / "across-h100.json"
PPP_B64 = "benches/test_ppp.py::test_layerwise_ppp[b64-vgg16]"

COMPARE_LOADING = """
import contextlib, io, json, sys
from perfkit.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "out": out.getvalue(),
                  "loaded": sorted(m for m in sys.modules if m.startswith(("perfkit.workloads", "torch")))}))
"""


def _recorded(path, tmp_path):
    """The stored run as a run of today's code writes it: read, its work recorded, written back."""
    out = tmp_path / path.name
    out.write_text(json.dumps(benchwork.with_work(load.load(path)).to_json()))
    return out


def test_a_run_records_each_benchmarks_work_as_the_model_counts_it_and_reads_it_back(tmp_path):
    counted = load.load(H200)
    written = load.load(_recorded(H200, tmp_path))
    entries = written.by_name()
    network = entries[PPP_B64]
    assert WORK_KEY in network.extra and isinstance(recorded_work(network), Work)
    # every benchmark: its count (steps alike but for their names kept as one), or why the model has none
    # (host work, a ceiling no datasheet lists)
    assert all(recorded_work(entries[b.fullname]) == _merged(benchwork.work_of(b, counted))
               for b in counted.benchmarks)
    assert any(isinstance(recorded_work(b), NoModel) for b in written.benchmarks)


def _merged(work: Work | NoModel) -> Work | NoModel:
    return dataclasses.replace(work, steps=merged_steps(work.steps)) if isinstance(work, Work) else work


#: A layer stack as the whole-card capacity search builds it: conv and linear layers in turn, 1416 each.
STACK = Work("stack", tuple(step for i in range(1416) for step in (
    Step(f"{i}.0", "forward", 1.48e10, 1.03e8, 1, "tf32"),
    Step(f"{i}.0", BACKWARD, 2.96e10, 2.06e8, 2, "tf32"),
    Step(f"{i}.1", "forward", 1.28e7, 1.03e8, 1, "fp32"))) + (Step("head", "forward", 1e6, 1e5, 1, "fp32"),),
    EAGER, "time")


def test_steps_alike_but_for_their_names_are_recorded_once_and_counted_the_same():
    recorded = STACK.to_json()
    assert [step[0] for step in recorded["steps"]] == ["0.0 x1416", "0.0 x1416", "0.1 x1416", "head"]
    assert Work.from_json(recorded).to_json() == recorded  # merged again (each baseline save): as it was
    assert len(json.dumps(recorded)) < 1000  # 170 KB step by step
    roofs = Roofs("d", {COPY: 4000.0, "matmul_tflops_tf32": 400.0, "matmul_tflops_fp32": 50.0}, {EAGER: 7e-6})
    merged, whole = estimate(Work.from_json(recorded), roofs), estimate(STACK, roofs)
    assert dataclasses.astuple(merged) == pytest.approx(dataclasses.astuple(whole), rel=1e-12)
    assert merged.compute_s > 0 and merged.memory_s > 0 and merged.launch_s == pytest.approx(5665 * 7e-6)


def test_a_baseline_saved_from_runs_that_recorded_a_work_step_by_step_keeps_it_merged(tmp_path):
    raw = load.read_json(H200)
    bench = next(b for b in raw["benchmarks"] if b["fullname"] == PPP_B64)
    bench["extra_info"][WORK_KEY] = {**STACK.to_json(),
                                     "steps": [list(dataclasses.astuple(step)) for step in STACK.steps]}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(raw))
    saved = baselines.from_runs([load.load(path)]).by_name()[PPP_B64]
    assert len(saved.extra[WORK_KEY]["steps"]) == 4
    assert recorded_work(saved) == recorded_work(compacted(load.load(path).by_name()[PPP_B64])) != STACK


def test_a_comparison_across_hardware_reads_the_recorded_work_and_loads_no_workload(tmp_path):
    recorded = [str(_recorded(path, tmp_path)) for path in (H200, H100)]
    done = subprocess.run([sys.executable, "-c", COMPARE_LOADING, "compare", *recorded], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["loaded"] == []
    counted = subprocess.run([sys.executable, "-c", COMPARE_LOADING, "compare", str(H200), str(H100)],
                             cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    older = json.loads(counted.stdout.splitlines()[-1])
    assert "perfkit.workloads.benchwork" in older["loaded"]  # a file without it: counted from its records
    assert seen["out"] == older["out"].replace(str(H200), recorded[0]).replace(str(H100), recorded[1])


def test_a_recorded_work_that_does_not_read_is_counted_again(tmp_path):
    raw = benchwork.with_work(load.load(H200)).to_json()
    bench = next(b for b in raw["benchmarks"] if b["fullname"] == PPP_B64)
    bench["extra_info"][WORK_KEY]["steps"] = [["conv", "forward"]]  # damaged
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(raw))
    results = load.load(path)
    entry = results.by_name()[PPP_B64]
    assert recorded_work(entry) is None
    assert benchwork.work_of(entry, results) == benchwork.work_of(load.load(H200).by_name()[PPP_B64],
                                                                  load.load(H200))
