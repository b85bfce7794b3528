"""Baselines: a result set kept per hardware id in ``baselines/``, built from runs, merged, written
atomically.

A baseline is exactly what ``pytest --benchmark-json`` wrote (raw samples kept), so
``pytest-benchmark compare`` reads it too. perfkit's part sits in ``machine_info["perfkit"]``:
``schema_version``, ``hardware_id``, the fingerprint, the ceilings measured in the run, and for a
baseline of several runs each run's figures and their spread (perfkit.resultfile.run_spread).
"""
from __future__ import annotations

import json
import os
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from perfkit.errors import BaselineError
from perfkit.explain import record as kernel_summary
from perfkit.resultfile import derived, inject, load, run_spread
from perfkit.resultfile.ceilings import Ceilings
from perfkit.resultfile.model import (
    BenchmarkEntry,
    ProfileName,
    ResultSet,
    RunOrigin,
    machine_change,
    name_matches,
    run_count,
)
from perfkit.verdict import expected, unsettled_rounds
from perfkit.verdict.judge import MIN_BASELINE_RUNS, counted

SaveMode = Literal["new", "force", "merge", "append"]

#: Files whose directory is a project root: where ``baselines/`` belongs when there is none yet.
PROJECT_MARKERS = ("pytest.ini", "pyproject.toml")
BASELINES_DIR = "baselines"
#: This checkout's own folder beside ``baselines/``, never committed: where a machine's own baseline lives.
LOCAL_DIR = ".perfkit"
#: ``--perfkit-save-baseline=local``: save a run, with fresh re-runs, as this machine's own baseline.
LOCAL_SAVE = "local"
#: The profile whose baseline speaks for a machine where both are stored: the course's sizes, then the quick.
STORED_FIRST: tuple[ProfileName, ...] = ("full", "quick")


def how_to_save_local(selection: Sequence[str] = ("benches/",), quiet: bool = False) -> str:
    """How this machine gets a baseline where it has none: the command to run once (``quiet``: on a quiet
    host) and what it saves; one wording for the end of a run and a dashboard page without one."""
    command = shlex.join(["pytest", *selection, f"--perfkit-save-baseline={LOCAL_SAVE}"])
    quietly = " on a quiet host" if quiet else ""
    return (f"To judge later runs against this machine, run `{command}` once{quietly}: it saves this run and "
            f"{MIN_BASELINE_RUNS - 1} re-runs in fresh processes as this machine's own baseline in "
            f"{LOCAL_DIR}/{BASELINES_DIR}/ (not committed)")


def baseline_path(directory: str | os.PathLike[str], hardware_id: str, profile: ProfileName = "full") -> Path:
    """``<hardware-id>.json`` for the course's sizes, ``<hardware-id>-quick.json`` for the quick profile: a
    run answers to a baseline of its own sizes."""
    return Path(directory) / f"{hardware_id}{'' if profile == 'full' else '-' + profile}.json"


def from_runs(results: Sequence[ResultSet]) -> ResultSet:
    """One baseline from several runs of the same hardware (each a fresh process; three or more).

    The newest entry of each benchmark is kept whole (so ``pytest-benchmark compare`` reads the file), with
    the median kernel summary of the runs that made one (perfkit.explain.record); every
    run's value of every figure goes into ``machine_info["perfkit"]["runs"]`` and their spread into
    ``["noise"]``. Only the runs that measured a benchmark as its newest run did go in (every figure by the
    same method version, perfkit.resultfile.figures.METHODS, at the same SM clock lock): runs measured
    another way are another series, whose values would make the spread of neither, and the entry's version
    and clock are those of every run it keeps.
    """
    if not results:
        raise BaselineError("no result files given; pass the JSON of each run")
    ids = {r.hardware_id for r in results}
    if len(ids) > 1:
        raise BaselineError(f"the runs come from different hardware ({', '.join(sorted(ids))}); "
                            "a baseline holds runs of one hardware id")
    profiles = {r.profile for r in results}
    if len(profiles) > 1:
        raise BaselineError(
            f"the runs mix the {' and '.join(sorted(profiles))} profiles' sizes; a baseline holds "
            "runs of one profile"
        )
    # a benchmark only earlier runs hold stays
    latest = {b.fullname: b for r in results for b in r.benchmarks}
    results = [kept for r in results
               if (kept := r.with_benchmarks([b for b in r.benchmarks if _same_series(b, latest[b.fullname])
                                              ])).benchmarks]
    measured = run_spread.combine(results)
    dates = [d for r in results for d in (r.dates() or (r.datetime,))]
    machines = [m for r in results for m in (r.info.run_machines or (r.info.machine or "",))]
    origins: dict[str, tuple[RunOrigin, ...]] = {}
    positions: dict[str, dict[str, tuple[int, ...]]] = {}
    for one in results:
        for bench in one.benchmarks:
            held, offset = positions.setdefault(bench.fullname, {}), len(origins.get(bench.fullname, ()))
            for figure, at in one.figure_positions(bench).items():
                held[figure] = held.get(figure, ()) + tuple(offset + i for i in at)
        for name, runs_of in one.origins().items():
            origins[name] = origins.get(name, ()) + runs_of
    by_run = [r.by_name() for r in results]
    summarised = [kernel_summary.with_median(entry, [run[name] for run in by_run if name in run])
                  for name, entry in latest.items()]
    combined = results[-1].with_benchmarks([expected.compacted(entry) for entry in summarised]).with_info(
        runs=measured, noise=run_spread.noise(measured), run_dates=tuple(dates),
        run_machines=tuple(machines) if all(machines) and len(machines) == len(dates) else (),
        run_origins=origins, figure_runs=_partial_figures(positions, origins))
    return derived.derive(combined)


def _same_series(bench: BenchmarkEntry, newest: BenchmarkEntry) -> bool:
    """Whether a run's entry measured its figures as the newest did: by the same method versions, at the same
    SM clock (a run timed unlocked and one locked at base clock are not one series)."""
    return bench.methods == newest.methods and bench.clock_lock == newest.clock_lock


def _partial_figures(positions: Mapping[str, Mapping[str, tuple[int, ...]]],
                     origins: Mapping[str, tuple[RunOrigin, ...]]) -> dict[str, dict[str, tuple[int, ...]]]:
    """The runs of each figure that fewer of its benchmark's runs hold (PerfkitInfo.figure_runs)."""
    out: dict[str, dict[str, tuple[int, ...]]] = {}
    for name, figures in positions.items():
        count = len(origins[name])
        partial = {figure: runs_of for figure, runs_of in figures.items() if len(runs_of) != count}
        if partial:
            out[name] = partial
    return out


def without_injected(results: ResultSet) -> tuple[ResultSet, list[str]]:
    """``results`` less the entries a testing aid slowed down (perfkit.resultfile.inject), and their names."""
    injected = [b.fullname for b in results.benchmarks if b.injected is not None]
    return results.with_benchmarks([b for b in results.benchmarks if b.injected is None]), injected


def without_unsettled(joined: ResultSet, run: ResultSet) -> tuple[ResultSet, list[str]]:
    """``run`` less the benchmarks a gating figure of which did not settle against ``joined``'s entry of the
    same name (perfkit.verdict.unsettled_rounds.unsettled_gate: the spreads of the judge's rule for a
    disturbed single run, without its pace condition), whichever way it moved, and one line per benchmark
    left out. Appended, such a run widens every later verdict's noise:
    one H200 nightly's one-GPU DDP ResNet-50 step, its rounds 33.0-46.1 ms on a host whose own copy read
    13.6% slow (the step alone 31.9 ms there as everywhere), made that entry's one-run MDE 20% where it was
    17%."""
    old, runs = joined.by_name(), run.runs()
    left_out: dict[str, str] = {}
    for bench in run.benchmarks:
        base = old.get(bench.fullname)
        if base is None:
            continue
        found = unsettled_rounds.unsettled_gate(base, bench, runs[bench.fullname])
        if found is not None:
            left_out[bench.fullname] = found.kept_out()
    kept = keeping(run, {b.fullname for b in run.benchmarks} - left_out.keys())
    return kept, [f"{name}: {why}" for name, why in left_out.items()]


def appended_said(appended: Sequence[ResultSet], held: Sequence[int]) -> str:
    """What an append added to a baseline, e.g. "2 runs appended: 60 benchmarks, now 5-203 runs each": the
    runs and the benchmarks they joined, and how many runs those hold now (``held``, :func:`held_runs`: their
    noise is read from them)."""
    names = {b.fullname for run in appended for b in run.benchmarks}
    return (f"{counted(runs_in(appended), 'run')} appended: {counted(len(names), 'benchmark')}, now "
            f"{held_said(held)}")


def held_runs(store: BaselineStore, saved_from: Sequence[ResultSet]) -> list[int]:
    """How many runs each benchmark of ``saved_from`` holds in ``store``'s baseline of their hardware, as
    saved (the judge reads a figure's noise, and whether it is judged at all, from these), fewest first."""
    saved = store.load(saved_from[0].hardware_id, saved_from[0].profile)
    names = {b.fullname for run in saved_from for b in run.benchmarks}
    return sorted(run_count(figures) for name, figures in (saved.runs() if saved else {}).items()
                  if name in names)


def held_said(held: Sequence[int]) -> str:
    """``held`` (runs per benchmark, fewest first) in words: "3 runs", or "3-75 runs each" where they
    differ."""
    if not held:
        return "0 runs"
    return counted(held[0], "run") if held[0] == held[-1] else f"{held[0]}-{held[-1]} runs each"


@dataclass(frozen=True)
class Held:
    """What a baseline file holds (:func:`held_in`): its benchmarks, the runs each holds (fewest first), the
    machines those runs came from (0 where none is recorded), their dates (``YYYY-MM-DD``, oldest first)."""

    benchmarks: int
    runs: tuple[int, ...]
    machines: int
    dates: tuple[str, ...]


def held_in(results: ResultSet) -> Held:
    """What ``results`` holds, by its runs' origins: one count for ``perfkit baseline list`` and the docs'
    table of the committed baselines (perfkit.docnumbers)."""
    origins = results.origins()
    runs = sorted(len(origins.get(b.fullname, ())) or 1 for b in results.benchmarks)
    machines = {o.machine for runs_of in origins.values() for o in runs_of if o.machine}
    dates = sorted(o.date[:10] for runs_of in origins.values() for o in runs_of if o.date)
    return Held(len(results.benchmarks), tuple(runs), len(machines), tuple(dates))


def runs_in(files: Sequence[ResultSet]) -> int:
    """How many runs ``files`` hold: a baseline file its runs' dates, a run (or a file without dates) one."""
    return sum(max(1, len(results.dates())) for results in files)


def unsettled_lines(source: str, left_out: Sequence[str], local: bool = False) -> list[str]:
    """What to say of the benchmarks :func:`without_unsettled` left out of ``source`` (appended to this
    machine's own baseline where ``local``): nothing where none."""
    if not left_out:
        return []
    where = " --local" if local else ""
    said = (f"perfkit: left out {len(left_out)} benchmark(s) of {source} whose rounds did not settle against "
            "the baseline they were to join (a disturbed run); if the code runs so now, save three runs of "
            f"it with `perfkit baseline save{where} --merge --only NAME -- RUN.json ...`, which replaces "
            "that entry's runs:")
    return [said, *(f"  {line}" for line in left_out)]


def busy_warning(results: ResultSet) -> str:
    """One sentence where ``results`` were recorded on a busy host (ResultSet.busy_host), "" otherwise: such a
    baseline is saved, not refused (a shared machine may never be quiet), but it holds the neighbour's load,
    so every quiet run after it reads faster and a real slowdown hides under the difference."""
    busy = results.busy_host()
    if not busy:
        return ""
    return (f"warning: {results.source or 'the run'}: {busy}, so the baseline holds that load and quiet runs "
            "will read faster; for a quiet one, re-run with nothing else running (the load in `uptime` near "
            "0) and save that run instead")


def merge(old: ResultSet, new: ResultSet) -> ResultSet:
    """``new`` over ``old``: benchmarks of the same fullname are replaced, the rest kept with their stored
    runs.

    Ceilings measured only in the older run are kept too, so saving one family's results never drops another
    family's; so are the wall times of the families the new run did not time.
    """
    if old.hardware_id != new.hardware_id:
        raise BaselineError(f"cannot merge results of {new.hardware_id} into a baseline of {old.hardware_id}")
    if old.profile != new.profile:
        raise BaselineError(f"cannot merge a run of the {new.profile} profile into a baseline of the "
                            f"{old.profile} profile")
    fresh = {b.fullname for b in new.benchmarks}
    kept_runs = {name: figures for name, figures in old.runs().items() if name not in fresh}
    merged_runs = kept_runs | new.runs()
    origins = {name: m for name, m in old.origins().items() if name not in fresh} | new.origins()
    merged = new.with_benchmarks(
        [b for b in old.benchmarks if b.fullname not in fresh] + list(new.benchmarks)
    ).with_info(
        ceilings={**old.info.ceilings, **new.info.ceilings},
        family_wall_s={**old.info.family_wall_s, **new.info.family_wall_s},
        runs=merged_runs,
        noise=run_spread.noise(merged_runs),
        run_machines=(),  # each entry's machines are in its origins
        run_origins=origins,
        figure_runs={n: f for n, f in old.info.figure_runs.items() if n not in fresh}
        | dict(new.info.figure_runs),
    )
    return derived.derive(merged.with_info(run_dates=merged.dates()))


def append(old: ResultSet, new: ResultSet) -> ResultSet:
    """``new``'s runs added to ``old``'s: a benchmark both hold keeps every run of both (more runs, more
    degrees of freedom for its noise, perfkit.verdict.noise), its entry taken from ``new``; the rest kept as
    they are. A run the baseline already holds (same date) is refused: counted twice it would shrink the
    noise it is meant to measure. The check is per benchmark: one run re-saved for a few benchmarks (``--merge
    --only``) can still be appended for the others."""
    held = {name: {o.date for o in origins} for name, origins in old.origins().items()}
    again = sorted({o.date for name, origins in new.origins().items() for o in origins
                    if o.date and o.date in held.get(name, set())})
    if again:
        raise BaselineError(f"the baseline already holds the run of {again[0]}; append only new runs")
    combined = from_runs([old, new])
    return derived.derive(combined.with_info(ceilings={**old.info.ceilings, **combined.info.ceilings}))


def drop(baseline: ResultSet, names: Sequence[str]) -> tuple[ResultSet, list[str]]:
    """``baseline`` less the benchmarks ``names`` give, and those dropped.

    For retiring an id that was renamed or removed on purpose: it would otherwise be listed as missing
    from every later run. Its stored runs and spread go with it. A name is a full name, where ``*`` and
    ``?`` are wildcards and brackets are literal (every parametrized id has them). A name that matches
    nothing is an error, so a typo never passes for a drop; so is dropping every benchmark.
    """
    present = [b.fullname for b in baseline.benchmarks]
    dropped = _named(present, names, "the baseline")
    if len(dropped) == len(present):
        raise BaselineError("that would drop every benchmark of the baseline; delete the file instead")
    return keeping(baseline, set(present) - set(dropped)), dropped


def select(results: ResultSet, names: Sequence[str]) -> ResultSet:
    """``results`` with only the benchmarks ``names`` give (full names, ``*`` and ``?`` as wildcards), with
    their runs: to re-save the family whose measurement changed and keep every other entry of a baseline
    (``baseline save --merge --only``). A name that matches nothing is an error."""
    return keeping(results, set(_named([b.fullname for b in results.benchmarks], names, results.source)))


def _named(present: Sequence[str], names: Sequence[str], where: str) -> list[str]:
    """The full names in ``present`` that ``names`` give, in order; brackets are literal (every
    parametrized id has them)."""
    found: list[str] = []
    for name in names:
        matched = [n for n in present if name_matches(n, name)]
        if not matched:
            raise BaselineError(
                f"no benchmark of {where} is named {name!r}; give a full name as the verdict "
                "lists it (benches/<file>.py::<test>[<id>]), * and ? as wildcards"
            )
        found += [n for n in matched if n not in found]
    return found


def keeping(results: ResultSet, names: set[str]) -> ResultSet:
    """``results`` with only the benchmarks of these exact full names, and their runs."""
    info = results.info
    return results.with_benchmarks([b for b in results.benchmarks if b.fullname in names]).with_info(
        runs={n: f for n, f in info.runs.items() if n in names},
        noise={n: f for n, f in info.noise.items() if n in names},
        run_origins={n: m for n, m in info.run_origins.items() if n in names},
        figure_runs={n: f for n, f in info.figure_runs.items() if n in names})


def save_baseline(results: ResultSet, directory: str | os.PathLike[str], mode: SaveMode = "new") -> Path:
    """Write ``baselines/<hardware-id>.json``; refuses to replace an existing one unless asked."""
    _, injected = without_injected(results)
    if injected:
        raise BaselineError(
            f"{len(injected)} benchmark(s) carry a slowdown injected by ${inject.ENV} (e.g. "
            f"{injected[0]}); a baseline holds only real measurements: run again without it, or "
            "save with `perfkit baseline save`, which leaves injected entries out"
        )
    bare = [b.fullname for b in results.benchmarks if not b.samples]
    if bare:
        raise BaselineError(
            f"{len(bare)} benchmark(s) have no raw samples (e.g. {bare[0]}); "
            "save the file written by --benchmark-json, which keeps them"
        )
    target = baseline_path(directory, results.hardware_id, results.profile)
    if target.exists():
        if mode == "new":
            raise BaselineError(
                f"{target} exists; pass --force to replace it, --merge to update its benchmarks or "
                "--append to add runs to them"
            )
        if mode == "merge":
            results = merge(load.load(target), results)
        elif mode == "append":
            results = append(load.load(target), results)
    write_atomically(target, results)
    return target


def _read_umask() -> int:
    mask = os.umask(0)  # the only portable read sets it; done once, at import, before any thread starts
    os.umask(mask)
    return mask


#: New files get ``0o666 & ~UMASK``, as ``open`` would give them (mkstemp gives 0600).
UMASK = _read_umask()


def write_atomically(path: Path, results: ResultSet) -> None:
    """Write ``results`` as :func:`write_json_atomically` does: a crash never leaves half a baseline."""
    write_json_atomically(path, results.to_json())


def write_json_atomically(path: Path, data: Mapping[str, Any]) -> None:
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
class StoredCeilings:
    """The stored ceilings that speak for a machine (BaselineStore.machine_ceilings), with whose they are:
    ``local``, its own baseline's; ``change``, what tells the baseline's machine from it where the committed
    baseline is of another machine under its hardware id (model.machine_change); neither, its hardware's."""

    path: Path
    ceilings: Ceilings
    local: bool = False
    change: str = ""
    found: bool = True  # False: no baseline of the hardware is stored; ``path`` is where one would be

    @property
    def whose(self) -> str:
        """Whose ceilings they are, in words: a baseline machine's 39 GB/s copy is not this machine's 3.6."""
        if not self.found:
            return "no one: no baseline of this hardware is stored"
        if self.local:
            return "this machine (its own baseline)"
        if self.change:
            return f"ANOTHER machine under this hardware id ({self.change}), not this one"
        return "this hardware (the committed baseline)"


@dataclass(frozen=True)
class BaselineStore:
    """The baselines folder, one ``<hardware-id>.json`` per machine.

    The plugin and the CLI both find it with :meth:`find`, so a run from the project root and
    ``perfkit hw`` from a subfolder read the same files. ``is_local``: this is the folder of a machine's own
    baselines (:attr:`local`), kept out of git.
    """

    directory: Path
    is_local: bool = False

    @classmethod
    def find(cls, start: str | os.PathLike[str]) -> BaselineStore:
        """``<root>/baselines`` of the first directory from ``start`` up that holds ``baselines/``
        or a ``pytest.ini``/``pyproject.toml``; ``start/baselines`` when none does."""
        start = Path(start).resolve()
        for folder in (start, *start.parents):
            if (folder / BASELINES_DIR).is_dir() or any((folder / m).is_file() for m in PROJECT_MARKERS):
                return cls(folder / BASELINES_DIR)
        return cls(start / BASELINES_DIR)

    @property
    def local(self) -> BaselineStore:
        """This machine's own baselines, ``.perfkit/baselines/`` beside ``baselines/``: a CPU model other than
        the committed baseline's (a laptop, another cloud generation) is never judged against that one, so
        it gets verdicts against a baseline of its own, which is no other machine's business to commit."""
        return BaselineStore(self.directory.parent / LOCAL_DIR / BASELINES_DIR, is_local=True)

    def path_for(self, hardware_id: str, profile: ProfileName = "full") -> Path:
        return baseline_path(self.directory, hardware_id, profile)

    def load(self, hardware_id: str, profile: ProfileName = "full") -> ResultSet | None:
        """The stored baseline of ``hardware_id`` at ``profile``'s sizes, or None when there is none; a
        damaged one is a BaselineError."""
        path = self.path_for(hardware_id, profile)
        return load.load(path) if path.exists() else None

    def stored_path(self, hardware_id: str) -> Path:
        """The baseline of ``hardware_id`` that exists, the course's sizes first, else the quick profile's;
        the full profile's path when neither does."""
        paths = [self.path_for(hardware_id, profile) for profile in STORED_FIRST]
        return next((p for p in paths if p.exists()), paths[0])

    def ceilings(self, hardware_id: str) -> Ceilings:
        """The machine ceilings of the stored baseline of ``hardware_id`` (see :meth:`stored_path`; none
        without one)."""
        path = self.stored_path(hardware_id)
        return Ceilings.of(load.load(path)) if path.exists() else Ceilings({})

    def machine_ceilings(self, hardware_id: str, kind: str) -> StoredCeilings:
        """The stored ceilings that speak for a machine of ``kind`` (model.machine_kind) under
        ``hardware_id``: its own baseline's (:attr:`local`, as a run picks its baseline) where one of its
        kind is saved, else the committed baseline's, said to be another machine's where it is; none stored
        without either."""
        for store in (self.local, self):
            path = store.stored_path(hardware_id)
            if path.exists():
                results = load.load(path)
                change = machine_change(results.info.machine_kind, kind)
                if store is self or not change:
                    return StoredCeilings(path, Ceilings.of(results), store.is_local, change)
        return StoredCeilings(self.stored_path(hardware_id), Ceilings({}), found=False)

    def save(self, results: ResultSet, mode: SaveMode = "new") -> Path:
        """Store ``results`` as the baseline of its hardware (see :func:`save_baseline`); the local folder
        ignores itself in git, as ``.pytest_cache`` does, so no ``git add .`` commits a machine's own."""
        if self.is_local:
            ignore = self.directory.parent / ".gitignore"
            ignore.parent.mkdir(parents=True, exist_ok=True)
            if not ignore.exists():
                ignore.write_text("# this machine's own baselines (perfkit): never committed\n*\n",
                                  encoding="utf-8")
        return save_baseline(results, self.directory, mode)

    def replace(self, results: ResultSet) -> tuple[Path, Path | None]:
        """Store ``results`` in place of the baseline of its hardware and profile, the replaced file kept
        beside it as ``<name>.previous`` (a machine's own baseline is re-saved as a new sitting, and nothing
        its earlier runs measured is lost); the path saved, and the earlier file's copy or None."""
        target = self.path_for(results.hardware_id, results.profile)
        earlier = target.read_bytes() if target.exists() else None
        path = self.save(results, "force")  # a save refused leaves the earlier file and its copy as they were
        if earlier is None:
            return path, None
        kept = target.with_name(target.name + ".previous")
        kept.write_bytes(earlier)
        return path, kept
