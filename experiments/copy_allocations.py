"""Whether the device copy's run-to-run spread (test_copy_bandwidth; on the H200 baseline one machine's five
runs fall in two modes 0.65% apart) comes from where its buffers land in memory: one process holds ALLOCS
pairs of the benchmark's own 4 GiB buffers at once, times the copy on each in turn (warmed as the bench
warms, without its locked SM clock), then on each again, one JSON line per timing in OUT as it finishes.
Run it in several fresh processes, then summarise: if the processes' means differ no more than their
allocations alone would make them, and a second pass repeats each allocation, the mode is the memory's, and
a run that averages the copy over several allocations cuts its run-to-run noise by about their square root.

    python experiments/copy_allocations.py OUT.jsonl [ALLOCS]     (one process; run it several times)
    python experiments/copy_allocations.py --summary OUT.jsonl    (the split, from the lines so far)
"""
from __future__ import annotations

import json
import math
import os
import statistics
import time
from collections import defaultdict
from pathlib import Path


def measure(out: Path, allocations: int) -> None:
    """Append one line per allocation and pass: its copy's median milliseconds per call, timed as copy_drift
    times it. The ALLOCS pairs are held together (distinct memory), timed in turn, then all timed again: a
    second pass that repeats the first allocation by allocation says the state is the memory's, not the
    moment's."""
    import torch
    from copy_drift import GiB, time_copy

    from perfkit.measure import ceilings, timing

    device = torch.device("cuda")
    process = f"{os.getpid()}-{time.time():.0f}"  # a pid alone repeats across fresh machines
    pairs = [ceilings.copy_workload(device, 4 * GiB) for _ in range(allocations)]
    with out.open("a") as sink:
        for turn in range(2):
            for index, work in enumerate(pairs):
                timing.warm_for(work.run)
                seconds = time_copy(work)
                line = {"process": process, "allocation": index, "pass": turn, "copy_ms": seconds * 1e3,
                        "t": time.time()}
                sink.write(json.dumps(line) + "\n")
                sink.flush()
                print(f"process {process} allocation {index} pass {turn}: {seconds * 1e3:.4f} ms", flush=True)


def _pooled_sd(groups: list[list[float]]) -> tuple[float, int]:
    """The pooled within-group SD and its degrees of freedom."""
    squares = sum((value - statistics.fmean(group)) ** 2 for group in groups for value in group)
    df = sum(len(group) - 1 for group in groups)
    return ((squares / df) ** 0.5 if df else math.nan), df


def summary(lines: Path) -> None:
    """Print the spread between passes over one allocation, between allocations within a process (their
    means over passes) and between the processes' means, each as a percentage of the grand mean; beside the
    last, what the allocations alone would put on a mean of as many (processes that differ show more)."""
    cells: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for text in lines.read_text().splitlines():
        record = json.loads(text)
        cells[str(record["process"])][record["allocation"]].append(record["copy_ms"])
    allocation_means = {process: [statistics.fmean(values) for values in by_allocation.values()]
                        for process, by_allocation in cells.items()}
    means = [statistics.fmean(values) for values in allocation_means.values()]
    grand = statistics.fmean(means)
    for process, by_allocation in cells.items():
        print(f"process {process}: " + "  ".join(" ".join(f"{value:.4f}" for value in values)
                                                 for values in by_allocation.values()) + " ms")
    repeat_sd, repeat_df = _pooled_sd([values for by_allocation in cells.values()
                                       for values in by_allocation.values()])
    allocation_sd, allocation_df = _pooled_sd(list(allocation_means.values()))
    print(f"between passes over one allocation: {100 * repeat_sd / grand:.3f}% ({repeat_df} df)")
    print(f"between allocations in a process: {100 * allocation_sd / grand:.3f}% ({allocation_df} df)")
    if len(means) > 1:
        per_process = statistics.fmean(len(values) for values in allocation_means.values())
        print(f"between the processes' means: {100 * statistics.stdev(means) / grand:.3f}% "
              f"({len(means) - 1} df, {len(means)} processes; their allocations alone would give "
              f"{100 * allocation_sd / per_process**0.5 / grand:.3f}%)")


def main(args: list[str]) -> None:
    if args[0] == "--summary":
        if len(args) != 2:
            raise SystemExit(__doc__)
        summary(Path(args[1]))
    elif len(args) > 1 and not args[1].isdigit():
        raise SystemExit(f"copy_allocations.py: ALLOCS is a count of allocations, not {args[1]!r}")
    else:
        measure(Path(args[0]), int(args[1]) if len(args) > 1 else 6)


if __name__ == "__main__":
    import sys

    from script_line import run

    run(__doc__, main, least=1, most=2, gpu=sys.argv[1:2] != ["--summary"])
