"""Result and baseline files: pytest-benchmark JSON with a perfkit section, loaded safely, written atomically.

A baseline is exactly what ``pytest --benchmark-json`` wrote (raw samples kept), so
``pytest-benchmark compare`` reads it too. perfkit's part sits in ``machine_info["perfkit"]``:
``schema_version``, ``hardware_id``, the fingerprint and the ceilings measured in the run.
"""
from __future__ import annotations

import fnmatch
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from perfkit import SCHEMA_VERSION
from perfkit.errors import BaselineError
from perfkit.results import inject, partial, runs

SaveMode = Literal["new", "force", "merge"]

#: Files whose directory is a project root: where ``baselines/`` belongs when there is none yet.
PROJECT_MARKERS = ("pytest.ini", "pyproject.toml")
BASELINES_DIR = "baselines"


def load_results(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate a result or baseline file; every failure is one BaselineError line."""
    path = Path(path)
    if path.name.endswith(partial.SUFFIX) and path.exists():
        results = partial.load(path)
        validate(results, str(path))
        return rename_legacy(results)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        unfinished = partial.path_for(path)
        if unfinished.exists():
            raise BaselineError(f"{path}: no such file: that run did not finish; {unfinished} holds the benchmarks "
                                "it finished: pass that file instead") from None
        raise BaselineError(f"{path}: no such file; run `pytest benches/ --benchmark-json={path}` first") from None
    except OSError as exc:
        raise BaselineError(f"{path}: cannot be read ({exc.strerror})") from None
    unfinished = partial.path_for(path)
    if not text.strip() and unfinished.exists():  # pytest-benchmark 5.2 creates the file when the run starts
        raise BaselineError(f"{path}: empty: that run did not finish; {unfinished} holds the benchmarks it "
                            "finished: pass that file instead")
    try:
        results = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(
            f"{path}: not valid JSON (line {exc.lineno}: {exc.msg}); restore it from git or re-run the benchmarks"
        ) from None
    validate(results, str(path))
    return rename_legacy(results)


#: Shares that files written before 2026-11-22 named ``pct_of_*`` though they hold fractions (2.3, not 230%).
RENAMED = {"pct_of_copy_peak": "share_of_copy_peak", "pct_of_peak": "share_of_peak",
           "pct_of_datasheet": "share_of_datasheet"}


def rename_legacy(results: dict[str, Any]) -> dict[str, Any]:
    """An older file's ``pct_of_*`` figures under the names of what they hold, everywhere a figure is keyed
    (each benchmark's metrics and absences, the stored runs and their spread), so old and new files compare."""
    def renamed(figures: Any) -> None:
        if isinstance(figures, dict):
            for old, new in RENAMED.items():
                if old in figures:
                    figures.setdefault(new, figures.pop(old))

    for bench in results.get("benchmarks", []):
        extra = bench.get("extra_info") or {}
        renamed(extra.get("metrics"))
        renamed(extra.get("metrics_absent"))
    info = (results.get("machine_info") or {}).get("perfkit") or {}
    for section in ("runs", "noise"):
        for figures in (info.get(section) or {}).values():
            renamed(figures)
    return results


def validate(results: Any, name: str) -> None:
    if not isinstance(results, dict) or not isinstance(results.get("benchmarks"), list):
        raise BaselineError(f"{name}: not a pytest-benchmark JSON (no 'benchmarks' list)")
    perfkit = (results.get("machine_info") or {}).get("perfkit")
    if not isinstance(perfkit, dict):
        raise BaselineError(f"{name}: has no perfkit section in machine_info; it was not written by a perfkit run")
    version = perfkit.get("schema_version")
    if version != SCHEMA_VERSION:
        raise BaselineError(
            f"{name}: perfkit schema {version!r}, this perfkit reads schema {SCHEMA_VERSION}; "
            "re-run the benchmarks with this version and save a new baseline"
        )
    for bench in results["benchmarks"]:
        if not isinstance(bench, dict) or "fullname" not in bench or "stats" not in bench:
            raise BaselineError(f"{name}: a benchmark entry lacks 'fullname' or 'stats'; the file is damaged")


def perfkit_info(results: Mapping[str, Any]) -> dict[str, Any]:
    return results["machine_info"]["perfkit"]


def hardware_id_of(results: Mapping[str, Any]) -> str:
    return str(perfkit_info(results).get("hardware_id", "unknown"))


def profile_of(results: Mapping[str, Any]) -> str:
    """The size profile a result file was measured in ("full", the course's sizes, or "quick")."""
    return str(perfkit_info(results).get("profile") or "full")


def baseline_path(directory: str | os.PathLike[str], hardware_id: str, profile: str = "full") -> Path:
    """``<hardware-id>.json`` for the course's sizes, ``<hardware-id>-quick.json`` for the quick profile: a run
    answers to a baseline of its own sizes."""
    return Path(directory) / f"{hardware_id}{'' if profile == 'full' else '-' + profile}.json"


def from_runs(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One baseline from several runs of the same hardware (each a fresh process; three or more).

    The last run is kept whole (so ``pytest-benchmark compare`` reads the file); every run's median of
    every figure goes into ``machine_info["perfkit"]["runs"]`` and their spread into ``["noise"]``.
    """
    if not results:
        raise BaselineError("no result files given; pass the JSON of each run")
    ids = {hardware_id_of(r) for r in results}
    if len(ids) > 1:
        raise BaselineError(f"the runs come from different hardware ({', '.join(sorted(ids))}); "
                            "a baseline holds runs of one hardware id")
    profiles = {profile_of(r) for r in results}
    if len(profiles) > 1:
        raise BaselineError(f"the runs mix the {' and '.join(sorted(profiles))} profiles' sizes; a baseline holds "
                            "runs of one profile")
    baseline = json.loads(json.dumps(results[-1]))
    latest = {b["fullname"]: b for r in results for b in r["benchmarks"]}  # a benchmark only earlier runs hold stays
    baseline["benchmarks"] = json.loads(json.dumps(list(latest.values())))
    measured = runs.combine(results)
    info = perfkit_info(baseline)
    info["runs"] = measured
    info["noise"] = runs.noise(measured)
    info["run_dates"] = [str(r.get("datetime", "")) for r in results]
    return baseline


def without_injected(results: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``results`` less the entries a testing aid slowed down (perfkit.results.inject), and their names."""
    injected = [b["fullname"] for b in results["benchmarks"] if "injected_slowdown" in (b.get("extra_info") or {})]
    kept = dict(results)
    kept["benchmarks"] = [b for b in results["benchmarks"] if b["fullname"] not in injected]
    return kept, injected


def merge(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """``new`` over ``old``: benchmarks of the same fullname are replaced, the rest kept.

    Ceilings measured only in the older run are kept too, so saving one family's results
    never drops another family's.
    """
    if hardware_id_of(old) != hardware_id_of(new):
        raise BaselineError(
            f"cannot merge results of {hardware_id_of(new)} into a baseline of {hardware_id_of(old)}"
        )
    if profile_of(old) != profile_of(new):
        raise BaselineError(f"cannot merge a run of the {profile_of(new)} profile into a baseline of the "
                            f"{profile_of(old)} profile")
    fresh = {b["fullname"] for b in new["benchmarks"]}
    merged = dict(new)
    merged["benchmarks"] = [b for b in old["benchmarks"] if b["fullname"] not in fresh] + list(new["benchmarks"])
    merged["machine_info"] = json.loads(json.dumps(new["machine_info"]))
    ceilings = dict(perfkit_info(old).get("ceilings", {}))
    ceilings.update(perfkit_info(new).get("ceilings", {}))
    merged["machine_info"]["perfkit"]["ceilings"] = ceilings
    kept = {name: figures for name, figures in runs.runs_of(old).items() if name not in fresh}
    merged_runs = kept | runs.runs_of(new)
    merged["machine_info"]["perfkit"]["runs"] = merged_runs
    merged["machine_info"]["perfkit"]["noise"] = runs.noise(merged_runs)
    return merged


def drop(baseline: Mapping[str, Any], names: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """``baseline`` less the benchmarks ``names`` give, and those dropped.

    For retiring an id that was renamed or removed on purpose: it would otherwise be listed as missing
    from every later run. Its stored runs and spread go with it. A name is a full name, where ``*`` and
    ``?`` are wildcards and brackets are literal (every parametrized id has them). A name that matches
    nothing is an error, so a typo never passes for a drop; so is dropping every benchmark.
    """
    present = [b["fullname"] for b in baseline["benchmarks"]]
    dropped: list[str] = []
    for name in names:
        found = [n for n in present if fnmatch.fnmatchcase(n, name.replace("[", "[[]"))]
        if not found:
            raise BaselineError(f"no benchmark of the baseline is named {name!r}; give a full name as the verdict "
                                "lists it (benches/<file>.py::<test>[<id>]), * and ? as wildcards")
        dropped += [n for n in found if n not in dropped]
    if len(dropped) == len(present):
        raise BaselineError("that would drop every benchmark of the baseline; delete the file instead")
    kept = json.loads(json.dumps(baseline))
    kept["benchmarks"] = [b for b in kept["benchmarks"] if b["fullname"] not in dropped]
    info = perfkit_info(kept)
    for section in ("runs", "noise"):
        if section in info:
            info[section] = {name: figures for name, figures in info[section].items() if name not in dropped}
    return kept, dropped


def save_baseline(results: Mapping[str, Any], directory: str | os.PathLike[str], mode: SaveMode = "new") -> Path:
    """Write ``baselines/<hardware-id>.json``; refuses to replace an existing one unless asked."""
    validate(results, "results")
    _, injected = without_injected(results)
    if injected:
        raise BaselineError(f"{len(injected)} benchmark(s) carry a slowdown injected by ${inject.ENV} (e.g. "
                            f"{injected[0]}); a baseline holds only real measurements: run again without it, or "
                            "save with `perfkit baseline save`, which leaves injected entries out")
    missing = [b["fullname"] for b in results["benchmarks"] if not b["stats"].get("data")]
    if missing:
        raise BaselineError(
            f"{len(missing)} benchmark(s) have no raw samples (e.g. {missing[0]}); "
            "save the file written by --benchmark-json, which keeps them"
        )
    target = baseline_path(directory, hardware_id_of(results), profile_of(results))
    if target.exists():
        if mode == "new":
            raise BaselineError(f"{target} exists; pass --force to replace it or --merge to update its benchmarks")
        if mode == "merge":
            results = merge(load_results(target), results)
    write_atomically(target, results)
    return target


def _read_umask() -> int:
    mask = os.umask(0)  # the only portable read sets it; done once, at import, before any thread starts
    os.umask(mask)
    return mask


#: New files get ``0o666 & ~UMASK``, as ``open`` would give them (mkstemp gives 0600).
UMASK = _read_umask()


def write_atomically(path: Path, data: Mapping[str, Any]) -> None:
    """Write to a temporary file beside ``path``, fsync, then rename: a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp makes it 0600: a shared baselines/ must stay readable, and a file's own mode is kept
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~UMASK)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class BaselineStore:
    """The baselines folder, one ``<hardware-id>.json`` per machine.

    The plugin and the CLI both find it with :meth:`find`, so a run from the project root and
    ``perfkit hw`` from a subfolder read the same files.
    """

    directory: Path

    @classmethod
    def find(cls, start: str | os.PathLike[str]) -> BaselineStore:
        """``<root>/baselines`` of the first directory from ``start`` up that holds ``baselines/``
        or a ``pytest.ini``/``pyproject.toml``; ``start/baselines`` when none does."""
        start = Path(start).resolve()
        for folder in (start, *start.parents):
            if (folder / BASELINES_DIR).is_dir() or any((folder / m).is_file() for m in PROJECT_MARKERS):
                return cls(folder / BASELINES_DIR)
        return cls(start / BASELINES_DIR)

    def path_for(self, hardware_id: str, profile: str = "full") -> Path:
        return baseline_path(self.directory, hardware_id, profile)

    def load(self, hardware_id: str, profile: str = "full") -> dict[str, Any] | None:
        """The stored baseline of ``hardware_id`` at ``profile``'s sizes, or None when there is none; a damaged one
        is a BaselineError."""
        path = self.path_for(hardware_id, profile)
        return load_results(path) if path.exists() else None

    def stored_path(self, hardware_id: str) -> Path:
        """The baseline of ``hardware_id`` that exists, the course's sizes first, else the quick profile's; the
        full profile's path when neither does."""
        paths = [self.path_for(hardware_id, profile) for profile in ("full", "quick")]
        return next((p for p in paths if p.exists()), paths[0])

    def ceilings(self, hardware_id: str) -> dict[str, float]:
        """The machine ceilings stored with a baseline of ``hardware_id`` (see :meth:`stored_path`; empty without one)."""
        path = self.stored_path(hardware_id)
        return dict(perfkit_info(load_results(path)).get("ceilings", {})) if path.exists() else {}

    def save(self, results: Mapping[str, Any], mode: SaveMode = "new") -> Path:
        """Store ``results`` as the baseline of its hardware (see :func:`save_baseline`)."""
        return save_baseline(results, self.directory, mode)
