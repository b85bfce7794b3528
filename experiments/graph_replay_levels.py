"""Whether the one-element kernel's two graph-replay levels are its element's address (docs/findings.md,
2026-12-03).

Replayed in a fresh process, 200 launches of ``x.add_(1)`` on one element read 1.02 or 1.11 us a launch, each
level within 0.1%, and which one a process got depended on the machine and on what its parent had allocated
before. Each launch reads and writes its element in L2, one launch after the other; if the element's
address decides which half of L2 holds it (near or far from the multiprocessor that runs the block), the
level is the address's. Each fresh process here times the replay (200 launches a replay, 20 replays, the
median) on one element at many offsets of one buffer, and once with the 200 launches cycling over elements
at all those offsets; then the benchmark's replay (perfkit.measure.fidelity.spread_elements: 200 elements a
page apart) after holding each of JUNK_MIB more memory, so its elements land on other pages. One JSON line
a process:

    python experiments/graph_replay_levels.py run 3 out.jsonl    # three fresh processes
    python experiments/graph_replay_levels.py summary out.jsonl  # the levels by offset, the cycled replay
"""
from __future__ import annotations

import functools
import itertools
import json
import statistics
from collections.abc import Callable

#: byte offsets of the element: powers of two up to 1 MiB, then a 2 MiB page apart (32 pages)
OFFSETS = (0, *(1 << k for k in range(8, 21)), *(p << 21 for p in range(1, 33)))
LAUNCHES, REPLAYS = 200, 20
#: memory held before each spread replay's buffer (MiB, plus 4 KiB), so its pages are others
JUNK_MIB = (0, 1, 5, 17, 33, 67, 131, 263)


def _one_process() -> dict[str, object]:
    import torch

    from perfkit.measure.fidelity import spread_elements
    from perfkit.measure.timing import time_cuda_events

    buffer = torch.zeros((max(OFFSETS) + 4096) // 4, device="cuda")
    views = [buffer[o // 4:o // 4 + 1] for o in OFFSETS]

    def replay_us(fn: Callable[[], object]) -> float:
        return time_cuda_events(fn, repetitions=REPLAYS, mode="graph", batch=LAUNCHES).median * 1e6

    by_offset = {str(o): replay_us(functools.partial(torch.Tensor.add_, v, 1))
                 for o, v in zip(OFFSETS, views)}
    cycle = itertools.cycle(views)
    cycled = replay_us(lambda: next(cycle).add_(1))
    held: list[object] = []  # every buffer stays held, so no later one reuses an earlier one's pages
    spread = []
    for mib in JUNK_MIB:
        held.append(torch.empty(mib * 2**20 + 4096, dtype=torch.uint8, device="cuda"))
        work = spread_elements(torch.device("cuda"))  # after the memory just held: on other pages
        held.append(work)
        spread.append(replay_us(work.run))
    return {"by_offset": by_offset, "cycled": cycled, "again_0": replay_us(lambda: views[0].add_(1)),
            "spread": spread}


def summary(path: str) -> None:
    with open(path) as lines:
        rows = [r for r in map(json.loads, lines) if "stderr" not in r]  # a failed process says why
    for i, row in enumerate(rows):
        values = list(row["by_offset"].values())
        low = min(values)
        high = [o for o, v in row["by_offset"].items() if v > low * 1.04]
        print(f"process {i}: {low:.3f}-{max(values):.3f} us by offset (median "
              f"{statistics.median(values):.3f}), {len(high)} of {len(values)} offsets 4% above the lowest; "
              f"cycled {row['cycled']:.3f}, offset 0 again {row['again_0']:.3f}")
        print("    spread replay after more memory held:", " ".join(f"{v:.3f}" for v in row["spread"]))
        print("    high at offsets:", " ".join(high))


if __name__ == "__main__":
    from placements_lever import main  # the command line the fresh-process experiments share

    main(__file__, __doc__, lambda: print(json.dumps(_one_process())), summary)
