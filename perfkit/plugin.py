"""The perfkit pytest plugin: options, markers, fixtures and hooks only; the logic lives in modules."""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch
from pytest_benchmark.utils import safe_dumps

from perfkit import SCHEMA_VERSION
from perfkit.errors import PerfkitError
from perfkit.measure import hardware, timing
from perfkit.measure.ceilings import CeilingStore
from perfkit.parallel import launch
from perfkit.results import baselines, compare, datasheet, report
from perfkit.results.metrics import MetricRecorder
from perfkit.workloads import data

DEFAULT_TIMER = "time.perf_counter"
PERFKIT_TIMER = "perfkit.measure.timing.synchronized_clock"


@dataclass(frozen=True)
class Profile:
    """quick (a CPU box, minutes) or full (the course's sizes)."""

    name: str

    def pick(self, quick: Any, full: Any) -> Any:
        return full if self.name == "full" else quick


@dataclass
class RunState:
    device: torch.device
    profile: Profile
    gpu_count: int
    fingerprint: hardware.Fingerprint
    ceilings: CeilingStore
    baseline_path: Path | None = None
    baseline: dict[str, Any] | None = None
    comparison: compare.Comparison | None = None
    messages: list[str] = field(default_factory=list)
    torchrun_args: tuple[str, ...] = ()
    scaling_reference: dict[str, float] = field(default_factory=dict)


_STATE = pytest.StashKey[RunState]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("perfkit", "perfkit performance regression suite")
    group.addoption("--perfkit-device", choices=("auto", "cpu", "cuda"), default="auto",
                    help="device to benchmark: auto picks cuda when a GPU is visible (default: auto)")
    group.addoption("--perfkit-profile", choices=("quick", "full"), default=None,
                    help="problem sizes: full (the course's) or quick (minutes on a CPU); default full with a GPU")
    group.addoption("--perfkit-baseline", default="auto", metavar="auto|PATH|none",
                    help="baseline to compare with at the end: auto = baselines/<hardware-id>.json if present")
    group.addoption("--perfkit-fail-on-regression", action="store_true",
                    help="exit non-zero when a significant regression against the baseline is found")
    group.addoption("--perfkit-save-baseline", nargs="?", const="new", default=None, choices=("new", "merge", "force"),
                    help="save this run as baselines/<hardware-id>.json; 'merge' updates an existing one, "
                         "'force' replaces it (default: refuse to overwrite)")
    group.addoption("--perfkit-data-root", default=None, metavar="DIR",
                    help=f"folder holding a local CIFAR-10 in torchvision's format (cifar-10-batches-py/); "
                         f"default ${data.DATA_ROOT_ENV}, else learnable synthetic data (nothing is downloaded)")
    group.addoption("--perfkit-torchrun-args", default=None, metavar="ARGS",
                    help="torchrun rendezvous options for the multi-GPU benchmarks, e.g. "
                         "\"--nnodes 2 --rdzv-backend c10d --rdzv-endpoint host:29500 --rdzv-id job1\" "
                         "(default: one machine, --standalone)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped with a reason where none is present")
    config.addinivalue_line("markers", "gpus(n): needs at least n CUDA GPUs; skipped with a reason otherwise")
    config.addinivalue_line("markers", "full_only: runs only in the full profile (--perfkit-profile=full)")
    if config.getoption("benchmark_timer", None) == DEFAULT_TIMER:
        config.option.benchmark_timer = PERFKIT_TIMER
    try:
        config.stash[_STATE] = _run_state(config)
    except PerfkitError as exc:
        raise pytest.UsageError(str(exc)) from None


def _run_state(config: pytest.Config) -> RunState:
    gpu_count = hardware.gpu_count()
    device = torch.device(hardware.resolve_device(config.getoption("perfkit_device")))
    profile = Profile(config.getoption("perfkit_profile") or ("full" if device.type == "cuda" else "quick"))
    state = RunState(device, profile, gpu_count, hardware.fingerprint(device.type), CeilingStore(),
                     torchrun_args=launch.parse_torchrun_args(config.getoption("perfkit_torchrun_args")))
    choice = config.getoption("perfkit_baseline")
    if choice != "none":
        path = (baselines.baseline_path(config.rootpath / "baselines", state.fingerprint.hardware_id)
                if choice == "auto" else Path(choice))
        if choice != "auto" or path.exists():
            state.baseline_path, state.baseline = path, baselines.load_results(path)
            other = baselines.hardware_id_of(state.baseline)
            if other != state.fingerprint.hardware_id:
                raise PerfkitError(
                    f"baseline {path} is from {other}, this run is {state.fingerprint.hardware_id}; "
                    f"compare across hardware afterwards with `perfkit compare {path} results.json`"
                )
            state.ceilings.stored = baselines.perfkit_info(state.baseline).get("ceilings", {})
    return state


def profile_of(config: pytest.Config) -> Profile:
    """The run's profile, for ``pytest_generate_tests`` hooks that size parameters by it."""
    return config.stash[_STATE].profile


def pytest_runtest_setup(item: pytest.Item) -> None:
    state = item.config.stash[_STATE]
    needs = [1] if item.get_closest_marker("gpu") else []
    needs += [int(m.args[0]) for m in item.iter_markers("gpus")]
    if needs and state.device.type != "cuda":
        reason = "no CUDA GPU is visible" if not state.gpu_count else "this run uses --perfkit-device=cpu"
        pytest.skip(f"needs a CUDA GPU: {reason}")
    if needs and max(needs) > state.gpu_count:
        pytest.skip(f"needs {max(needs)} GPUs, {state.gpu_count} visible")
    if item.get_closest_marker("full_only") and state.profile.name != "full":
        pytest.skip("full profile only (--perfkit-profile=full)")


@pytest.fixture(scope="session")
def perfkit_device(request: pytest.FixtureRequest) -> torch.device:
    """The device this run benchmarks (``--perfkit-device``)."""
    return request.config.stash[_STATE].device


@pytest.fixture(scope="session")
def perfkit_profile(request: pytest.FixtureRequest) -> Profile:
    """The size profile of this run; ``perfkit_profile.pick(quick=..., full=...)``."""
    return request.config.stash[_STATE].profile


@pytest.fixture(scope="session")
def perfkit_ceilings(request: pytest.FixtureRequest) -> CeilingStore:
    """Machine ceilings measured in this run, falling back to the baseline's."""
    return request.config.stash[_STATE].ceilings


@pytest.fixture(scope="session")
def perfkit_datasheet(request: pytest.FixtureRequest) -> datasheet.GpuSpec | None:
    """The datasheet entry of the GPU under test, or None (a CPU run or an unlisted GPU)."""
    state = request.config.stash[_STATE]
    return datasheet.by_key(state.fingerprint.datasheet_key or "") if state.device.type == "cuda" else None


@pytest.fixture(scope="session")
def perfkit_data_root(request: pytest.FixtureRequest) -> str | None:
    """``--perfkit-data-root`` (else ``$PERFKIT_DATA_ROOT``, else None: synthetic data), as given."""
    root = data.data_root(request.config.getoption("perfkit_data_root"))
    return str(root) if root else None


@pytest.fixture(scope="session")
def perfkit_torchrun(request: pytest.FixtureRequest) -> Callable[..., dict[str, Any]]:
    """``perfkit_torchrun(job, gpus)``: rank 0's result of a perfkit.parallel.ddp job on ``gpus`` processes per machine.

    Uses ``--perfkit-torchrun-args`` when given. A failed rank fails the benchmark with its own
    message (no stack trace of the launcher); a machine that did not hold rank 0 skips.
    """
    torchrun_args = request.config.stash[_STATE].torchrun_args

    def run(job: dict[str, Any], gpus: int, module: str = "perfkit.parallel.ddp") -> dict[str, Any]:
        try:
            return launch.launch(module, job, gpus, torchrun_args=torchrun_args)
        except launch.NotRankZero as exc:
            pytest.skip(str(exc))
        except launch.DistributedError as exc:
            hint = "; lower the batch" if "out of memory" in str(exc).lower() else ""
            pytest.fail(f"{exc}{hint}", pytrace=False)

    return run


@pytest.fixture(scope="session")
def perfkit_scaling_reference(request: pytest.FixtureRequest) -> dict[str, float]:
    """1-GPU throughputs measured earlier in this run, by benchmark key: what speedups divide by."""
    return request.config.stash[_STATE].scaling_reference


@pytest.fixture
def perfkit_warmup() -> Any:
    """``perfkit_warmup(fn, iterations=5)``: untimed runs before measuring."""
    return timing.warmup


@pytest.fixture
def perfkit_metrics(benchmark: Any) -> MetricRecorder:
    """Records declared metrics into this benchmark's ``extra_info`` (see perfkit.results.metrics)."""
    return MetricRecorder(benchmark.extra_info)


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict[str, Any]) -> None:
    state = config.stash[_STATE]
    machine_info["perfkit"] = {
        "schema_version": SCHEMA_VERSION,
        "hardware_id": state.fingerprint.hardware_id,
        "device": state.device.type,
        "profile": state.profile.name,
        "fingerprint": state.fingerprint.to_json(),
        "ceilings": dict(state.ceilings.measured),
    }


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    state = config.stash.get(_STATE, None)
    results = _results(config) if state else None
    if state is None or results is None:
        return
    if state.baseline is not None:
        state.comparison = compare.compare(state.baseline, results)
        if config.getoption("perfkit_fail_on_regression") and state.comparison.regressions:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif config.getoption("perfkit_baseline") == "auto":
        state.messages.append(f"perfkit: no baseline for {state.fingerprint.hardware_id} in baselines/; "
                              "nothing compared (save one with --perfkit-save-baseline)")
    save_mode = config.getoption("perfkit_save_baseline")
    if save_mode:
        try:
            path = baselines.save_baseline(results, config.rootpath / "baselines", save_mode)
            state.messages.append(f"perfkit: saved baseline {path}")
        except PerfkitError as exc:
            state.messages.append(f"perfkit: baseline not saved: {exc}")
            session.exitstatus = pytest.ExitCode.USAGE_ERROR


def _results(config: pytest.Config) -> dict[str, Any] | None:
    """This run as the pytest-benchmark JSON (raw samples kept), whether or not --benchmark-json was given."""
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return None
    output = config.hook.pytest_benchmark_generate_json(
        config=config,
        benchmarks=session.benchmarks,
        include_data=True,
        machine_info=session.get_machine_info(),
        commit_info=config.hook.pytest_benchmark_generate_commit_info(config=config),
    )
    return json.loads(safe_dumps(output))


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    lines = list(state.messages)
    if state.comparison is not None:
        lines[:0] = report.summary_lines(state.comparison, str(state.baseline_path))
    if lines:
        terminalreporter.section("perfkit")
        for line in lines:
            terminalreporter.write_line(line)
