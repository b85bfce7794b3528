"""Kernel summaries: built from synthetic GPU activity and from the real CPU profiler, kept as JSON, the
median of several runs, and the profiler's failures as Unavailable."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
import torch

from perfkit.errors import BaselineError, UsageError
from perfkit.explain.diff import explain
from perfkit.explain.summary import (
    OTHER,
    TOP_KERNELS,
    Activity,
    CopyStat,
    KernelStat,
    KernelSummary,
    Unavailable,
    activity,
    median_of,
    profile,
    summarise,
)
from tests.conftest import ROOT

US = 1000  # nanoseconds


class FakeEvent:
    """What the summary reads of a ``_KinetoEvent``."""

    def __init__(self, name: str, kind: str, start_us: float, end_us: float, nbytes: int = 0,
                 meta: dict[str, str] | None = None, thread: int = 1) -> None:
        self._name, self._kind, self._nbytes, self._meta = name, kind, nbytes, meta or {}
        self._start, self._end, self._thread = int(start_us * US), int(end_us * US), thread

    def name(self) -> str:
        return self._name

    def activity_type(self) -> str:
        return self._kind

    def start_ns(self) -> int:
        return self._start

    def end_ns(self) -> int:
        return self._end

    def nbytes(self) -> int:
        return self._nbytes

    def extra_meta(self) -> dict[str, str]:
        return self._meta

    def metadata_json(self) -> str:
        return ""

    def start_thread_id(self) -> int:
        return self._thread


def _kernel(name: str, start_us: float, end_us: float) -> Activity:
    return Activity(name, "kernel", int(start_us * US), int(end_us * US))


def test_overlapping_kernels_on_two_streams_count_once_in_the_busy_time():
    activities = [_kernel("gemm", 0, 100), _kernel("reduce", 50, 120),  # stream 7 and 8 overlap by 50 us
                  _kernel("gemm", 200, 300), Activity("Memcpy HtoD (Pageable -> Device)", "memcpy", 290 * US,
                                                      310 * US, 4096)]
    got = summarise(activities, calls=1, host_s=0.001, device="cuda")
    assert got.gpu_busy_s == pytest.approx(230e-6)  # 0-120, 200-310
    assert got.kernels == (KernelStat("gemm", 2, 200.0), KernelStat("reduce", 1, 70.0))
    assert got.kernels[0].mean_us == 100.0
    assert got.kernel_us == 270.0


def test_figures_are_per_call():
    launches = [Activity("cudaLaunchKernel", "launch", 0, 5), Activity("cuLaunchKernel", "launch", 9, 10)]
    activities = [_kernel("gemm", 0, 100), _kernel("gemm", 200, 300), _kernel("tail", 300, 310), *launches]
    got = summarise(activities, calls=2, host_s=0.004, device="cuda")
    assert (got.host_s, got.gpu_busy_s, got.launches) == (pytest.approx(0.002), pytest.approx(105e-6), 1.0)
    assert got.kernels == (KernelStat("gemm", 1.0, 100.0), KernelStat("tail", 0.5, 5.0))


def test_copies_are_summed_per_direction_with_their_bytes():
    copies = [Activity("Memcpy HtoD (Pageable -> Device)", "memcpy", 0, 10 * US, 1 << 20),
              Activity("Memcpy HtoD (Pinned -> Device)", "memcpy", 10 * US, 14 * US, 1 << 20),
              Activity("Memcpy DtoH (Device -> Pageable)", "memcpy", 20 * US, 30 * US, 4096),
              Activity("Memset (Device)", "memset", 40 * US, 41 * US, 512)]
    got = summarise(copies, calls=1, host_s=0.001, device="cuda")
    assert got.copies == (CopyStat("DtoH", 1, 4096, 10.0), CopyStat("HtoD", 2, 2 << 20, 14.0),
                          CopyStat("Memset", 1, 512, 1.0))
    assert got.gpu_busy_s == pytest.approx(25e-6)


def test_beyond_the_top_kernels_the_rest_is_one_other_entry_and_totals_still_add_up():
    activities = [_kernel(f"k{i:02d}", 0, i + 1) for i in range(TOP_KERNELS + 5)]
    got = summarise(activities, calls=1, host_s=0.001, device="cuda")
    assert len(got.kernels) == TOP_KERNELS + 1
    assert got.kernels[0].name == f"k{TOP_KERNELS + 4:02d}"  # the heaviest first
    assert got.kernels[-1] == KernelStat(OTHER, 5, 1.0 + 2 + 3 + 4 + 5)
    assert got.kernel_us == pytest.approx(sum(range(1, TOP_KERNELS + 6)))


def test_on_cpu_operators_are_ranked_by_their_self_time_within_each_thread():
    operators = [Activity("aten::matmul", "operator", 0, 100 * US, thread=1),
                 Activity("aten::mm", "operator", 5 * US, 95 * US, thread=1),
                 Activity("aten::relu", "operator", 50 * US, 60 * US, thread=2),  # another thread: no child
                 Activity("aten::mm", "operator", 200 * US, 290 * US, thread=1)]
    got = summarise(operators, calls=2, host_s=0.001, device="cpu")
    assert got.kernels == (KernelStat("aten::mm", 1.0, 90.0), KernelStat("aten::matmul", 0.5, 5.0),
                           KernelStat("aten::relu", 0.5, 5.0))
    assert got.gpu_busy_s == pytest.approx(190e-6 / 2)


@pytest.mark.parametrize(("event", "kind", "nbytes"), [
    (FakeEvent("cudaLaunchKernel", "cuda_runtime", 0, 1), "launch", 0),
    (FakeEvent("cuLaunchKernelEx", "cuda_driver", 0, 1), "launch", 0),
    (FakeEvent("cudaGraphLaunch", "cuda_runtime", 0, 1), "launch", 0),
    (FakeEvent("cudaMemcpyAsync", "cuda_runtime", 0, 1), None, 0),
    (FakeEvent("ampere_sgemm_128x64_nn", "kernel", 0, 1), "kernel", 0),
    (FakeEvent("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", 0, 1, nbytes=64), "memcpy", 64),
    (FakeEvent("Memcpy DtoD (Device -> Device)", "gpu_memcpy", 0, 1, meta={"bytes": "2048"}), "memcpy", 2048),
    (FakeEvent("Memset (Device)", "gpu_memset", 0, 1), "memset", 0),
    (FakeEvent("aten::mm", "cpu_op", 0, 1), "operator", 0),
    (FakeEvent("ProfilerStep#1", "user_annotation", 0, 1), None, 0),
    (FakeEvent("torch/nn/modules/module.py(1): _call_impl", "python_function", 0, 1), None, 0),
])
def test_kineto_events_are_read_by_their_activity_type(event, kind, nbytes):
    got = activity(event)
    assert (None if got is None else (got.kind, got.nbytes)) == (kind and (kind, nbytes))


class EventOf211:
    """What torch 2.11 (the lent GPU image's) gives of a ``_KinetoEvent``: no ``activity_type``, no
    ``extra_meta``; the device type as an enum and the annotation flag."""

    def __init__(self, name: str, device: str, annotation: bool = False, nbytes: int = 0) -> None:
        self._name, self._device, self._annotation, self._nbytes = name, device, annotation, nbytes

    def name(self) -> str:
        return self._name

    def device_type(self) -> object:
        return type("DeviceType", (), {"__str__": lambda _: f"DeviceType.{self._device}"})()

    def is_user_annotation(self) -> bool:
        return self._annotation

    def start_ns(self) -> int:
        return 0

    def end_ns(self) -> int:
        return 1000

    def start_thread_id(self) -> int:
        return 1

    def nbytes(self) -> int:
        return self._nbytes

    def metadata_json(self) -> str:
        return '"bytes": 4096' if self._name.startswith("Memset") else ""


@pytest.mark.parametrize(("event", "kind", "nbytes"), [
    (EventOf211("cudaLaunchKernel", "CPU"), "launch", 0),
    (EventOf211("cuLaunchKernel", "CPU"), "launch", 0),
    (EventOf211("cudaMemcpyAsync", "CPU"), None, 0),
    (EventOf211("aten::relu", "CPU"), "operator", 0),
    (EventOf211("## forward ##", "CPU", annotation=True), None, 0),
    (EventOf211("## forward ##", "CUDA", annotation=True), None, 0),
    (EventOf211("void at::native::vectorized_elementwise_kernel<4, ...>", "CUDA"), "kernel", 0),
    (EventOf211("Memcpy HtoD (Pageable -> Device)", "CUDA", nbytes=512), "memcpy", 512),
    (EventOf211("Memset (Device)", "CUDA"), "memset", 4096),
])
def test_a_torch_without_activity_types_reads_them_by_device_and_name(event, kind, nbytes):
    got = activity(event)
    assert (None if got is None else (got.kind, got.nbytes)) == (kind and (kind, nbytes))


def test_real_profiler_events_read_alike_with_and_without_their_activity_type():
    class Without:
        """A real event, as a torch that names no activity type shows it."""

        def __init__(self, event: object) -> None:
            self._event = event

        def __getattr__(self, attribute: str) -> object:
            if attribute in ("activity_type", "extra_meta"):
                raise AttributeError(attribute)
            return getattr(self._event, attribute)

    x = torch.ones(64, 64)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profiler:
        torch.mm(x, x).relu_()
    events = profiler.profiler.kineto_results.events()
    read = [activity(e) for e in events]
    assert [activity(Without(e)) for e in events] == read
    assert {"aten::mm", "aten::relu_"} <= {a.name for a in read if a is not None and a.kind == "operator"}


def _fake_profiler(events: list[FakeEvent], stop_error: Exception | None = None) -> type:
    """A torch.profiler.profile whose run records ``events`` (or fails to stop)."""

    class Profiler:
        def __init__(self, activities: list[object]) -> None:
            self.activities = activities
            self.profiler = self

        def start(self) -> None:
            self.kineto_results = None

        def stop(self) -> None:
            if stop_error:
                raise stop_error
            self.kineto_results = self

        def events(self) -> list[FakeEvent]:
            return events

    return Profiler


@pytest.fixture
def fake_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)


def test_a_cuda_profile_reads_kernels_copies_and_launches(monkeypatch, fake_cuda):
    events = [FakeEvent("cudaLaunchKernel", "cuda_runtime", 0, 2), FakeEvent("aten::mm", "cpu_op", 0, 3),
              FakeEvent("ampere_sgemm_128x64_nn", "kernel", 5, 45),
              FakeEvent("Memcpy DtoH (Device -> Pinned)", "gpu_memcpy", 45, 50, nbytes=4096)]
    monkeypatch.setattr(torch.profiler, "profile", _fake_profiler(events))
    calls = []
    got = profile(lambda: calls.append(1), calls=2, device="cuda")
    assert isinstance(got, KernelSummary) and calls == [1, 1]
    assert got.device == "cuda" and got.launches == 0.5
    assert got.kernels == (KernelStat("ampere_sgemm_128x64_nn", 0.5, 20.0),)
    assert got.copies == (CopyStat("DtoH", 0.5, 2048, 2.5),)


def test_a_cuda_profile_keeps_the_sm_clock_where_nvml_reads_it_and_goes_on_without(monkeypatch, fake_cuda):
    monkeypatch.setattr(torch.profiler, "profile", _fake_profiler([FakeEvent("k", "kernel", 0, 1)]))
    monkeypatch.setattr(torch.cuda, "clock_rate", lambda: 1755)
    clocked = profile(lambda: None, device="cuda")
    assert isinstance(clocked, KernelSummary) and clocked.sm_clock_mhz == 1755.0

    def no_nvml() -> int:
        raise ModuleNotFoundError("pynvml does not seem to be installed")

    monkeypatch.setattr(torch.cuda, "clock_rate", no_nvml)
    unclocked = profile(lambda: None, device="cuda")
    assert isinstance(unclocked, KernelSummary) and unclocked.sm_clock_mhz is None
    # kept in JSON, and the median of runs where some read it is theirs
    assert KernelSummary.from_json(clocked.to_json()) == clocked
    assert median_of([clocked, unclocked, clocked]).sm_clock_mhz == 1755.0
    assert median_of([unclocked]).sm_clock_mhz is None
    slower = dataclasses.replace(clocked, sm_clock_mhz=1500.0)
    rows = {r[0]: r for r in explain(clocked, slower).rows_for_table()}
    assert rows["SM clock"][1:4] == ("1755 MHz", "1500 MHz", "-14.5%")


def test_launches_with_no_kernel_recorded_mean_another_tool_holds_cupti(monkeypatch, fake_cuda):
    events = [FakeEvent("cudaLaunchKernel", "cuda_runtime", 0, 2)]
    monkeypatch.setattr(torch.profiler, "profile", _fake_profiler(events))
    got = profile(lambda: None, device="cuda")
    assert isinstance(got, Unavailable) and "CUPTI" in got.reason


def test_a_profiler_that_cannot_start_is_unavailable_not_an_error(monkeypatch):
    def refuse(**_: object) -> None:
        raise RuntimeError("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: another profiler is attached\n"
                           "more detail")

    monkeypatch.setattr(torch.profiler, "profile", refuse)
    calls = []
    got = profile(lambda: calls.append(1), device="cpu")
    assert got == Unavailable("the profiler could not start: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: "
                              "another profiler is attached.")
    assert calls == []


def test_a_profiler_already_running_is_left_alone():
    x = torch.randn(8, 8)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as outer:
        got = profile(lambda: x @ x, device="cpu")
        x @ x
    assert got == Unavailable("another profiler is running, and profiling now would cancel its trace.")
    assert "aten::mm" in {e.name() for e in outer.profiler.kineto_results.events()}  # its trace is whole


def test_a_profiler_that_fails_to_stop_is_unavailable(monkeypatch):
    monkeypatch.setattr(torch.profiler, "profile", _fake_profiler([], stop_error=RuntimeError("Kineto died")))
    assert profile(lambda: None, device="cpu") == Unavailable("the profiler failed to stop: Kineto died.")


def test_the_works_own_error_is_not_swallowed(monkeypatch):
    monkeypatch.setattr(torch.profiler, "profile", _fake_profiler([]))

    def broken() -> None:
        raise ValueError("wrong shape")

    with pytest.raises(ValueError, match="wrong shape"):
        profile(broken, device="cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine with CUDA profiles it")
def test_a_cuda_summary_without_cuda_is_unavailable():
    got = profile(lambda: None, device="cuda")
    assert isinstance(got, Unavailable) and "no CUDA device" in got.reason


def test_the_real_cpu_profiler_sees_each_operator_once_per_call():
    x = torch.randn(32, 32)

    def work() -> torch.Tensor:
        return torch.relu(x @ x)

    work()
    got = profile(work, calls=3, device="cpu")
    assert isinstance(got, KernelSummary), got
    names = {k.name: k for k in got.kernels}
    assert names["aten::mm"].count * got.calls == 3
    assert names["aten::relu"].count == 1.0
    assert got.device == "cpu" and got.calls == 3 and got.launches == 0
    assert 0 < got.gpu_busy_s <= got.host_s
    assert got.kernel_us <= got.gpu_busy_s * 1e6 * 1.001  # self times add up to no more than the operators


def _summary(kernels: dict[str, tuple[float, float]], launches: float = 10, host_s: float = 0.002,
             busy_s: float = 0.001, copies: tuple[CopyStat, ...] = ()) -> KernelSummary:
    return KernelSummary(device="cuda", calls=1, host_s=host_s, gpu_busy_s=busy_s, launches=launches,
                         kernels=tuple(KernelStat(n, c, t) for n, (c, t) in kernels.items()), copies=copies)


def test_a_summary_round_trips_through_json():
    before = _summary({"gemm": (2, 300.5), OTHER: (7, 12.0)}, copies=(CopyStat("HtoD", 1, 4096, 3.25),))
    raw = before.to_json()
    assert raw["version"] == 1
    assert KernelSummary.from_json(json.loads(json.dumps(raw))) == before


def test_a_summary_of_a_newer_version_or_with_a_field_missing_is_refused():
    raw = _summary({"gemm": (1, 1.0)}).to_json()
    with pytest.raises(BaselineError, match="newer"):
        KernelSummary.from_json(raw | {"version": 2})
    with pytest.raises(BaselineError, match="host_s"):
        KernelSummary.from_json({k: v for k, v in raw.items() if k != "host_s"})


def test_the_median_counts_a_kernel_missing_from_a_run_as_zero_there():
    runs = [_summary({"gemm": (1, 100.0), "add": (2, 10.0)}, launches=3, host_s=0.003),
            _summary({"gemm": (1, 120.0), "add": (2, 12.0), "rare": (1, 50.0)}, launches=5, host_s=0.001),
            _summary({"gemm": (1, 110.0)}, launches=4, host_s=0.002,
                     copies=(CopyStat("HtoD", 1, 1000, 5.0),))]
    got = median_of(runs)
    assert got.kernels == (KernelStat("gemm", 1, 110.0), KernelStat("add", 2, 10.0))  # "rare": in 1 run of 3
    assert (got.launches, got.host_s, got.calls) == (4, 0.002, 3)
    assert got.copies == ()  # in one run of three


def test_the_median_of_no_summary_or_of_two_devices_is_an_error():
    with pytest.raises(UsageError):
        median_of([])
    cpu = KernelSummary(device="cpu", calls=1, host_s=1.0, gpu_busy_s=1.0, launches=0, kernels=())
    with pytest.raises(UsageError, match="devices"):
        median_of([cpu, _summary({})])


def test_reading_summaries_needs_no_torch():
    """A machine that only compares summaries needs no torch: torch is imported inside ``profile`` alone."""
    code = ("import sys, perfkit.explain.summary, perfkit.explain.diff, perfkit.explain.names; "
            "print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
