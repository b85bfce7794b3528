"""The noise every entry point judges with, from the runs kept for the hardware wherever they are kept: the
baseline's, the baseline store's, pytest-benchmark's storage folder's or the history database's."""
from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from perfkit.resultfile.model import ResultSet
from perfkit.store.baselines import BaselineStore
from perfkit.store.kept import kept_runs
from perfkit.verdict.noise import Noise

#: The newest kept runs read for noise (older ones add little once a change point has cut the series).
KEPT_RUNS = 60


def for_judging(baseline: ResultSet, current: ResultSet, store: BaselineStore | None = None,
                storage: Path | None = None, db: str | None = None,
                earlier: Sequence[ResultSet] = (), left_out: Collection[str] = ()) -> Noise:
    """The noise every entry point judges with: the baseline's runs (or, for a single-run baseline, the
    store's baseline of that hardware and profile) and the newest runs kept in pytest-benchmark's ``storage``
    for them, where that folder exists, or in the history database at URL ``db`` instead
    (perfkit.store.database), or ``earlier``, the kept runs a caller already holds (a dashboard's runs before
    the one it judges), less the run judged itself and the runs dated ``left_out`` (a confirmation's first
    run, whose values selected the suspects its re-runs are judged on). Across hardware the baseline's own
    runs alone: another machine's noise says nothing of these two."""
    if current.hardware_id != baseline.hardware_id:
        return Noise.of(baseline)
    declared = {entry.fullname: entry.context.gpu_bound for entry in current.benchmarks}

    stored = (
        store.load(baseline.hardware_id, baseline.profile)
        if store is not None and not baseline.info.runs
        else None
    )
    kept = tuple(earlier[-KEPT_RUNS:])
    if db is not None or (storage is not None and storage.is_dir()):
        kept = kept_runs(baseline.hardware_id, baseline.profile, db=db, storage=storage,
                         newest=KEPT_RUNS).history.runs
    # the run judged is often kept already (the nightly saves it before the report): its own values would
    # count as noise around themselves, and a 10% slowdown went from 'regressed' to 'unknown'
    kept = tuple(run for run in kept if run.datetime != current.datetime and run.datetime not in left_out)
    return Noise.of(baseline, kept, stored, declared)
