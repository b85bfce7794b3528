"""Whether reading the CUDA libraries ahead takes their first load off a fresh machine's nightly (part 7 of
issue 44): the pytest process's first cuDNN network on a fresh H100 took 12.3-20.0 s where a second process,
or one after DDP's worker had loaded the libraries, took 4.7-9.9 s (docs/findings.md, 2026-12-05, evening).

Each trial evicts torch's and NVIDIA's shared libraries from the page cache (``posix_fadvise`` DONTNEED: clean
pages only, no root needed), then times a fresh Python process that imports torch and torchvision and runs one
ResNet-18 forward and backward at batch 32 on the GPU (``--cpu``: on the CPU). Three ways, in turn:

- ``cold``: as a fresh machine meets them, page by page as the loader faults them in;
- ``read``: the files read whole first, in order (the seconds that takes are given apart): what a read-ahead
  at start-up, overlapped with the first benchmarks, would leave;
- ``warm``: right after another process loaded them.

    python experiments/cold_libraries.py [REPEATS] [--cpu]
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

CHILD = """
import time
start = time.perf_counter()
import torch, torchvision
device = torch.device("{device}")
model = torchvision.models.resnet18().to(device)
model(torch.randn(32, 3, 224, 224, device=device)).sum().backward()
if device.type == "cuda":
    torch.cuda.synchronize()
print(time.perf_counter() - start)
"""


def libraries() -> list[Path]:
    """torch's shared libraries and those of the NVIDIA wheels beside it (cuDNN, cuBLAS, NCCL, ...)."""
    site = Path(torch.__file__).resolve().parents[1]
    found = [*(site / "torch" / "lib").glob("*.so*"), *(site / "nvidia").glob("**/*.so*")]
    return sorted(path for path in found if path.is_file())


def advise(paths: list[Path], advice: int) -> None:
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, advice)
        finally:
            os.close(fd)


def read_whole(paths: list[Path]) -> float:
    """Seconds to read every file through once, in order."""
    start = time.perf_counter()
    for path in paths:
        with open(path, "rb") as handle:
            while handle.read(16 << 20):
                pass
    return time.perf_counter() - start


def child_seconds(device: str) -> float:
    done = subprocess.run([sys.executable, "-c", CHILD.format(device=device)], capture_output=True, text=True,
                          check=True)
    return float(done.stdout.strip().splitlines()[-1])


def main(repeats: int, device: str) -> None:
    paths = libraries()
    size = sum(path.stat().st_size for path in paths) / 2**30
    print(f"{len(paths)} libraries, {size:.2f} GiB; a ResNet-18 step on {device} in a fresh process",
          flush=True)
    times: dict[str, list[float]] = {"cold": [], "read": [], "reading": [], "warm": []}
    for repeat in range(repeats):
        advise(paths, os.POSIX_FADV_DONTNEED)
        times["cold"].append(child_seconds(device))
        advise(paths, os.POSIX_FADV_DONTNEED)
        times["reading"].append(read_whole(paths))
        times["read"].append(child_seconds(device))
        times["warm"].append(child_seconds(device))
        print(repeat, {way: f"{values[-1]:.2f} s" for way, values in times.items()}, flush=True)
    print({way: f"median {statistics.median(values):.2f} s" for way, values in times.items()})


if __name__ == "__main__":
    from script_line import run

    def _main(args: list[str]) -> None:
        repeats = [a for a in args if a != "--cpu"]
        main(int(repeats[0]) if repeats else 3, "cpu" if "--cpu" in args else "cuda")

    run(__doc__, _main, most=2, gpu=True)
