"""Whether a host reference measured in the same process cancels the host-bound figures' spread between
fresh processes and machines (issue 44 part 6's last lever; docs/findings.md).

Each fresh process times, interleaved in three passes, the host-bound figures the nightly cannot see (the
vector add's CPU references at K = 1 and 100 million, the managed first launch of the grid kernel at K = 1
and 100 million, a ResNet-18 CIFAR training step at batch 128: the 1-GPU data-parallel figure) and candidate
references that hold none of the code under test's changes (pure Python arithmetic; NumPy copies in cache and
in DRAM; a numba loop in cache; an empty numba launch; torch's dispatch of small additions). Where a figure's
spread is the process's (its core, its clock, its memory), figure / reference spreads less than the figure:

    python experiments/host_reference.py run 12 ref.jsonl     # twelve fresh processes, one JSON line each
    python experiments/host_reference.py summary ref.jsonl    # SD of log(figure) and of log(figure / ref)
"""
from __future__ import annotations

import functools
import json
import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

PASSES = 3


def _median(call: Callable[[], Any], repeat: int, setup: Callable[[], Any] | None = None) -> float:
    times = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _python_work() -> int:
    total = 0
    for i in range(300_000):
        total += (i * 7) % 13
    return total


def child() -> None:
    from perfkit.workloads.kernels import cpu_add

    found: dict[str, list[float]] = {}

    def keep(name: str, value: float) -> None:
        found.setdefault(name, []).append(value)

    small = {k: cpu_add.host_vectors(k * 1_000_000) for k in (1, 100)}
    outs = {k: np.empty_like(v[0]) for k, v in small.items()}
    cache_x, cache_y = cpu_add.host_vectors(64_000)
    cache_out = np.empty_like(cache_x)
    cpu_add.add_loop(cache_x, cache_y, cache_out)
    gpu = _gpu_parts(small)
    for _ in range(PASSES):
        keep("ref-python", _median(_python_work, 5))
        keep("ref-npcopy1M", _median(lambda: np.copyto(outs[1], small[1][0]), 30))
        keep("ref-npcopy100M", _median(lambda: np.copyto(outs[100], small[100][0]), 3))
        keep("ref-numbacache", _median(lambda: cpu_add.add_loop(cache_x, cache_y, cache_out), 50))
        for k in (1, 100):
            x, y, out = *small[k], outs[k]
            repeat = 20 if k == 1 else 3
            keep(f"fig-loopK{k}", _median(functools.partial(cpu_add.add_loop, x, y, out), repeat))
            keep(f"fig-numpyK{k}", _median(functools.partial(np.add, x, y, out=out), repeat))
        for name, value in gpu():
            keep(name, value)
    print(json.dumps({k: statistics.median(v) for k, v in found.items()}))


def _gpu_parts(vectors: dict[int, tuple[np.ndarray, np.ndarray]]) -> Callable[[], list[tuple[str, float]]]:
    """The GPU-side figures and references, one pass each call; none where no GPU is visible."""
    try:
        from numba import cuda

        if not cuda.is_available():
            return list
    except ImportError:
        return list
    import torch
    import torchvision

    from perfkit.workloads.kernels import vector_add

    @cuda.jit
    def empty(a):
        pass

    token = cuda.device_array(1, dtype=np.float32)
    managed = {}
    for k in (1, 100):
        n = k * 1_000_000
        sets = [tuple(cuda.managed_array(n, dtype=np.float32) for _ in range(3))
                for _ in range(4 if k == 1 else 2)]
        managed[k] = [(s, vector_add.launcher("grid", s[0], s[1], s[2], vector_add.sm_count())) for s in sets]
    model = torchvision.models.resnet18(num_classes=10).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(128, 3, 32, 32, device="cuda")
    labels = torch.randint(0, 10, (128,), device="cuda")
    small_tensor = torch.zeros(16, device="cuda")

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()
        torch.cuda.synchronize()

    def dispatch() -> None:
        for _ in range(200):
            small_tensor.add_(1.0)
        torch.cuda.synchronize()

    def launch_empty() -> None:
        empty[1, 1](token)
        cuda.synchronize()

    for _ in range(5):
        step()
        dispatch()
        launch_empty()

    def first(k: int) -> float:
        x, y = vectors[k]
        times = []
        for (mx, my, _), launch in managed[k]:
            for r in range(3):
                mx[:], my[:] = x, y
                start = time.perf_counter()
                launch()
                cuda.synchronize()
                if r:
                    times.append(time.perf_counter() - start)
        return statistics.median(times)

    def one_pass() -> list[tuple[str, float]]:
        return [("ref-launch", _median(launch_empty, 50)), ("ref-dispatch", _median(dispatch, 20)),
                ("fig-managedK1", first(1)), ("fig-managedK100", first(100)),
                ("fig-r18step", _median(step, 30)), ("ref-python2", _median(_python_work, 5))]

    return one_pass


def summary(path: str) -> None:
    with open(path) as f:
        rows = [r for r in map(json.loads, f) if "stderr" not in r]
    print(f"{len(rows)} processes; SD of the log between processes (figure alone, then over each reference)")
    refs = sorted({k for r in rows for k in r if k.startswith("ref-")})
    print(f"{'figure':18s} {'alone':>8s} " + " ".join(f"{r[4:]:>12s}" for r in refs))
    for fig in sorted({k for r in rows for k in r if k.startswith("fig-")}):
        alone = [math.log(r[fig]) for r in rows if fig in r]
        if len(alone) < 2:
            continue
        cells = []
        for ref in refs:
            ratio = [math.log(r[fig] / r[ref]) for r in rows if fig in r and ref in r]
            cells.append(f"{statistics.stdev(ratio):12.1%}" if len(ratio) > 1 else f"{'-':>12s}")
        print(f"{fig[4:]:18s} {statistics.stdev(alone):8.1%} " + " ".join(cells))
    for ref in refs:
        values = [math.log(r[ref]) for r in rows if ref in r]
        if len(values) > 1:
            print(f"reference {ref[4:]:14s} SD {statistics.stdev(values):6.1%}")


if __name__ == "__main__":
    from placements_lever import main  # the same command line, beside this script

    main(__file__, __doc__, child, summary)
