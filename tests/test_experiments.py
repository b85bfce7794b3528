"""The experiments whose counts the closing notes quote (experiments/), on synthetic baselines."""
from __future__ import annotations

import ast
import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from perfkit import simulate
from perfkit.errors import UsageError
from perfkit.resultfile import load
from perfkit.resultfile.model import RunOrigin
from perfkit.store import baselines
from perfkit.verdict.noise import GPU_KIND, Noise
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
                                    "device_reference.py", "heavy_beyond_chance.py"])
def test_an_experiment_given_a_missing_baseline_says_so_in_a_sentence(script: str, tmp_path: Path):
    args = [str(tmp_path / "none.json")] * (2 if script == "stale_gates.py" else 1)
    done = subprocess.run([sys.executable, str(ROOT / "experiments" / script), *args], check=False,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "none.json: no such file" in done.stderr


def test_device_reference_splits_two_memory_speeds_and_reads_each_figure_within_them():
    """Runs of two machine classes 0.8% apart on the copy: the split falls between them, a figure that follows
    the classes keeps only its spread within them, and a lone outlier of the copy is no class of its own."""
    device_reference = _experiment("device_reference")
    runs = [night(i, "2026-11-20") for i in range(8)]
    copy = dict(zip(runs, [-0.004] * 4 + [0.004] * 4))
    split, apart = device_reference.split_in_two(copy)
    assert -0.004 < split < 0.004 and apart == pytest.approx(0.008)
    wobble = {run: 0.001 if i % 2 else -0.001 for i, run in enumerate(runs)}
    follows = {run: 2 * copy[run] + wobble[run] for run in runs}
    within = device_reference.within_classes(runs, copy, follows, split)
    assert within == pytest.approx((8 * 0.001**2 / 6) ** 0.5)
    outlier = dict(zip(runs, [-0.02] + [0.0001 * i for i in range(7)]))
    lower = sum(value < device_reference.split_in_two(outlier)[0] for value in outlier.values())
    assert lower >= 2
    assert device_reference.split_in_two(dict(list(copy.items())[:3]))[0] == float("inf")


def test_device_reference_holds_each_machine_out_against_its_own_class():
    """Twelve machines, six of each memory speed: held out one by one, a figure that follows the classes is
    off its class's other runs by its own wobble alone, and off all other runs by about the classes' gap."""
    device_reference = _experiment("device_reference")
    runs = [RunOrigin(night(i, "2026-11-20"), f"m{i}") for i in range(12)]
    copy = {run: -0.004 if i < 6 else 0.004 for i, run in enumerate(runs)}
    own = {run: 2 * copy[run] + (0.001 if i % 2 else -0.001) for i, run in enumerate(runs)}
    raw, read_over, in_class = device_reference.held_out(runs, copy, own)
    # a held-out +0.001 run against its class's other five: two at +0.001 and three at -0.001
    assert in_class == pytest.approx(0.001 + 0.001 / 5)
    assert raw > 0.008 and read_over == pytest.approx(in_class, rel=0.5)


def test_copy_allocations_splits_passes_allocations_and_processes(tmp_path: Path):
    """Two processes of two allocations timed twice: the three spreads it prints are the repeat within an
    allocation, the allocations within a process, and the processes' means."""
    lines = tmp_path / "alloc.jsonl"
    cells = {(1, 0): (2.000, 2.002), (1, 1): (2.010, 2.012), (2, 0): (2.020, 2.022), (2, 1): (2.030, 2.032)}
    lines.write_text("".join(f'{{"process": {p}, "allocation": {a}, "pass": {k}, "copy_ms": {v}}}\n'
                             for (p, a), values in cells.items() for k, v in enumerate(values)))
    done = subprocess.run([sys.executable, str(ROOT / "experiments" / "copy_allocations.py"), "--summary",
                           str(lines)], check=True, capture_output=True, text=True, timeout=120, cwd=ROOT)
    said = dict(line.split(": ", 1) for line in done.stdout.splitlines() if line.startswith("between"))

    def percent(sd: float) -> str:
        return f"{100 * sd / 2.016:.3f}%"

    assert said["between passes over one allocation"] == f"{percent((8 * 0.001**2 / 4) ** 0.5)} (4 df)"
    assert said["between allocations in a process"] == f"{percent((4 * 0.005**2 / 2) ** 0.5)} (2 df)"
    assert said["between the processes' means"].startswith(f"{percent((2 * 0.01**2) ** 0.5)} (1 df")


def test_leave_machine_out_names_how_each_figures_tails_were_read():
    """A GPU-bound figure with one wild run among 25 is tested with its own heavy tails, the others with
    their kind's tails read from their runs; one that declares its own tolerance, and any with fewer than
    TAIL_RUNS runs (the wild one too), with the kind's default."""
    leave_machine_out = _experiment("leave_machine_out")
    figures = tuple(simulate.Figure(f"gpu{i}", 0.004, True) for i in range(12))
    figures += (simulate.Figure("tolerant", 0.004, True, tolerance=0.05),)
    rng = np.random.default_rng(3)
    draws = [{f.name: 1e-3 * math.exp(0.004 * rng.normal()) for f in figures} for _ in range(25)]
    draws[0]["gpu0"] *= math.exp(0.004 * 6)  # six SDs out: its own kurtosis far above 2

    def noise_of(runs: list[dict[str, float]]) -> Noise:
        return Noise.of(baselines.from_runs([simulate._run(figures, values, "m1", night(i, "2026-11-20"))
                                             for i, values in enumerate(runs)]))

    full = noise_of(draws)
    read = {name: leave_machine_out._tails_read(full, (name, "time"))
            for name in ("gpu0", "gpu1", "tolerant")}
    assert read == {"gpu0": "heavy on its own", "gpu1": "the kind's tails read",
                    "tolerant": "20+ runs, its own tolerance"}
    few = noise_of(draws[:12])
    assert {leave_machine_out._tails_read(few, (name, "time")) for name in ("gpu0", "gpu1", "tolerant")} == {
        "under 20 runs"}


def test_heavy_beyond_chance_leaves_out_a_lone_wild_figure_and_none_where_every_figure_is_heavy():
    """One figure with a run eight SDs out among eleven normal ones of 30 runs is heavier than their read
    gives by chance; among twelve Student's t4 figures, those heavy on their own are not: leaving them out
    would read the rest too light."""
    heavy_beyond_chance = _experiment("heavy_beyond_chance")
    figures = tuple(simulate.Figure(f"gpu{i}", 0.004, True) for i in range(12))
    rng = np.random.default_rng(1)

    def steps(draw, wild: bool = False) -> list:
        runs = [{f.name: 1e-3 * math.exp(0.004 * draw()) for f in figures} for _ in range(30)]
        if wild:
            runs[0]["gpu0"] *= math.exp(0.004 * 8)
        noise = Noise.of(baselines.from_runs([simulate._run(figures, values, "m1", night(i, "2026-11-20"))
                                              for i, values in enumerate(runs)]))
        return heavy_beyond_chance.steps(noise, set(noise.runs), GPU_KIND, draws=2000)

    draws = rng.standard_t(4, (3, 30))
    assert heavy_beyond_chance.kurtoses(draws) == pytest.approx(
        [heavy_beyond_chance.own_kurtosis(tuple(row)) for row in draws])
    wild = steps(rng.normal, wild=True)
    assert [s.figure[0] for s in wild] == ["gpu0"] and heavy_beyond_chance.left_out(wild) == 1
    shared = steps(lambda: rng.standard_t(4))
    assert len(shared) >= 2 and heavy_beyond_chance.left_out(shared) == 0


def test_without_machine_holds_out_every_run_of_the_nights_machine_and_refuses_to_leave_nothing(
        tmp_path: Path):
    """A night whose run went into the baseline is judged again as a fresh machine: the file written holds
    the other machines' runs, as the baseline stored them, and a baseline of that machine alone is refused
    in a sentence."""
    machines = ["m1", "m2", "m1", "m2", "m3"]
    runs = [_run({"gpu": 1e-3 * (1 + i / 100)}, m, when=night(i, "2026-12-01"))
            for i, m in enumerate(machines)]
    baseline_path, night_path, held_path = (tmp_path / name for name in ("b.json", "night.json", "held.json"))
    baseline_path.write_text(json.dumps(baselines.from_runs(runs).to_json()))
    night_path.write_text(json.dumps(runs[2].to_json()))
    script = ROOT / "experiments" / "without_machine.py"
    done = subprocess.run([sys.executable, str(script), str(baseline_path), str(night_path), str(held_path)],
                          check=True, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert "without the 2 run(s) of machine m1" in done.stdout
    held = load.load(held_path)
    assert held.runs()["gpu"]["time"] == pytest.approx([1e-3 * 1.01, 1e-3 * 1.03, 1e-3 * 1.04])
    assert {origin.machine for origin in held.origins()["gpu"]} == {"m2", "m3"}
    alone = baselines.from_runs([_run({"gpu": 1e-3}, "m1", when=night(i, "2026-12-01")) for i in range(3)])
    with pytest.raises(UsageError, match="every run of the baseline was made on m1"):
        _experiment("without_machine").without_machine(alone, "m1")
