"""A fleet night's replicates after the jobs: stored in the history database, judged per hardware against its
committed baseline with the replicates as the night's runs, and the dashboard (its cross-hardware page
among them) built from the database."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfkit.cli.compare import judge_files
from perfkit.errors import PerfkitError
from perfkit.render import tables, verdicts
from perfkit.resultfile import load
from perfkit.store.baselines import BaselineStore
from perfkit.verdict.judge import Comparison


@dataclass(frozen=True)
class Judged:
    """One hardware's verdict on the night, or why it has none."""

    hardware_id: str
    runs: int
    comparison: Comparison | None
    why_not: str = ""


def by_hardware(results: Sequence[Path]) -> dict[str, list[Path]]:
    """The result files grouped by the hardware id each was measured on."""
    groups: dict[str, list[Path]] = defaultdict(list)
    for path in results:
        groups[load.load(path).hardware_id].append(path)
    return dict(groups)


def judge_night(results: Sequence[Path], checkout: Path) -> list[Judged]:
    """Each hardware's replicates against the committed baseline of its profile in ``checkout``'s
    baselines/, all of them as that night's runs (the noise model and the tests use them, as they would
    sequential re-runs; the noise of the kept runs is the working folder's, as ``perfkit compare``'s)."""
    store = BaselineStore.find(checkout)
    judged = []
    for hardware_id, paths in sorted(by_hardware(results).items()):
        profile = load.load(paths[0]).profile
        baseline = store.path_for(hardware_id, profile)
        if not baseline.exists():
            save = " ".join(map(str, paths))
            judged.append(Judged(hardware_id, len(paths), None,
                                 f"no committed baseline of {hardware_id} ({profile} profile) in "
                                 f"{store.directory}: save one from these runs with "
                                 f"`perfkit baseline save {save}`"))
            continue
        try:
            judged.append(Judged(hardware_id, len(paths), judge_files(baseline, paths, None)[2]))
        except PerfkitError as exc:  # the other hardware's verdicts and the pages still come
            judged.append(Judged(hardware_id, len(paths), None, f"not judged: {exc}"))
    return judged


def say_verdicts(judged: Sequence[Judged], say: Callable[[str], None] = print) -> None:
    for one in judged:
        say(f"perfkit fleet: {one.hardware_id}, {one.runs} result file(s) as the night's runs:")
        say(one.why_not if one.comparison is None
            else verdicts.render(one.comparison, "table", width=tables.terminal_width()).rstrip())
