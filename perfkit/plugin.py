"""The perfkit pytest plugin: options, markers, fixtures and hooks only; the logic lives in modules."""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
import time
from collections.abc import Callable, Generator
from typing import Any

import pytest
import torch

from perfkit import bytecode, limits, pbench
from perfkit.errors import PerfkitError
from perfkit.explain import record as kernel_summary
from perfkit.measure import clocks, gpu_throttle, host_load, memory, timing
from perfkit.options import DEFAULT_TIMEOUT_S, RunOptions
from perfkit.parallel import launch
from perfkit.parallel.records import Job
from perfkit.render import tables
from perfkit.resultfile import datasheet, inject
from perfkit.resultfile.metrics import MetricRecorder
from perfkit.resultfile.payloads import ClockLock
from perfkit.session import Outcome, Session
from perfkit.settings import Profile
from perfkit.store.baselines import LOCAL_SAVE
from perfkit.workloads import data

PERFKIT_TIMER = "perfkit.measure.timing.synchronized_clock"
#: The shortest gap between two progress lines of one long benchmark.
PROGRESS_EVERY_S = 20.0

_SESSION = pytest.StashKey[Session]()
_EXIT_STATUS = {
    Outcome.REGRESSED: pytest.ExitCode.TESTS_FAILED,
    Outcome.NOT_SAVED: pytest.ExitCode.USAGE_ERROR,
    Outcome.INTERRUPTED: pytest.ExitCode.INTERRUPTED,
}


def pytest_addoption(parser: pytest.Parser) -> None:
    """perfkit's options, in the order ``pytest --help`` lists them. Long on purpose: one declaration per
    option, read top to bottom as the help is; perfkit.options parses them into one value."""
    group = parser.getgroup("perfkit", "perfkit performance regression suite")
    group.addoption("--perfkit-device", choices=("auto", "cpu", "cuda"), default="auto",
                    help="device to benchmark: auto picks cuda when a GPU is visible (default: auto)")
    group.addoption(
        "--perfkit-profile",
        choices=("quick", "full"),
        default=None,
        help="problem sizes: full (the course's) or quick (minutes on a CPU); default full with a GPU",
    )
    group.addoption(
        "--perfkit-baseline",
        default="auto",
        metavar="auto|PATH|none",
        help="baseline to compare with at the end: auto = this machine's own .perfkit/baselines/<hardware-id>"
        ".json if saved (--perfkit-save-baseline=local), else baselines/<hardware-id>.json if present",
    )
    group.addoption("--perfkit-fail-on-regression", action="store_true",
                    help="exit non-zero when a significant regression against the baseline is found")
    group.addoption(
        "--perfkit-save-baseline",
        nargs="?",
        const="new",
        default=None,
        choices=("new", "merge", "append", "force", LOCAL_SAVE),
        help="save this run as baselines/<hardware-id>.json; 'merge' updates an existing one, 'append' adds "
        "this run to its entries' runs, 'force' replaces it (default: refuse to overwrite); 'local' saves it "
        "with two re-runs in fresh processes as this machine's own baseline in .perfkit/baselines/ (not "
        "committed; replaces an earlier one, kept as .previous), which later runs here are judged against",
    )
    group.addoption(
        "--perfkit-data-root",
        default=None,
        metavar="DIR",
        help=f"folder holding a local CIFAR-10 in torchvision's format (cifar-10-batches-py/); "
        f"default ${data.DATA_ROOT_ENV}, else learnable synthetic data (nothing is downloaded)",
    )
    group.addoption(
        "--perfkit-shifted-root",
        default=None,
        metavar="DIR",
        help="your own labelled images for the generalisation check of time-to-accuracy: CIFAR-10's "
        "layout or one folder per CIFAR-10 class (default: with synthetic data, a shifted synthetic "
        "set; with real CIFAR-10, no check)",
    )
    group.addoption(
        "--perfkit-confirm",
        type=int,
        default=0,
        metavar="N",
        help="re-run benchmarks flagged against the baseline N times, each in a fresh process, and judge "
        "again with every run (default 0: no re-runs); the nightly uses 3",
    )
    group.addoption("--perfkit-summary", default=None, metavar="PATH",
                    help="also write the final comparison (after any confirmation) as markdown to PATH, "
                         "e.g. for a CI job summary")
    group.addoption(
        "--perfkit-timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"wall-clock limit per benchmark: a stuck one fails with that reason and the run goes on "
        f"(default {DEFAULT_TIMEOUT_S:.0f}; 0: none)",
    )
    group.addoption(
        "--perfkit-memory-cap",
        default=None,
        metavar="SIZE",
        help="let PyTorch's allocator use at most SIZE of each GPU, e.g. 10.91GiB (the course's "
        "GTX 1080 Ti), so a large card reproduces a small one's limits; recorded in the results",
    )
    group.addoption(
        "--perfkit-lock-clocks", nargs="?", const="base", default=clocks.KERNELS, choices=clocks.MODES,
        metavar="kernels|base|max|off",
        help="which benchmarks run at a locked SM clock (reset after): kernels (the default) times the "
             "kernel benchmarks (ceilings, layers, timer) at the base clock the GPU holds at its power "
             "limit, as nvbench does, unless their baseline entries were timed unlocked; base or max (the "
             "boost clock) lock the whole run; off locks nothing. Needs root and a driver that allows it; "
             "refused, the run says so and goes on",
    )
    group.addoption(
        "--perfkit-explain", action="store_true", default=False,
        help="after each benchmark's timed rounds, profile as many more calls of its work as filled a round "
             "under torch.profiler "
             "and keep a kernel summary in the results (perfkit.explain): a regressed or improved row then "
             "says which kernels, copies or launches moved against a baseline saved with it. Off by "
             "default: the profiler stays in the process and slows the launch-bound benchmarks after it "
             "(DataParallel's ResNet-18 step 36-38%% on an H100 and an H200), so a run that is judged is "
             "best made without it; a confirmation adds one more, unjudged re-run with it",
    )
    group.addoption("--perfkit-torchrun-args", default=None, metavar="ARGS",
                    help="torchrun rendezvous options for the multi-GPU benchmarks, e.g. "
                         "\"--nnodes 2 --rdzv-backend c10d --rdzv-endpoint host:29500 --rdzv-id job1\" "
                         "(default: one machine, --standalone)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped with a reason where none is present")
    config.addinivalue_line("markers", "gpus(n): needs at least n CUDA GPUs; skipped with a reason otherwise")
    config.addinivalue_line("markers", "full_only: runs only in the full profile (--perfkit-profile=full)")
    config.addinivalue_line(
        "markers", "weekly: outside the nightly selection of the full profile; run with -m weekly"
    )
    config.addinivalue_line(
        "markers", "locked_clock: a kernel benchmark, timed at the GPU's base clock (--perfkit-lock-clocks)"
    )
    pbench.use_timer(config, PERFKIT_TIMER)
    pbench.readable_table(config)
    bytecode.share_cache()  # where the conftest did not (another rootdir): the children still share
    try:
        inject.rules()  # a malformed testing aid stops the run before it starts
        options = RunOptions.from_config(config)
        data.check_data_root(options.data_root)
        data.check_shifted_root(options.shifted_root)
        config.stash[_SESSION] = Session.start(options, config.rootpath)
    except PerfkitError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_report_header(config: pytest.Config) -> list[str]:
    run = config.stash.get(_SESSION, None)
    return run.header_lines() if run is not None else []


def pytest_sessionstart(session: pytest.Session) -> None:
    """Where the run starts: the memory cap (and a clock lock, if asked) take hold before the first test."""
    run = session.config.stash.get(_SESSION, None)
    if run is not None:
        run.begin()


def session_of(config: pytest.Config) -> Session:
    """The run's :class:`~perfkit.session.Session`."""
    return config.stash[_SESSION]


def profile_of(config: pytest.Config) -> Profile:
    """The run's profile, for ``pytest_generate_tests`` hooks that size parameters by it."""
    return config.stash[_SESSION].settings.profile


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not session_of(config).weekly_skipped(config.getoption("markexpr", "")):
        return
    weekly = [item for item in items if item.get_closest_marker("weekly")]
    if weekly:
        items[:] = [item for item in items if not item.get_closest_marker("weekly")]
        config.hook.pytest_deselected(items=weekly)
        session_of(config).messages.append(
            f"perfkit: {len(weekly)} weekly benchmark(s) left out of this nightly "
            "selection; run them with -m weekly"
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    seconds = session_of(item.config).options.timeout_s
    benchmarked = "benchmark" in getattr(item, "fixturenames", ())
    cpus = host_load.snapshot() if benchmarked and os.environ.get(host_load.IGNORE_ENV) != "1" else None
    heat = gpu_throttle.snapshot() if benchmarked else None
    kernel = item.get_closest_marker("locked_clock") is not None
    benchmark = getattr(item, "funcargs", {}).get("benchmark")
    explain = benchmarked and benchmark is not None and session_of(item.config).options.explain
    if explain:
        pbench.keep_work(benchmark)
    with session_of(item.config).clock_for(item.nodeid, kernel) as sm_clock:
        try:
            with limits.time_limit(
                seconds, f"stopped after {seconds:.0f} s (--perfkit-timeout); the other benchmarks go on"
            ):
                result = yield
        finally:
            # what else slowed it, read by the judge (perfkit.verdict.judge), and the clock it was timed at
            records = (host_load.between(cpus, host_load.snapshot()) if cpus is not None else None,
                       gpu_throttle.between(heat, gpu_throttle.snapshot()) if heat is not None else None,
                       ClockLock(sm_clock) if sm_clock is not None else None)
            for record in records:
                if record is not None and benchmark is not None:
                    MetricRecorder(benchmark.extra_info).payload(record)
            work = pbench.forget_work(benchmark) if explain else None  # its model and data go with the test
        if explain:  # after the windows above, still at the clock it was timed at
            # under the benchmark's own limit: a call that hangs there reads Unavailable, the timing stands
            ran_past = f"its profiled calls ran past {seconds:.0f} s (--perfkit-timeout)"
            calls = pbench.profiled_calls(benchmark, work, timing.MIN_ROUND_S) if work is not None else 1
            with limits.time_limit(seconds, ran_past):
                kernel_summary.record(benchmark, work.call if work is not None else None,
                                      session_of(item.config).settings.device.type, calls)
        return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.excinfo is not None and call.excinfo.errisinstance(PerfkitError):
        report.longrepr = f"{item.nodeid}: {call.excinfo.value}"  # a sentence, not a stack trace
    benchmark = getattr(item, "funcargs", {}).get("benchmark")
    if report.when == "call" and report.failed and benchmark is not None:
        pbench.leave_out(benchmark)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    result = yield
    session_of(item.config).keep_finished(
        pbench.take_finished(item.config), lambda: pbench.run_header(item.config)
    )
    if torch.cuda.is_initialized():
        # the next benchmark starts with the allocator's cache empty, as in a fresh process: VGG16's batch-1
        # graph replay read 749 us after the training-memory benchmarks left ResNet-50 b512's blocks cached,
        # 714-717 us alone or after any other family (one H100; likely through cuDNN's choice of plans by
        # the workspace it can get)
        with contextlib.suppress(RuntimeError):  # a CUDA error is the failed test's to report, not this
            memory.release_cached()
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    start = time.monotonic()
    try:
        return (yield)
    finally:
        session_of(item.config).add_wall_time(item.nodeid, time.monotonic() - start)


def pytest_runtest_setup(item: pytest.Item) -> None:
    needs = [1] if item.get_closest_marker("gpu") else []
    needs += [int(m.args[0]) for m in item.iter_markers("gpus")]
    reason = session_of(item.config).settings.skip_reason(
        needs, item.get_closest_marker("full_only") is not None
    )
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def perfkit_device(request: pytest.FixtureRequest) -> torch.device:
    """The device this run benchmarks (``--perfkit-device``)."""
    return session_of(request.config).settings.device


@pytest.fixture(scope="session")
def perfkit_profile(request: pytest.FixtureRequest) -> Profile:
    """The size profile of this run; ``perfkit_profile.pick(quick=..., full=...)``."""
    return session_of(request.config).settings.profile


@pytest.fixture(scope="session")
def perfkit_datasheet(request: pytest.FixtureRequest) -> datasheet.GpuSpec | None:
    """The datasheet entry of the GPU under test, or None (a CPU run or an unlisted GPU)."""
    return session_of(request.config).settings.gpu_spec()


@pytest.fixture(scope="session")
def perfkit_data_root(request: pytest.FixtureRequest) -> str | None:
    """``--perfkit-data-root`` (else ``$PERFKIT_DATA_ROOT``, else None: synthetic data), as given."""
    root = data.data_root(session_of(request.config).options.data_root)
    return str(root) if root else None


@pytest.fixture(scope="session")
def perfkit_torchrun(request: pytest.FixtureRequest) -> Callable[[Job, int], Any]:
    """``perfkit_torchrun(job, gpus)``: rank 0's result record of a job (perfkit.parallel.records) on ``gpus``
    processes per machine.

    Uses ``--perfkit-torchrun-args`` when given; ``--perfkit-memory-cap`` reaches every rank. A failed rank
    fails the
    benchmark with its own message (no stack trace of the launcher); a machine that did not hold rank 0 skips.
    """
    settings = session_of(request.config).settings

    def run(job: Job, gpus: int) -> Any:
        capped = (
            job if settings.memory_cap is None else dataclasses.replace(job, memory_cap=settings.memory_cap)
        )
        try:
            return launch.run(capped, gpus, torchrun_args=settings.torchrun_args)
        except launch.NotRankZero as exc:
            pytest.skip(str(exc))
        except launch.DistributedError as exc:
            hint = "; lower the batch" if "out of memory" in str(exc).lower() else ""
            pytest.fail(f"{exc}{hint}", pytrace=False)

    return run


@pytest.fixture(scope="session")
def perfkit_shifted_root(request: pytest.FixtureRequest) -> str | None:
    """``--perfkit-shifted-root``: a folder of the user's own labelled images, or None."""
    return session_of(request.config).options.shifted_root


@pytest.fixture(scope="session")
def perfkit_memory_cap(request: pytest.FixtureRequest) -> int | None:
    """``--perfkit-memory-cap`` in bytes (applied to every GPU at start-up), or None: the whole card."""
    return session_of(request.config).settings.memory_cap


@pytest.fixture
def perfkit_progress(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """``perfkit_progress(message)``: a line on the terminal while a long benchmark runs (past pytest's output
    capture), at most one every ``PROGRESS_EVERY_S`` seconds so a long run is followed, not flooded; ``-q``
    and quieter keep it silent."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    last = [-PROGRESS_EVERY_S]

    def say(message: str) -> None:
        now = time.monotonic()
        if reporter is None or request.config.get_verbosity() < 0 or now - last[0] < PROGRESS_EVERY_S:
            return
        last[0] = now
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            reporter.write_line(f"perfkit: {request.node.name}: {message}")  # as pytest's live logging does

    return say


@pytest.fixture
def perfkit_metrics(benchmark: Any) -> MetricRecorder:
    """Records declared metrics into this benchmark's ``extra_info`` (see perfkit.resultfile.metrics)."""
    return MetricRecorder(benchmark.extra_info)


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict[str, Any]) -> None:
    session = config.stash.get(_SESSION, None)
    if session is not None:
        machine_info["perfkit"] = session.machine_info()


def pytest_benchmark_update_json(config: pytest.Config, benchmarks: Any, output_json: dict[str, Any]) -> None:
    """Cross-benchmark figures, computed once the run is over (for --benchmark-json/-save and perfkit's
    own)."""
    session = config.stash.get(_SESSION, None)
    if session is not None:
        for bench in output_json["benchmarks"]:
            bench["extra_info"] = copy.deepcopy(bench.get("extra_info") or {})  # not the live fixture's dict
            inject.apply(bench)
        for pattern in inject.unmatched(bench.get("fullname", "") for bench in output_json["benchmarks"]):
            session.say_once(f"perfkit: {inject.ENV}: {pattern!r} matched no benchmark of this run; nothing "
                             "was slowed there (brackets are literal: give the id as the verdict names it)")
        if not output_json["benchmarks"]:  # every selected benchmark failed, or none was timed
            session.say_once("perfkit: no benchmark finished (each selected one failed or skipped before its "
                             "figures were kept): nothing to compare, report or store; pytest's summary says "
                             "why")
            return
        output_json.update(session.derive(pbench.plain(output_json)).to_json())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    run = session.config.stash.get(_SESSION, None)
    if run is None:
        return
    raw = pbench.run_json(session.config)  # built through the hooks above, which read it (Session.derive)
    try:
        outcome = run.finish(run.results() if raw is not None else None,
                             interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)
    except KeyboardInterrupt:  # a second Ctrl-C while the run was being ended: what was said so far stands
        run.say_once("perfkit: interrupted again while ending the run; what is said above stands")
        outcome = Outcome.INTERRUPTED
    finally:
        run.end()
    if outcome in _EXIT_STATUS:
        session.exitstatus = _EXIT_STATUS[outcome]


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    session = config.stash.get(_SESSION, None)
    if session is not None:
        for report in terminalreporter.stats.get("skipped", []):  # the reasons, without -rs
            if isinstance(report.longrepr, tuple):
                session.add_skip(str(report.longrepr[2]).removeprefix("Skipped: "))
    writer = config.get_terminal_writer()  # a terminal's width, or COLUMNS; a log or a pipe keeps rows whole
    width = writer.fullwidth if writer.hasmarkup or "COLUMNS" in os.environ else None
    lines, hint = (session.summary_lines(width), session.hint) if session is not None else ([], "")
    if lines:
        terminalreporter.section("perfkit")
        for line in lines:  # the line that says how to get verdicts stands out from the green "passed"
            terminalreporter.write_line(tables.wrapped(line, width), yellow=bool(hint) and line == hint)
