"""One run of the suite as an object: what it measures on, which baseline it answers to, its verdict.

The pytest plugin parses its options once (perfkit.options.RunOptions) and builds a whole
:class:`Session` from them with :meth:`Session.start`; everything a run decides (which tests the
machine cannot run, which baseline applies and whether it is of this hardware, the end-of-run
verdict, the exit status, saving) is here, so it can be built from plain values and tested without
pytest.
"""
from __future__ import annotations

import contextlib
import dataclasses
import enum
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfkit import SCHEMA_VERSION, confirm, predict, quick_budget, wall_clock
from perfkit.errors import BaselineError, PerfkitError
from perfkit.explain import record as kernel_summary
from perfkit.measure import clocks
from perfkit.options import RunOptions
from perfkit.render import verdicts
from perfkit.resultfile import inject, load, partial
from perfkit.resultfile.fingerprint import device_kind
from perfkit.resultfile.model import PerfkitInfo, ResultSet, family_of
from perfkit.resultfile.partial import PartialFile
from perfkit.resultfile.payloads import HostLoad
from perfkit.settings import Settings
from perfkit.store import baselines, kept_noise
from perfkit.store.baselines import BaselineStore
from perfkit.verdict.judge import MIN_BASELINE_RUNS, Comparison, FirstLook, Policy, judge
from perfkit.workloads.benchwork import with_work, work_of


class Outcome(enum.Enum):
    """What the end of a run means for its exit status (the plugin maps it to pytest's codes)."""

    OK = "ok"  # leave the exit status as the tests made it
    REGRESSED = "regressed"  # a significant regression, and the run was asked to fail on one
    NOT_SAVED = "not_saved"  # the baseline asked for could not be saved: a usage error
    INTERRUPTED = "interrupted"  # Ctrl-C or a deadline's SIGINT stopped the run or its confirmation


@dataclass
class Session:
    """A run's baseline policy and verdict, on top of its :class:`Settings`.

    ``options.baseline`` is ``"auto"`` (the store's file for this hardware, if there is one), ``"none"``,
    or a path. The baseline is loaded and checked when the session is made, so a corrupt one or
    one of other hardware stops the run before anything is measured.
    """

    settings: Settings
    store: BaselineStore
    options: RunOptions = field(default_factory=RunOptions)
    #: Fresh-process runs of the named benchmarks, ``times`` each, their files kept beside the run's JSON
    #: under the label given (confirm.kept_as), or not kept where None (confirm.rerun; a test may stand in).
    rerun: Callable[[list[str], int, str | None], list[ResultSet]] | None = None
    #: One more fresh-process run of the named benchmarks with --perfkit-explain, never judged: the kernel
    #: summaries a confirmation's verdicts are read with (a profiler in a judged run could slow what follows)
    explain_rerun: Callable[[list[str]], ResultSet] | None = None
    baseline_path: Path | None = field(init=False, default=None)
    baseline: ResultSet | None = field(init=False, default=None)
    comparison: Comparison | None = field(init=False, default=None)
    messages: list[str] = field(init=False, default_factory=list)
    partial: PartialFile | None = field(init=False, default=None)
    family_seconds: dict[str, float] = field(init=False, default_factory=dict)
    bench_seconds: dict[str, float] = field(init=False, default_factory=dict)  # benches/ only: the budget's
    held: contextlib.ExitStack = field(init=False, default_factory=contextlib.ExitStack)  # what begin() took
    skipped: dict[str, int] = field(init=False, default_factory=dict)  # reason -> how many tests
    started: float = field(init=False, default_factory=wall_clock.process_started)
    rerun_seconds: dict[str, float] = field(init=False, default_factory=dict)  # fresh processes, by purpose
    run_clock: str | None = field(init=False, default=None)  # the whole run's locked clock, if locked
    hint: str = field(init=False, default="")  # a run without verdicts: the line that says how to get them
    # the run read once (see derive): each JSON read, by what it says, its result set, and the last read
    derived: dict[tuple[Any, ...], ResultSet] = field(init=False, default_factory=dict)
    last_derived: ResultSet | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.baseline_path, self.baseline = self._load_baseline()
        if self.options.results_path is not None:
            self.partial = PartialFile.beside(self.options.results_path)

    @classmethod
    def start(cls, options: RunOptions, root: str | Path) -> Session:
        """The whole session of a run on this machine, with the baselines folder found from ``root`` up and
        confirmation re-runs in fresh processes from ``root``."""
        settings = Settings.detect(options.device, options.profile, options.torchrun_args, options.memory_cap)
        args = options.rerun_args(settings.device.type, settings.profile.name)

        def rerun(nodeids: list[str], times: int, label: str | None) -> list[ResultSet]:
            return confirm.rerun(nodeids, times, args, Path(root), options.rerun_timeout_s(len(nodeids)),
                                 options.results_path, label)

        def explain_rerun(nodeids: list[str]) -> ResultSet:
            return confirm.rerun(nodeids, 1, [*args, "--perfkit-explain"], Path(root),
                                 options.rerun_timeout_s(len(nodeids)), options.results_path,
                                 confirm.EXPLAIN_LABEL)[0]

        return cls(settings, BaselineStore.find(root), options, rerun, explain_rerun)

    @property
    def results_path(self) -> Path | None:
        return self.options.results_path

    def begin(self) -> None:
        """Where the run starts: the memory cap takes hold, and the GPUs' clocks are locked if asked."""
        self.settings.apply_memory_cap()
        if self.options.lock_clocks in clocks.RATES and self.settings.gpus:
            lock = self.held.enter_context(clocks.locked(len(self.settings.gpus), self.options.lock_clocks))
            self.messages.append(f"perfkit: {lock.said}")
            if lock.sm_clock is not None:  # the results say the clock they were measured at
                self.run_clock = lock.sm_clock
                fingerprint = dataclasses.replace(self.settings.fingerprint, sm_clock=lock.sm_clock)
                self.settings = dataclasses.replace(self.settings, fingerprint=fingerprint)

    def clock_for(self, nodeid: str, kernel: bool) -> contextlib.AbstractContextManager[str | None]:
        """The SM clock benchmark ``nodeid`` is timed at, held for the block; yields it as its result records
        it (None: the GPU chose).

        A whole-run lock holds for every benchmark. A ``kernel`` benchmark is locked at the base clock for its
        own run by default: unlocked, a tensor-core GEMM runs at whatever clock its power allows (tf32 spread
        2.5% between runs on an H100, 0.6% locked). Not where its baseline entry was timed unlocked: the two
        would differ by the clock, not the code (the judge would call it unknown), so it is timed as its
        baseline was until that entry is re-saved from a locked run."""
        if self.run_clock is not None:
            return contextlib.nullcontext(self.run_clock)
        if not (kernel and self.options.lock_clocks == clocks.KERNELS and self.settings.gpus):
            return contextlib.nullcontext(None)
        entry = self.baseline.by_name().get(nodeid) if self.baseline is not None else None
        if entry is not None and entry.clock_lock is None:
            self.say_once("perfkit: kernel benchmarks whose baseline entries were timed unlocked ran "
                          "unlocked too; to time them at the base clock, run them with "
                          "--perfkit-baseline=none and re-save their entries (perfkit baseline save "
                          "RUN.json --merge --only ...)")
            return contextlib.nullcontext(None)
        return self._kernel_lock()

    @contextlib.contextmanager
    def _kernel_lock(self) -> Iterator[str | None]:
        with clocks.locked(len(self.settings.gpus), "base") as lock:
            if lock.sm_clock is None:
                self.say_once(f"perfkit: kernel benchmarks: {lock.said}")
            yield lock.sm_clock

    def say_once(self, message: str) -> None:
        """A line for the end of the run, once however often it is said."""
        if message not in self.messages:
            self.messages.append(message)

    def end(self) -> None:
        """Where the run ends: what :meth:`begin` took is given back (a locked clock is reset)."""
        self.held.close()

    def _load_baseline(self) -> tuple[Path | None, ResultSet | None]:
        choice = self.options.baseline
        if choice == "none":
            return None, None
        if choice == "auto":
            return self._auto_baseline()
        path = Path(choice)
        if not path.exists():
            raise BaselineError(
                f"baseline {path}: no such file; give the path of a saved baseline (they are in "
                f"{self.store.directory}), or leave --perfkit-baseline out to use this machine's"
            )
        return path, self._checked(path)

    def _auto_baseline(self) -> tuple[Path | None, ResultSet | None]:
        """This machine's own baseline (BaselineStore.local) where one of its machine is saved, else the
        committed one of its hardware id where there is one: a machine that has its own is judged against it,
        one of another CPU under the id only compared with the committed one."""
        hardware_id, profile = self.settings.hardware_id, self.settings.profile.name
        own = self.store.local.path_for(hardware_id, profile)
        if own.exists():
            loaded = self._checked(own)
            if not loaded.info.machine_change(self._info()):  # a checkout shared with another machine's
                return own, loaded
        committed = self.store.path_for(hardware_id, profile)
        return (committed, self._checked(committed)) if committed.exists() else (None, None)

    def _checked(self, path: Path) -> ResultSet:
        """The baseline at ``path``, refused where it is of other hardware or another profile's sizes."""
        hardware_id, profile = self.settings.hardware_id, self.settings.profile.name
        loaded = load.load(path)
        if loaded.hardware_id != hardware_id:
            # across hardware the two sides must hold one profile's sizes: name the baseline that does
            beside = baselines.baseline_path(path.parent, loaded.hardware_id, profile)
            found = [path] if loaded.profile == profile else [
                p for p in (beside, self.store.path_for(loaded.hardware_id, profile)) if p.exists()]
            results = self.options.results_path or "RESULTS.json"
            where = _in_neither(path.parent, self.store.directory)
            across = (f"compare across hardware afterwards with `perfkit compare {found[0]} {results}`"
                      if found else
                      f"across hardware, compare with a baseline of {loaded.hardware_id} of the {profile} "
                      f"profile's sizes ({beside.name}), which is {where}")
            raise BaselineError(f"baseline {path} is from {loaded.hardware_id}, this run is {hardware_id}; "
                                f"{across}")
        if loaded.profile != profile:
            raise BaselineError(f"baseline {path} holds the {loaded.profile} profile's sizes, this run the "
                                f"{profile} profile's; give a baseline of the same profile")
        return loaded

    def machine_info(self) -> dict[str, Any]:
        """perfkit's section of the run's ``machine_info``; ceilings are filled by the derived pass."""
        info = dataclasses.replace(self._info(), family_wall_s=dict(self.family_seconds),
                                   raw={"wall_s": time.monotonic() - self.started})
        return info.to_json()

    def _info(self) -> PerfkitInfo:
        return PerfkitInfo(SCHEMA_VERSION, self.settings.hardware_id, device_kind(self.settings.device.type),
                           self.settings.profile.name, self.settings.fingerprint)

    def header_lines(self) -> list[str]:
        """What the run says before its first test: that its baseline comes from a different machine under
        this hardware id, so the run will be compared with it across hardware, not judged (said at the end
        too)."""
        change = self.baseline.info.machine_change(self._info()) if self.baseline is not None else ""
        if not change:
            return []
        said = (f"perfkit: baseline {self.baseline_path} is of a DIFFERENT machine under this hardware "
                f"id ({change}): this run will be compared with it, not judged; its end says how to "
                "get verdicts")
        return [said]

    def keep_finished(self, benchmarks: list[dict[str, Any]], header: Callable[[], dict[str, Any]]) -> None:
        """Append benchmarks that just finished to the partial results file, if the run writes one."""
        if self.partial is not None:
            for bench in benchmarks:
                inject.apply(bench)
                self.partial.append(bench, header)

    def add_skip(self, reason: str) -> None:
        """Count a skipped test under its reason (the end of the run lists the reasons without ``-rs``)."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def add_wall_time(self, nodeid: str, seconds: float) -> None:
        """Charge a test phase's wall time to its family (the bench file)."""
        family = family_of(nodeid)
        self.family_seconds[family] = self.family_seconds.get(family, 0.0) + seconds
        if nodeid.startswith(quick_budget.BENCH_DIR):
            self.bench_seconds[family] = self.bench_seconds.get(family, 0.0) + seconds

    def budget_line(self) -> str | None:
        """One line naming the bench families of a quick run that took longer than perfkit.quick_budget
        allows on a quiet 2-core CPU (none in the full profile, whose sizes are the course's); on a host the
        run found busy (ResultSet.busy_host, as the summary's other lines), the likely reason, said so."""
        over = quick_budget.over_budget(self.bench_seconds) if self.settings.profile.name == "quick" else []
        if not over:
            return None
        results, base = self.results(), self.baseline
        busy, change, disturbed = "", "", set[str]()
        if results is not None:
            disturbed = {family_of(b.fullname) for b, load in results.family(HostLoad) if load.disturbed}
            busy = results.busy_host()
            if base is not None and base.hardware_id == results.hardware_id:
                change = base.info.machine_change(results.info)
        why = quick_budget.likely_reason(quick_budget.families_over(self.bench_seconds), disturbed, busy,
                                         change)
        return f"perfkit: over the quick profile's budget for a quiet 2-core CPU: {', '.join(over)}; {why}"

    def weekly_skipped(self, markexpr: str) -> bool:
        """Whether benchmarks marked ``weekly`` stay out of this run: the nightly selection is the default
        in the full profile; any ``-m`` expression (``-m weekly``, ``-m "weekly or not weekly"``) decides
        instead."""
        return self.settings.profile.name == "full" and not markexpr

    def derive(self, raw: Mapping[str, Any]) -> ResultSet:
        """The run's JSON as perfkit reads it (perfkit.resultfile.load.parse), the baseline lending the
        ceilings this run did not measure (e.g. ``-k`` selected only the workloads): what the JSON written to
        disk holds. Read once a run: pytest-benchmark's ``--benchmark-json`` and perfkit's judging each build
        the run's JSON, and the second gets the result set the first made, kept on the session; a JSON of
        other benchmarks or samples (``--benchmark-autosave`` without its data) is read on its own."""
        key = _read_from(raw)
        if key not in self.derived:
            self.derived[key] = with_work(load.parse(raw, "this run", self.baseline))
        self.last_derived = self.derived[key]
        return self.last_derived

    def results(self) -> ResultSet | None:
        """The run as :meth:`derive` last read it; None before (no benchmark ran)."""
        return self.last_derived

    def finish(self, results: ResultSet | None, interrupted: bool = False) -> Outcome:
        """Judge the finished run against the baseline and save it if asked; None: no benchmark ran.
        ``interrupted`` (Ctrl-C, a deadline's SIGINT): nothing more is started, neither the confirmation's
        re-runs nor those of this machine's own baseline; the verdicts are the run's alone; no baseline is
        replaced (``force``) by the part that finished."""
        confirm.forget_kept(self.options.results_path)  # re-run files an earlier night left are not its own
        if results is None:
            return Outcome.OK
        outcome = Outcome.OK
        if self.baseline is not None:
            self.comparison = self.judge(results)
            if interrupted and self.options.confirm:
                self.messages.append("perfkit: confirmation not started: the run was interrupted; the "
                                     "verdicts are this run's alone")
            elif self._confirm(results):
                interrupted = True
            if self.options.fail_on_regression and self.comparison.regressions:
                outcome = Outcome.REGRESSED
        self.hint = self._next_step(results)
        if self.options.summary is not None and self.comparison is not None:
            self.options.summary.write_text(self._markdown(self.comparison), encoding="utf-8")
        if self.partial is not None:
            self.partial.remove_if_complete()  # pytest-benchmark wrote the final JSON before this runs
        if self.options.save_mode and not self._save_baseline(results, interrupted):
            outcome = Outcome.NOT_SAVED
        if self.options.save_local and interrupted:
            self.messages.append("perfkit: this machine's own baseline not saved: the run was interrupted")
        elif self.options.save_local:
            local = self._save_local(results)
            outcome = outcome if local is Outcome.OK else local
        return Outcome.INTERRUPTED if interrupted else outcome

    def _save_baseline(self, results: ResultSet, interrupted: bool) -> bool:
        """Save the run as the committed baseline of its hardware (--perfkit-save-baseline); False where it
        was not saved. An interrupted run never replaces one: ``force`` would keep only what it holds."""
        if self.options.save_mode == "force" and interrupted:
            self.messages.append("perfkit: baseline not replaced: the run was interrupted, and --force keeps "
                                 "only what a run holds; save it with --perfkit-save-baseline=merge, or run "
                                 "again")
            return False
        try:
            kept, joined = self._settled(results)
            if results.benchmarks and not kept.benchmarks:
                self.messages.append("perfkit: nothing appended: every benchmark of this run was left out")
                return True
            path = self.store.save(kept, self.options.save_mode or "new")
        except PerfkitError as exc:
            self.messages.append(f"perfkit: baseline not saved: {exc}")
            return False
        said = (f" ({baselines.appended_said([kept], baselines.held_runs(self.store, [kept]))})"
                if joined else "")
        cut = " (from an interrupted run: the benchmarks it finished)" if interrupted else ""
        self._saved(f"perfkit: saved baseline {path}{said}{cut}", [kept])
        return True

    def _settled(self, results: ResultSet) -> tuple[ResultSet, bool]:
        """``results`` less, where they are appended to a baseline, the benchmarks whose rounds did not
        settle against it (baselines.without_unsettled), each said; and whether they join one."""
        joined = (self.store.load(results.hardware_id, results.profile)
                  if self.options.save_mode == "append" else None)
        if joined is None:
            return results, False
        kept, left_out = baselines.without_unsettled(joined, results)
        self.messages.extend(baselines.unsettled_lines("this run", left_out))
        return kept, True

    def _save_local(self, results: ResultSet) -> Outcome:
        """Save this run and fresh-process re-runs of its benchmarks, three runs in all, as this machine's own
        baseline (BaselineStore.local), replacing an earlier one: OK, or NOT_SAVED, or INTERRUPTED by Ctrl-C.
        Three, because one run says nothing of how far a figure moves between runs: the judge needs as many of
        its baseline (judge.MIN_BASELINE_RUNS) before it gives a verdict."""
        names, began = [b.fullname for b in results.benchmarks], time.monotonic()
        try:
            again = (self.rerun(names, MIN_BASELINE_RUNS - 1, None) if self.rerun is not None else [])
            runs = [results, *again]
            path, earlier = self.store.local.replace(baselines.from_runs(runs) if again else results)
        except PerfkitError as exc:
            self.messages.append(f"perfkit: this machine's own baseline not saved: {exc}")
            return Outcome.NOT_SAVED
        except KeyboardInterrupt:
            self.messages.append("perfkit: this machine's own baseline not saved: interrupted during its "
                                 "re-runs")
            return Outcome.INTERRUPTED
        finally:
            self.rerun_seconds["the re-runs of this machine's own baseline"] = time.monotonic() - began
        replaced = f"; the one it replaced is kept as {earlier}" if earlier else ""
        self._saved(f"perfkit: saved this machine's own baseline {path} ({len(runs)} run(s): this one and "
                    f"{len(again)} in fresh processes); later runs here are judged against it{replaced}",
                    runs)
        return Outcome.OK

    def _saved(self, said: str, runs: Sequence[ResultSet]) -> None:
        """Say a baseline was saved, and warn where any of its ``runs`` ran on a busy host."""
        self.messages.append(said)
        warning = next((w for run in runs if (w := baselines.busy_warning(run))), "")
        if warning:
            self.messages.append(f"perfkit: {warning}")

    def _next_step(self, results: ResultSet) -> str:
        """The one line a run without verdicts ends with: why there are none (no baseline of this machine, or
        the committed one is of another CPU under the hardware id, and how much slower or faster this one
        is), whether the host was busy, and the command that saves this machine's own baseline, against
        which the next run is judged. "" where the run was judged, asked for no baseline or saves one."""
        if self.options.baseline != "auto" or self.options.save_mode or self.options.save_local:
            return ""
        if self.comparison is not None and not self.comparison.not_judged:
            return ""
        if self.comparison is None:
            name = self.store.path_for(self.settings.hardware_id, self.settings.profile.name).name
            why = f"no baseline of this machine ({name} is in neither baselines/ nor .perfkit/baselines/)"
        else:
            ratio = self.comparison.geomean_time_ratio
            why = (f"the committed baseline is of another machine under this hardware id "
                   f"({self.comparison.not_judged})"
                   + ("" if ratio is None else f", and this run was {verdicts.how_much(ratio)} than it"))
        busy = results.busy_host()
        save = baselines.how_to_save_local(self.options.command_again() or ("benches/",), bool(busy))
        return f"perfkit: no verdicts: {why}{'; ' + busy if busy else ''}. {save}"

    def judge(self, results: ResultSet, first_look: FirstLook | None = None,
              first_run: ResultSet | None = None) -> Comparison:
        """The verdict of ``results`` against the baseline, as ``perfkit compare`` gives it for the same
        files (``first_look``: what the first run's verdict tested, for a confirmation's re-runs;
        ``first_run``: that run, kept already, whose values must not count as the re-runs' noise: a figure
        could cross noise.TAIL_RUNS between the two looks)."""
        assert self.baseline is not None
        left_out = () if first_run is None else (first_run.datetime,)
        judged_with = kept_noise.for_judging(self.baseline, results, self.store, self.options.storage,
                                             left_out=left_out)
        # launch costs are lent across hardware only (same hardware compares no expectations)
        across = (self.baseline.hardware_id != results.hardware_id
                  or bool(self.baseline.info.machine_change(results.info)))
        lenders = (predict.lenders_for(self.baseline, results, directory=self.store.directory) if across
                   else [])
        policy = Policy(confirm_runs=self.options.confirm)  # its MDEs are the confirmed night's
        return judge(self.baseline, results, judged_with, policy, work_of, first_look, lenders=lenders)

    def _confirm(self, results: ResultSet) -> bool:
        """:meth:`_confirm_flagged`, its wall time kept for the end-of-run line."""
        began = time.monotonic()
        try:
            return self._confirm_flagged(results)
        finally:
            self.rerun_seconds["the confirmation's re-runs"] = time.monotonic() - began

    def _confirm_flagged(self, results: ResultSet) -> bool:
        """Re-run the flagged benchmarks in fresh processes and judge them again (``--perfkit-confirm``,
        perfkit.confirm); True where Ctrl-C or a deadline's SIGINT stopped it (the re-run it stopped ends with
        it; the judged re-runs that had finished are judged, and nothing more is started)."""
        runs = self.options.confirm
        names = confirm.suspects(self.comparison) if self.comparison and runs and self.rerun else []
        if not names or self.rerun is None or self.baseline is None or self.comparison is None:
            return False
        cut_short = False
        try:
            again = self.rerun(names, runs, confirm.CONFIRM_LABEL)
        except PerfkitError as exc:
            self.messages.append(f"perfkit: confirmation failed, the verdicts are this run's alone: {exc}")
            return False
        except confirm.CutShort as cut:
            again, interrupted, cut_short = cut.finished, True, True
        except KeyboardInterrupt:
            confirm.forget_kept(self.options.results_path)  # stopped between two re-runs: none is judged
            self.messages.append(f"perfkit: confirmation interrupted while re-running {len(names)} flagged "
                                 "benchmark(s): the verdicts are this run's alone")
            return True
        else:
            again, interrupted = self._explained(names, again)
        try:
            self.comparison = confirm.second_look(self.comparison, again,
                                                  lambda reruns, look: self.judge(reruns, look, results))
        except (PerfkitError, KeyboardInterrupt) as exc:
            confirm.forget_kept(self.options.results_path)  # `perfkit compare` judges the night as it ended
            stopped = isinstance(exc, KeyboardInterrupt)
            self.messages.append("perfkit: confirmation interrupted while its re-runs were judged: the "
                                 "verdicts are this run's alone" if stopped else
                                 f"perfkit: confirmation failed, the verdicts are this run's alone: {exc}")
            return interrupted or stopped
        if cut_short:
            self.messages.append(f"perfkit: confirmation interrupted after {len(again)} of {runs} re-run(s): "
                                 "the flagged benchmarks are judged on those alone, the rest as the first "
                                 "run had them")
        held = sorted({r.benchmark for r in self.comparison.regressions} & set(names))
        self.messages.append(
            f"perfkit: confirmation: {len(names)} flagged benchmark(s) re-run {runs} "
            f"time(s) in fresh processes ({len(again)} run(s) finished); {len(held)} regression(s) "
            f"held{': ' + ', '.join(held) if held else ''}{self._reruns_kept(len(again))}"
        )
        return interrupted

    def _reruns_kept(self, runs: int) -> str:
        """Where the confirmation's re-run files stay (beside the run's JSON), as the end of its line."""
        path = self.options.results_path
        if path is None or not runs:
            return ""
        first, last = (confirm.kept_as(path, confirm.CONFIRM_LABEL, i) for i in (0, runs - 1))
        return f"; the re-runs' files: {first}" + (f" to {last.name}" if runs > 1 else "")

    def _explained(self, names: list[str], again: list[ResultSet]) -> tuple[list[ResultSet], bool]:
        """The confirmation's ``again`` with the kernel summaries of one more, unjudged run of ``names``
        (:attr:`explain_rerun`); as they are where that run failed or was interrupted (True), said."""
        if self.explain_rerun is None or not again:
            return again, False
        try:
            explained = self.explain_rerun(names)
        except PerfkitError as exc:
            self.messages.append(f"perfkit: the flagged benchmarks' kernel summaries were not made: {exc}")
            return again, False
        except KeyboardInterrupt:
            self.messages.append("perfkit: confirmation: the flagged benchmarks' kernel summaries were not "
                                 "made: their run was interrupted; the re-runs that finished are judged")
            return again, True
        return [kernel_summary.with_summaries(run, explained) for run in again], False

    def _markdown(self, comparison: Comparison) -> str:
        """The final verdict (after confirmation) as markdown, for a CI job summary."""
        notes = [m for m in self.messages if m.startswith("perfkit: confirmation")]
        return verdicts.summary_markdown(comparison, notes)

    def summary_lines(self, width: int | None = None) -> list[str]:
        """What the terminal summary shows: the comparison first (its table fitted to ``width`` columns where
        given), then the other messages and the wall times."""
        lines = list(self.messages)
        if (wall := wall_clock.line(self.started, self.family_seconds, self.rerun_seconds)) is not None:
            lines.append(wall)
        if (budget := self.budget_line()) is not None:
            lines.append(budget)
        for reason, count in sorted(self.skipped.items(), key=lambda kv: -kv[1]):
            lines.append(f"perfkit: {count} skipped: {reason}")
        if self.results_path is not None:
            lines.append(partial.where_results(self.results_path))
        if self.comparison is not None:
            lines[:0] = verdicts.summary_lines(self.comparison, str(self.baseline_path), width=width)
        return lines + ([self.hint] if self.hint else [])


def _read_from(raw: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a run's JSON says of its benchmarks that the result set read from it depends on: the ids, each
    one's samples and figures."""
    return tuple((b.get("fullname"), tuple((b.get("stats") or {}).get("data") or ()),
                  repr(sorted((b.get("extra_info") or {}).items()))) for b in raw.get("benchmarks") or ())


def _in_neither(first: Path, second: Path) -> str:
    """"in neither FIRST nor SECOND", or "not in FIRST" where the two are one folder."""
    return f"not in {first}" if first.resolve() == second.resolve() else f"in neither {first} nor {second}"
