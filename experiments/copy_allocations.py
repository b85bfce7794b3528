"""Whether the device copy's run-to-run spread (test_copy_bandwidth, 0.33% between fresh processes on one
H200, docs/findings.md) comes from where its buffers land in memory: one process times the benchmark's own
4 GiB copy on ALLOCS fresh pairs of buffers in turn (each warmed as the bench warms, freed and returned to
the driver before the next), one JSON line per allocation in OUT as it finishes. Run it in several fresh
processes, then summarise: if the spread between allocations within a process is the spread between
processes, a run that averages the copy over several fresh allocations cuts its run-to-run noise by their
square root.

    python experiments/copy_allocations.py OUT.jsonl [ALLOCS]     (one process; run it several times)
    python experiments/copy_allocations.py --summary OUT.jsonl    (the split, from the lines so far)
"""
from __future__ import annotations

import json
import os
import statistics
import time
from collections import defaultdict
from pathlib import Path

GiB = 2**30
BLOCKS, CALLS = 8, 25


def measure(out: Path, allocations: int) -> None:
    """Append one line per fresh allocation: its copy's median seconds per call over BLOCKS blocks."""
    import torch

    from perfkit.measure import ceilings, timing

    device = torch.device("cuda")
    with out.open("a") as sink:
        for index in range(allocations):
            work = ceilings.copy_workload(device, 4 * GiB)
            timing.warm_for(work.run)
            seconds = timing.time_cuda_events(work.run, BLOCKS, 0, mode="batched", batch=CALLS).median
            line = {"process": os.getpid(), "allocation": index, "copy_ms": seconds * 1e3, "t": time.time()}
            sink.write(json.dumps(line) + "\n")
            sink.flush()
            print(f"process {os.getpid()} allocation {index}: {seconds * 1e3:.4f} ms", flush=True)
            del work
            torch.cuda.empty_cache()


def summary(lines: Path) -> None:
    """Print the spread between allocations within a process (pooled) and between the processes' means."""
    by_process: dict[int, list[float]] = defaultdict(list)
    for text in lines.read_text().splitlines():
        record = json.loads(text)
        by_process[record["process"]].append(record["copy_ms"])
    means = [statistics.fmean(values) for values in by_process.values()]
    grand = statistics.fmean(means)
    within = [(value - statistics.fmean(values)) ** 2 for values in by_process.values() for value in values]
    within_df = sum(len(values) - 1 for values in by_process.values())
    for process, values in by_process.items():
        print(f"process {process}: " + " ".join(f"{value:.4f}" for value in values) + " ms")
    if within_df:
        within_sd = (sum(within) / within_df) ** 0.5
        print(f"between allocations in a process: {100 * within_sd / grand:.3f}% ({within_df} df)")
    if len(means) > 1:
        print(f"between the processes' means: {100 * statistics.stdev(means) / grand:.3f}% "
              f"({len(means) - 1} df, {len(means)} processes)")


def main(args: list[str]) -> None:
    if args[0] == "--summary":
        summary(Path(args[1]))
    else:
        measure(Path(args[0]), int(args[1]) if len(args) > 1 else 6)


if __name__ == "__main__":
    import sys

    from script_line import run

    run(__doc__, main, least=1, most=2, gpu=sys.argv[1:2] != ["--summary"])
