"""The experiments whose counts the closing notes quote (experiments/), on synthetic baselines."""
from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from perfkit.store import baselines
from tests.conftest import night
from tests.test_noise import _run

ROOT = Path(__file__).resolve().parents[1]


def _experiment(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "experiments" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_stale_gates_counts_each_entrys_runs_and_machines_as_part_6_asks():
    """A nightly entry needs 5 runs of each gate from 2 machines, a weekly one 3 runs: an entry a run left
    out holds fewer runs than the file, and one whose runs all came from one machine is short too."""
    stale_gates = _experiment("stale_gates")
    machines = ["m1", "m1", "m1", "m2", "m2"]
    runs = [_run({"ok": 1e-3, "one_machine": 1e-3, "weekly": 1e-3} | ({"short": 1e-3} if i < 4 else {}), m,
                 when=night(i, "2026-11-20")) for i, m in enumerate(machines)]
    baseline = baselines.from_runs(runs)
    alone = baselines.from_runs([_run({"one_machine": 1e-3}, "m3", when=night(i, "2026-12-01"))
                                 for i in range(5)])
    baseline = baselines.merge(baseline, alone)
    weekly = baselines.from_runs([_run({"weekly": 1e-3}, "m1", when=night(i, "2026-12-10"))
                                  for i in range(2)])
    baseline = baselines.merge(baseline, weekly)
    found = {bench.fullname: reasons for bench, reasons in
             stale_gates.stale({}, baseline, {"ok", "one_machine", "short"})}
    assert found == {"short": ["time (4 of 5 runs)"],
                     "one_machine": ["a gate's runs from 1 known machine(s) of 2"],
                     "weekly": ["time (2 of 3 runs)"]}


SCRIPTS = sorted(p.name for p in (ROOT / "experiments").glob("*.py") if p.name != "script_line.py")


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_experiment_answers_help_with_its_usage(script: str):
    """A developer who asks a script what it does gets its docstring's first line, not a stack trace and not
    its measurement started (one needing a GPU, a baseline or a count would fail on ``--help``)."""
    done = subprocess.run([sys.executable, str(ROOT / "experiments" / script), "--help"], check=False,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    said = done.stdout + done.stderr
    doc = ast.get_docstring(ast.parse((ROOT / "experiments" / script).read_text()))
    assert "Traceback" not in said
    assert doc and (doc.splitlines()[0] in said or f"usage: {script}" in said)


@pytest.mark.parametrize("script", ["host_tails.py", "stale_gates.py", "leave_machine_out.py",
                                    "device_reference.py"])
def test_an_experiment_given_a_missing_baseline_says_so_in_a_sentence(script: str, tmp_path: Path):
    args = [str(tmp_path / "none.json")] * (2 if script == "stale_gates.py" else 1)
    done = subprocess.run([sys.executable, str(ROOT / "experiments" / script), *args], check=False,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "none.json: no such file" in done.stderr
