"""A fleet night's replicates after the jobs: stored in the history database, judged per hardware against its
committed baseline with the replicates as the night's runs, and the dashboard (its cross-hardware page
among them) built from the database.

One-GPU replicates of a multi-GPU host (``perfkit fleet --on-host``) are judged against that host kind's own
entries where its baseline holds them: a two-H200 host's managed K1 warm kernels run 20% slower than a
one-H200 host's in every run of either kind (docs/fleet.md), a figure of the host, not of the code."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfkit.cli.compare import judge_files
from perfkit.errors import PerfkitError
from perfkit.render import tables, verdicts
from perfkit.resultfile import load
from perfkit.resultfile.model import ProfileName, ResultSet
from perfkit.store import baselines
from perfkit.store.baselines import BaselineStore
from perfkit.verdict.judge import MIN_BASELINE_RUNS, Comparison


@dataclass(frozen=True)
class Judged:
    """One hardware's verdict on the night, or why it has none."""

    hardware_id: str
    runs: int
    comparison: Comparison | None
    why_not: str = ""
    against: str = ""  # which baseline, where it is not simply the hardware's committed one
    kinds: int = 1  # the hardware kinds the night judged, which share its alpha


def by_hardware(results: Sequence[Path]) -> dict[str, list[Path]]:
    """The result files grouped by the hardware id each was measured on."""
    groups: dict[str, list[Path]] = defaultdict(list)
    for path in results:
        groups[load.load(path).hardware_id].append(path)
    return dict(groups)


def judge_night(results: Sequence[Path], checkout: Path, folder: Path | None = None,
                host_gpus: int = 0) -> list[Judged]:
    """Each hardware's replicates against the committed baseline of its profile in ``checkout``'s
    baselines/, all of them as that night's runs (the noise model and the tests use them, as they would
    sequential re-runs; the noise of the kept runs is the working folder's, as ``perfkit compare``'s).

    Replicates of fewer GPUs than their host's ``host_gpus`` are judged against :func:`host_kind_baseline`
    where the host kind has a committed baseline; it is written to ``folder`` (``perfkit compare`` reads it
    again).

    Each hardware is judged at alpha over the number of hardware kinds with a baseline (Bonferroni): the
    fleet's night fails where any of them regressed, and at alpha each, three kinds would falsely fail
    about one night in seven."""
    store = BaselineStore.find(checkout)
    groups = sorted(by_hardware(results).items())
    profiles = {hardware_id: load.load(paths[0]).profile for hardware_id, paths in groups}
    share = sum(store.path_for(h, profiles[h]).exists() for h, _ in groups)
    judged = []
    for hardware_id, paths in groups:
        profile = profiles[hardware_id]
        baseline = store.path_for(hardware_id, profile)
        if not baseline.exists():
            save = " ".join(map(str, paths))
            judged.append(Judged(hardware_id, len(paths), None,
                                 f"no committed baseline of {hardware_id} ({profile} profile) in "
                                 f"{store.directory}: save one from these runs with "
                                 f"`perfkit baseline save {save}`"))
            continue
        try:
            baseline, against = _against_host_kind(store, baseline, hardware_id, profile, host_gpus, folder)
            comparison = judge_files(baseline, paths, None, alpha_share=share)[2]
            judged.append(Judged(hardware_id, len(paths), comparison, against=against, kinds=share))
        except PerfkitError as exc:  # the other hardware's verdicts and the pages still come
            judged.append(Judged(hardware_id, len(paths), None, f"not judged: {exc}"))
    return judged


def _against_host_kind(store: BaselineStore, baseline: Path, hardware_id: str, profile: ProfileName,
                       host_gpus: int, folder: Path | None) -> tuple[Path, str]:
    """The baseline to judge ``hardware_id``'s replicates by, and what to say of it: the host kind's
    combined one (:func:`host_kind_baseline`), written to ``folder``, where there is one to combine; else
    ``baseline`` itself (with why, where the host kind's could not be read)."""
    kind = host_kind(hardware_id, host_gpus)
    host = store.path_for(kind, profile) if kind else None
    if host is None or not host.exists() or folder is None:
        return baseline, ""
    one_gpu = load.load(baseline)  # read, as the judge reads it, before the host kind's
    try:
        combined = host_kind_baseline(one_gpu, load.load(host))
    except PerfkitError as exc:
        return baseline, f"judged against {hardware_id}'s alone: {host} could not be read ({exc})"
    if combined is None:
        return baseline, ""
    written = folder / f"baseline-{hardware_id}-on-{host.stem}.json"
    baselines.write_atomically(written, combined)
    return written, (f"judged against {kind}'s own entries where its baseline holds {MIN_BASELINE_RUNS} runs "
                     f"or more of them (one-GPU runs of such hosts), the rest against {hardware_id}'s: "
                     f"{written}")


def host_kind(hardware_id: str, host_gpus: int) -> str | None:
    """The hardware id of the whole host a replicate of fewer GPUs ran on (``nvidia-h200-x1`` on a two-GPU
    host: ``nvidia-h200-x2``); None where it used every GPU, or ran on a share of a CPU host's cores."""
    model, sep, count = hardware_id.rpartition("-x")
    if not sep or not count.isdigit() or int(count) >= host_gpus:
        return None
    return f"{model}-x{host_gpus}"


def host_kind_baseline(one_gpu: ResultSet, host: ResultSet) -> ResultSet | None:
    """``one_gpu``'s baseline with the entries the host kind's baseline also holds, with 3 runs or more (so
    they can be judged), taken from it with their runs, under ``one_gpu``'s hardware id, fingerprint and
    ceilings (the file's other metadata is the host kind's); None where it holds none of them."""
    held = {b.fullname for b in one_gpu.benchmarks}
    origins = host.origins()
    shared = {b.fullname for b in host.benchmarks
              if b.fullname in held and len(origins.get(b.fullname, ())) >= MIN_BASELINE_RUNS}
    if not shared:
        return None
    taken = baselines.keeping(host, shared).with_info(hardware_id=one_gpu.hardware_id)
    return baselines.merge(one_gpu, taken).with_info(fingerprint=one_gpu.info.fingerprint,
                                                     ceilings=one_gpu.info.ceilings)


def say_verdicts(judged: Sequence[Judged], say: Callable[[str], None] = print) -> None:
    for one in judged:
        shared = (f", judged at alpha {one.comparison.alpha:.2%} (the night's {one.kinds} hardware kinds "
                  "share its false-alarm rate)" if one.comparison is not None and one.kinds > 1 else "")
        say(f"perfkit fleet: {one.hardware_id}, {one.runs} result file(s) as the night's runs"
            + (f", {one.against}" if one.against else "") + shared + ":")
        say(one.why_not if one.comparison is None
            else verdicts.render(one.comparison, "table", width=tables.terminal_width()).rstrip())
