"""The experiments whose counts the closing notes quote (experiments/), on synthetic baselines."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from perfkit.store import baselines
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
                 when=f"2026-11-2{i}") for i, m in enumerate(machines)]
    baseline = baselines.from_runs(runs)
    alone = baselines.from_runs([_run({"one_machine": 1e-3}, "m3", when=f"2026-12-0{i}") for i in range(5)])
    baseline = baselines.merge(baseline, alone)
    weekly = baselines.from_runs([_run({"weekly": 1e-3}, "m1", when=f"2026-12-1{i}") for i in range(2)])
    baseline = baselines.merge(baseline, weekly)
    found = {bench.fullname: reasons for bench, reasons in
             stale_gates.stale({}, baseline, {"ok", "one_machine", "short"})}
    assert found == {"short": ["time (4 of 5 runs)"],
                     "one_machine": ["a gate's runs from 1 known machine(s) of 2"],
                     "weekly": ["time (2 of 3 runs)"]}
