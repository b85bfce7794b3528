"""The work each benchmark did, recorded with its result when the run is read (``extra_info.work``): a
comparison across hardware reads it, counting nothing and loading none of the measuring side; a file written
before runs recorded it is counted from its records as before."""
from __future__ import annotations

import json
import subprocess
import sys

from perfkit.resultfile import load
from perfkit.resultfile.metrics import WORK_KEY
from perfkit.verdict.expected import NoModel, Work, recorded_work
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
    # every benchmark: its count, or why the model has none (host work, a ceiling no datasheet lists)
    assert all(recorded_work(entries[b.fullname]) == benchwork.work_of(b, counted)
               for b in counted.benchmarks)
    assert any(isinstance(recorded_work(b), NoModel) for b in written.benchmarks)


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
