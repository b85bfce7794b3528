"""Whether a run profiles its benchmarks' work (``--perfkit-explain``) when not told: on a GPU, only where the
hardware's nightly keeps its five minutes with the profiling in it, as its committed baseline's family wall
times say (issue 44: the nightly within five minutes from start-up on a fresh machine)."""
from __future__ import annotations

from dataclasses import dataclass

from perfkit.resultfile.model import ResultSet

#: The nightly's budget from start-up.
BUDGET_S = 300.0
#: What comes before pytest's clock starts (interpreter, imports): 11-12 s on fresh H100s and H200s
#: (machine wall against pytest's own, 2026-11-27).
START_UP_S = 15.0
#: What the profiling adds to a nightly: 13.4 s of 285 s on a fresh H100 (4.7%), 7.7 s of 245 s on an H200
#: (3.1%), 2026-11-27 (docs/findings.md).
SHARE = 0.05


@dataclass(frozen=True)
class Choice:
    """Whether the run profiles, and the sentence that says why (printed at the end of an automatic one)."""

    on: bool
    why: str


def choose(option: str, device: str, gpus: int, baseline: ResultSet | None) -> Choice:
    """``--perfkit-explain`` ("on"), ``--perfkit-no-explain`` ("off") or neither ("auto") resolved for a run
    on ``device`` ("cuda", "cpu") with ``gpus`` GPUs visible, judged against ``baseline`` (None: none).
    Only a one-GPU baseline times every family of the nightly: a several-GPU one holds the data-parallel
    family alone (a pair's whole nightly took 380 s on two H100s on 2026-11-27, its baseline's families
    107 s)."""
    if option != "auto":
        return Choice(option == "on", "--perfkit-explain" if option == "on" else "--perfkit-no-explain")
    if device != "cuda" or gpus != 1:
        return Choice(False, "kernel summaries off: on by default on one GPU only (--perfkit-explain to "
                             "profile)")
    walls = baseline.info.family_wall_s if baseline is not None else {}
    if not walls:
        return Choice(False, "kernel summaries off: no baseline of this hardware says how long its "
                             "benchmarks take (--perfkit-explain to profile)")
    took = sum(walls.values())
    expected = START_UP_S + took * (1 + SHARE)
    if expected > BUDGET_S:
        return Choice(False, f"kernel summaries off: the baseline's benchmarks took {took:.0f} s, about "
                             f"{expected:.0f} s from start-up with profiling, past the nightly's "
                             f"{BUDGET_S:.0f} s (--perfkit-explain to profile anyway)")
    return Choice(True, f"kernel summaries on: the baseline's benchmarks took {took:.0f} s, about "
                        f"{expected:.0f} s from start-up with profiling, within the nightly's "
                        f"{BUDGET_S:.0f} s (--perfkit-no-explain to leave them out)")
