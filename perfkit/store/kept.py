"""Where kept runs come from, chosen once for every reader (history, report, the noise a verdict judges
with): the history database at a URL where one is named, else pytest-benchmark's storage folder, as
pytest-benchmark's own ``load_storage`` picks a storage from its one option."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perfkit.resultfile.model import ProfileName
from perfkit.store import storage_folder
from perfkit.store.storage_folder import History


@dataclass(frozen=True)
class Kept:
    """The runs kept of one machine and profile (where given), and where they are kept."""

    where: str
    history: History


def stored_kinds(db: str, hardware_id: str | None, profile: ProfileName | None
                 ) -> tuple[str, list[str], list[str]]:
    """Where the history database at URL ``db`` is, and the hardware ids and profiles of its runs (of
    ``hardware_id`` and ``profile`` where given), without reading a run."""
    from perfkit.store import database  # SQLAlchemy: imported only where a database is named

    with database.open_store(db) as opened:
        return (opened.where, *opened.kinds(hardware_id, profile))


def kept_runs(hardware_id: str | None, profile: ProfileName | None = None, *, db: str | None = None,
              storage: str | Path | None = None, newest: int | None = None) -> Kept:
    """The runs kept in the history database at URL ``db``, else in the storage folder ``storage``
    (``DIR`` or ``file://DIR``; default: the ``.benchmarks`` found from here up), oldest first, the
    ``newest`` n only where given; a folder that does not exist is an error that says so."""
    if db is not None:
        from perfkit.store import database  # SQLAlchemy: imported only where a database is named

        with database.open_store(db) as opened:
            return Kept(opened.where, opened.history(hardware_id, profile, newest))
    folder = storage_folder.storage_path(storage) if storage else storage_folder.find_storage(Path.cwd())
    found = storage_folder.load_history(folder, hardware_id)
    found = found if profile is None else found.of_profile(profile)
    if newest is not None:
        found = History(found.runs[-newest:], found.paths[-newest:], found.skipped)
    return Kept(str(folder), found)
