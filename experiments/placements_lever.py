"""The lever behind perfkit.measure.placements, measured between fresh processes (docs/findings.md).

Each fresh process times the vector add's CPU references (numba loop, numpy add) and the grid kernel's first
launch on managed memory, K = 1 and 100 million, the old way (one allocation, 10 rounds after 5 warm-ups) and
the new way (perfkit.measure.placements: four fresh placements in turn, the CPU buffers on huge pages):

    python experiments/placements_lever.py run 8 lever.jsonl     # eight fresh processes, one JSON line each
    python experiments/placements_lever.py summary lever.jsonl   # SD of the log between processes
"""
from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np


def _old_cpu(add: Callable, x: np.ndarray, y: np.ndarray, keyword: bool) -> float:
    out = np.empty_like(x)
    args, kwargs = ((x, y), {"out": out}) if keyword else ((x, y, out), {})
    for _ in range(5):
        add(*args, **kwargs)
    times = []
    for _ in range(10):
        start = time.perf_counter()
        add(*args, **kwargs)
        times.append(time.perf_counter() - start)
    return statistics.mean(times)


def _new_cpu(add: Callable, x: np.ndarray, y: np.ndarray, keyword: bool) -> float:
    from perfkit.measure import placements

    buffers = [(placements.huge_page_array(x), placements.huge_page_array(y),
                placements.huge_page_array(x, copy=False)) for _ in range(placements.PLACEMENTS)]

    def arguments(b: tuple) -> placements.Arguments:
        return ((b[0], b[1]), {"out": b[2]}) if keyword else (b, {})

    rotation = placements.Rotation(buffers, arguments, add)
    setup, times = rotation._setup(), []
    for _ in range(rotation.rounds):
        args, kwargs = setup()
        start = time.perf_counter()
        add(*args, **kwargs)
        times.append(time.perf_counter() - start)
    return statistics.mean(times)


def _managed_first(n: int, sets: int, rounds: int, warm: int, x: np.ndarray, y: np.ndarray) -> float:
    from numba import cuda

    from perfkit.workloads.kernels import vector_add

    times = []
    for _ in range(sets):
        mx, my, mout = (cuda.managed_array(n, dtype=np.float32) for _ in range(3))
        launch = vector_add.launcher("grid", mx, my, mout, vector_add.sm_count())
        for r in range(warm + rounds):
            mx[:], my[:] = x, y
            start = time.perf_counter()
            launch()
            cuda.synchronize()
            if r >= warm:
                times.append(time.perf_counter() - start)
    return statistics.mean(times)


def child() -> None:
    from perfkit.workloads.kernels import cpu_add

    found: dict[str, float | str] = {}
    for k in (1, 100):
        n = k * 1_000_000
        x, y = cpu_add.host_vectors(n)
        cpu_add.add_loop(x[:16], y[:16], np.empty(16, np.float32))
        for name, add, keyword in (("loop", cpu_add.add_loop, False), ("numpy", np.add, True)):
            found[f"old-{name}K{k}"] = _old_cpu(add, x, y, keyword)
            found[f"new-{name}K{k}"] = _new_cpu(add, x, y, keyword)
        try:
            found[f"old-managedfirstK{k}"] = _managed_first(n, 1, 10, 5, x, y)
            found[f"new-managedfirstK{k}"] = _managed_first(n, 4, 5, 2, x, y)
        except Exception as exc:  # noqa: BLE001 - no GPU here: the CPU figures still count
            found["no_gpu"] = repr(exc)
    print(json.dumps(found))


def run(processes: int, out: str, script: str = __file__) -> None:
    """``script child`` in ``processes`` fresh processes one after another, each one's last line of output
    (its JSON) appended to ``out``; placement_count.py runs its own children through this too."""
    for p in range(processes):
        start = time.time()
        done = subprocess.run([sys.executable, script, "child"], capture_output=True, text=True, check=False)
        answer = done.stdout.strip().splitlines()
        line = answer[-1] if answer else json.dumps({"stderr": done.stderr[-2000:]})
        with open(out, "a") as f:
            f.write(line + "\n")
        print(f"process {p}: {time.time() - start:.1f} s", flush=True)


def summary(path: str) -> None:
    with open(path) as f:
        rows = [r for r in map(json.loads, f) if "stderr" not in r]
    print(f"{len(rows)} processes")
    for key in sorted({k[4:] for r in rows for k in r if k.startswith("old-")}):
        old = [math.log(r["old-" + key]) for r in rows]
        new = [math.log(r["new-" + key]) for r in rows]
        print(f"{key:16s} old {math.exp(statistics.mean(old)) * 1e3:9.3f} ms SD {statistics.stdev(old):6.1%}"
              f"   new {math.exp(statistics.mean(new)) * 1e3:9.3f} ms SD {statistics.stdev(new):6.1%}")


def main(script: str, doc: str | None, child: Callable[[], None], summary: Callable[[str], None]) -> None:
    """The command line every fresh-process experiment here shares: ``child`` (one process's measurement),
    ``run N OUT`` (N fresh processes of ``script``), ``summary OUT``."""
    if sys.argv[1:2] == ["child"]:
        child()
    elif sys.argv[1:2] == ["run"]:
        run(int(sys.argv[2]), sys.argv[3], script)
    elif sys.argv[1:2] == ["summary"]:
        summary(sys.argv[2])
    else:
        raise SystemExit(doc)


if __name__ == "__main__":
    main(__file__, __doc__, child, summary)
