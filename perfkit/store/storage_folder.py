"""Every run kept in pytest-benchmark's own storage folder, read back, and a baseline of the newest.

``pytest benches/ --benchmark-autosave [--benchmark-storage=file://DIR]`` writes each run to
``DIR/<machine-id>/NNNN_<commit>_<date>.json`` (default ``DIR`` = ``.benchmarks``): the same JSON as
``--benchmark-json``, with perfkit's ``machine_info["perfkit"]``, but without raw samples unless
``--benchmark-save-data`` is given. A series needs only each run's median and metric values, so the default
autosave is enough for trends; a baseline keeps the raw samples of its newest run, so ``baseline save
--from-history`` needs that run saved with ``--benchmark-save-data``. pytest-benchmark's machine-id folder
names the Python, not the box, so runs are told apart by perfkit's hardware id.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from perfkit.errors import BaselineError, UsageError
from perfkit.resultfile import load
from perfkit.resultfile.model import ProfileName, ResultSet
from perfkit.store import baselines

#: pytest-benchmark's default ``--benchmark-storage``.
DEFAULT_STORAGE = ".benchmarks"
#: pytest-benchmark names stored runs ``NNNN_<name>.json``.
RUN_GLOB = "[0-9][0-9][0-9][0-9]_*.json"


@dataclass(frozen=True)
class History:
    """The stored perfkit runs, oldest first, with the file of each (none where they come from a database,
    perfkit.store.database); damaged files are skipped, each with a reason.

    One damaged file (a run killed while pytest-benchmark wrote it) should not hide months of history,
    so it is reported, not raised (pytest-benchmark's own loader skips such files too).
    """

    runs: tuple[ResultSet, ...]
    paths: tuple[Path, ...] = ()
    skipped: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.runs)

    def hardware_ids(self) -> list[str]:
        return sorted({r.hardware_id for r in self.runs})

    def of_profile(self, profile: ProfileName) -> History:
        """Only the runs of one size profile: quick-profile timings do not belong in a full-profile trend."""
        keep = [r.profile == profile for r in self.runs]
        return History(tuple(r for r, k in zip(self.runs, keep) if k),
                       tuple(p for p, k in zip(self.paths, keep) if k), self.skipped)

    def profiles(self) -> list[ProfileName]:
        return sorted({r.profile for r in self.runs})


def storage_path(text: str | os.PathLike[str]) -> Path:
    """A folder from ``DIR`` or pytest-benchmark's ``file://DIR`` form (other storages cannot be read
    here)."""
    text = str(text)
    if text.startswith("file://"):
        return Path(text[len("file://"):])
    if "://" in text:
        raise UsageError(f"{text}: only file:// storage can be read; copy the runs to a folder first")
    return Path(text)


def find_storage(start: str | os.PathLike[str]) -> Path:
    """The ``.benchmarks`` of the first folder from ``start`` up that has one, stopping at the project root
    (as :meth:`perfkit.store.baselines.BaselineStore.find`); ``start/.benchmarks`` when none does."""
    start = Path(start).resolve()
    for folder in (start, *start.parents):
        if (folder / DEFAULT_STORAGE).is_dir():
            return folder / DEFAULT_STORAGE
        if any((folder / m).is_file() for m in baselines.PROJECT_MARKERS):
            break
    return start / DEFAULT_STORAGE


def _number(path: Path) -> int:
    return int(path.name[:4])


def load_history(storage: str | os.PathLike[str], hardware_id: str | None = None) -> History:
    """Every perfkit run stored under ``storage`` (of ``hardware_id`` only, when given), oldest first, each
    read by the one loader (perfkit.resultfile.load: older files migrated, so a trend does not split at an
    upgrade).

    Order is the run's own ``datetime`` (sequence numbers restart in each machine-id folder, e.g. after a
    Python upgrade), then the sequence number. Runs written by plain pytest-benchmark are left out.
    """
    folder = storage_path(storage)
    if not folder.is_dir():
        raise BaselineError(f"{folder}: no such storage folder; run pytest with --benchmark-autosave "
                            f"(and --benchmark-storage=file://{folder}) first")
    found: list[tuple[tuple[str, int, str], ResultSet, Path]] = []
    skipped: list[str] = []
    for path in sorted({*folder.glob(RUN_GLOB), *folder.glob(f"*/{RUN_GLOB}")}):
        try:
            raw = load.read_json(path)
        except BaselineError as exc:
            skipped.append(f"{path}: unreadable ({exc})")
            continue
        if "perfkit" not in (raw.get("machine_info") or {}):
            continue  # not a perfkit run
        try:
            results = load.parse(raw, str(path))
        except BaselineError as exc:
            skipped.append(str(exc))
            continue
        if hardware_id is None or results.hardware_id == hardware_id:
            found.append(((results.datetime, _number(path), str(path.parent)), results, path))
    found.sort(key=lambda item: item[0])
    return History(tuple(r for _, r, _ in found), tuple(p for _, _, p in found), tuple(skipped))


def baseline_from_history(storage: str | os.PathLike[str], hardware_id: str | None, n: int,
                          profile: ProfileName | None = None) -> ResultSet:
    """A baseline of the last ``n`` runs of one hardware id kept in pytest-benchmark's ``storage`` (see
    :func:`baseline_of`)."""
    enough_runs(n)
    kept = load_history(storage, hardware_id)
    return baseline_of(kept if profile is None else kept.of_profile(profile), str(storage_path(storage)),
                       hardware_id, n)


def enough_runs(n: int) -> None:
    """A baseline's spread needs two runs at least."""
    if n < 2:
        raise UsageError(
            f"a baseline from history needs at least 2 runs (their spread sets each figure's band), not {n}"
        )


def baseline_of(history: History, where: str, hardware_id: str | None, n: int) -> ResultSet:
    """A baseline of the last ``n`` runs of ``history`` (:func:`perfkit.store.baselines.from_runs`),
    wherever they were kept (``where`` names it: a storage folder or a database).

    Without ``hardware_id`` the runs name it; runs of several machines, or of both profiles, need it said.
    """
    enough_runs(n)
    ids = history.hardware_ids()
    if hardware_id is None and len(ids) > 1:
        raise UsageError(f"{where} holds runs of several machines ({', '.join(ids)}); "
                         "pass --hardware-id to choose one")
    if len(history.profiles()) > 1:
        raise UsageError(f"{where} holds runs of the {' and '.join(history.profiles())} profiles; a baseline "
                         "holds one profile's sizes: pass --profile to choose one")
    if len(history) < n:
        which = f" of {hardware_id or ids[0]}" if (hardware_id or ids) else ""
        raise BaselineError(
            f"{where} holds {len(history)} perfkit run(s){which}, fewer than the {n} "
            f"asked for; keep {n - len(history)} more run(s) there first (pytest --benchmark-autosave, or "
            "`perfkit history ingest` for a database)"
        )
    bare = [b.fullname for b in history.runs[-1].benchmarks if not b.samples]
    if bare:
        raise BaselineError(
            f"{history.runs[-1].source}: the newest stored run has no raw samples (e.g. {bare[0]}), which a "
            "baseline keeps; pytest-benchmark's autosave leaves them out unless --benchmark-save-data "
            "is given: run once more with it"
        )
    return baselines.from_runs(list(history.runs[-n:]))
