"""Kernel summaries as a user meets them: recorded by --perfkit-explain after the timed rounds, kept by a
baseline as the median of its runs, and read beside a regressed row in the verdict, the terminal's summary
and perfkit compare."""
from __future__ import annotations

import copy
import json
import statistics

from perfkit import SCHEMA_VERSION
from perfkit.explain import record
from perfkit.explain.summary import CopyStat, KernelStat, KernelSummary, Unavailable
from perfkit.measure.timing import MIN_ROUND_S
from perfkit.pbench import PROFILED_CALLS
from perfkit.render import verdicts
from perfkit.store.baselines import from_runs
from tests.conftest import judged, typed

PLUGIN = ("-p", "perfkit.plugin")

TIMED = """
import torch
x = torch.randn(128, 128)
def test_call(benchmark):
    benchmark(lambda: torch.relu(x @ x))
def test_pedantic(benchmark):
    made = []
    def setup():
        made.append(1)
        return (torch.randn(64, 64),), {}
    benchmark.pedantic(lambda y: y @ y, setup=setup, rounds=3)
    assert len(made) == 3  # the extra call comes after the test body: its own setup, not counted here
def test_elsewhere(benchmark):
    from perfkit.pbench import inject_samples
    inject_samples(benchmark, [0.01, 0.011])
"""


def test_explain_profiles_one_more_call_of_each_benchmarks_work_after_its_timed_rounds(pytester, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    pytester.makepyfile(TIMED)
    out = pytester.path / "r.json"
    # in a process of its own: an in-process pytest re-imports torch's modules, and torch.profiler then
    # cannot register its operators a second time (the profiler says so, and the summary is Unavailable)
    result = pytester.runpytest_subprocess(*PLUGIN, "--perfkit-device=cpu", "--perfkit-baseline=none",
                                           "--perfkit-explain", f"--benchmark-json={out}")
    result.assert_outcomes(passed=3)
    written = {b["name"]: b for b in json.loads(out.read_text())["benchmarks"]}
    found = {name: b["extra_info"] for name, b in written.items()}
    call = KernelSummary.from_json(found["test_call"][KernelSummary.TAG], "test_call")
    # as many calls as filled a timed round at the rounds' pace (one call's host time is the profiler's)
    pace = statistics.median(written["test_call"]["stats"]["data"])
    assert call.device == "cpu" and call.calls == max(1, min(PROFILED_CALLS, round(MIN_ROUND_S / pace))) > 1
    assert "aten::mm" in {k.name for k in call.kernels}
    assert next(k for k in call.kernels if k.name == "aten::mm").count == 1.0  # per call of the work
    assert found["test_call"][record.COST_KEY] >= 0
    pedantic = KernelSummary.from_json(found["test_pedantic"][KernelSummary.TAG], "test_pedantic")
    assert "aten::mm" in {k.name for k in pedantic.kernels} and pedantic.calls == 1  # each call sets up
    assert found["test_elsewhere"][record.UNAVAILABLE_KEY] == record.ELSEWHERE


KEPT = """
import gc, weakref
import torch
refs = []
def test_a(benchmark):
    big = torch.zeros(1024)
    refs.append(weakref.ref(big))
    benchmark.pedantic(lambda x: x + 1, args=(big,), rounds=2)
def test_b():
    gc.collect()
    assert refs[0]() is None, "test_a's tensor outlived it"
"""


def test_a_benchmarks_work_is_let_go_once_it_is_profiled(pytester, monkeypatch):
    """pytest-benchmark keeps every fixture to the session's end: the call kept for the profile must not keep
    the benchmark's model and data alive through the benchmarks after it."""
    monkeypatch.delenv("COLUMNS", raising=False)
    pytester.makepyfile(KEPT)
    result = pytester.runpytest_subprocess(*PLUGIN, "--perfkit-device=cpu", "--perfkit-baseline=none",
                                           "--perfkit-explain")
    result.assert_outcomes(passed=2)


def test_without_explain_no_call_is_profiled(pytester, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    pytester.makepyfile(TIMED)
    out = pytester.path / "r.json"
    pytester.runpytest(*PLUGIN, "--perfkit-device=cpu", "--perfkit-baseline=none", f"--benchmark-json={out}")
    for bench in json.loads(out.read_text())["benchmarks"]:
        assert KernelSummary.TAG not in bench["extra_info"] and record.COST_KEY not in bench["extra_info"]


class _Benchmark:
    def __init__(self) -> None:
        self.extra_info: dict = {}


def test_a_failing_extra_call_or_profiler_says_why_and_never_fails_the_benchmark(monkeypatch):
    bench = _Benchmark()

    def broken() -> None:
        raise RuntimeError("CUDA error: an illegal memory access\nmore lines")

    monkeypatch.setattr(record, "profile", lambda fn, **_: fn())  # the call under a profiler that started
    record.record(bench, broken, "cpu")
    assert bench.extra_info[record.UNAVAILABLE_KEY] == ("a profiled call of its work failed: CUDA error: an "
                                                       "illegal memory access")
    monkeypatch.setattr(record, "profile", lambda *a, **k: Unavailable("the profiler could not start: CUPTI"))
    other = _Benchmark()
    record.record(other, lambda: None, "cuda")
    assert other.extra_info[record.UNAVAILABLE_KEY] == "the profiler could not start: CUPTI"


def test_a_profiled_call_past_the_benchmarks_limit_reads_unavailable_and_the_benchmark_passes(pytester,
                                                                                               monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    pytester.makepyfile("""
import time
calls = []
def test_slow_once_more(benchmark):
    def work():
        calls.append(1)
        if len(calls) > 3:  # the timed rounds are quick; the extra call hangs
            time.sleep(30)
    benchmark.pedantic(work, rounds=3)
""")
    out = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(*PLUGIN, "--perfkit-device=cpu", "--perfkit-baseline=none",
                                           "--perfkit-explain", "--perfkit-timeout=3",
                                           f"--benchmark-json={out}")
    result.assert_outcomes(passed=1)
    extra = json.loads(out.read_text())["benchmarks"][0]["extra_info"]
    assert "ran past 3 s" in extra[record.UNAVAILABLE_KEY]


def _summary(gemm_us: float, extra: float = 0.0, host_s: float = 0.001) -> dict:
    kernels = [KernelStat("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_kernel", 1, gemm_us)]
    if extra:
        kernels.append(KernelStat("void at::native::vectorized_elementwise_kernel<4, AddFunctor>(...)", 1,
                                  extra))
    return KernelSummary("cuda", 1, host_s, (gemm_us + extra) * 1e-6, len(kernels), tuple(kernels),
                         (CopyStat("HtoD", 1, 4096, 2.0),)).to_json()


def _with_summary(results: dict, name: str, summary: dict) -> dict:
    out = copy.deepcopy(results)
    for bench in out["benchmarks"]:
        if bench["fullname"] == name:
            bench["extra_info"][KernelSummary.TAG] = summary
    return out


def _results(seconds: float, summary: dict | None) -> dict:
    """A minimal result set of one CPU benchmark timed at ``seconds`` (five rounds), with ``summary``."""
    extra = {} if summary is None else {KernelSummary.TAG: summary}
    bench = {"fullname": NAME, "name": "b", "group": None, "extra_info": extra,
             "stats": {"data": [seconds] * 5, "median": seconds, "iqr": 0.0, "rounds": 5}}
    info = {"schema_version": SCHEMA_VERSION, "hardware_id": "cpu-test", "fingerprint": {}, "ceilings": {}}
    return {"benchmarks": [bench], "machine_info": {"perfkit": info}}


NAME = "benches/test_x.py::test_layer[conv-forward]"


def test_a_baseline_keeps_the_median_summary_of_its_runs():
    runs = [typed(_results(1.0, _summary(us))) for us in (100.0, 120.0, 400.0)]
    kept = record.of(from_runs(runs).by_name()[NAME])
    assert isinstance(kept, KernelSummary) and kept.kernels[0].total_us == 120.0  # the median, not the mean


def test_a_regressed_row_says_which_kernel_moved_and_an_old_baseline_says_it_has_no_summary():
    baseline = from_runs([typed(_results(s, _summary(1000.0))) for s in (1.0, 1.002, 0.998)])
    current = typed(_results(1.2, _summary(1000.0, extra=200.0)))
    cmp = judged(baseline, current)
    why = {w.benchmark: w for w in cmp.why}
    assert why[NAME].verdict == "regressed"
    assert why[NAME].reading.startswith("new kernel") and "vectorized_elementwise_kernel" in why[NAME].reading
    lines = verdicts.summary_lines(cmp, "baseline.json")
    assert any(line.startswith("  why test_layer[conv-forward]: new kernel") for line in lines)
    assert "Why they moved" in verdicts.render(cmp, "terminal")
    assert json.loads(verdicts.render(cmp, "json"))["why"][0]["benchmark"] == NAME
    old = judged(from_runs([typed(_results(s, None)) for s in (1.0, 1.002, 0.998)]), current)
    assert {w.benchmark: w.reading for w in old.why}[NAME].startswith("no kernel summary in the baseline")
    hint = "  which kernels moved: a run with"
    assert any(line.startswith(hint) for line in verdicts.summary_lines(old, "b"))
    unchanged = judged(baseline, typed(_results(1.0, _summary(1000.0))))
    assert unchanged.why == ()  # only regressed and improved benchmarks are explained


def test_a_benchmark_whose_work_records_no_operator_says_so_instead_of_an_empty_table():
    """A pure-Python benchmark profiles no operator on either side: its explanation said an empty table and a
    host change of one profiled call; its time is the host's own work, and the sentence says that."""
    def python_only(host_s: float) -> dict:
        return KernelSummary("cpu", 1, host_s, 0.0, 0, ()).to_json()

    baseline = from_runs([typed(_results(s, python_only(0.001))) for s in (1.0, 1.002, 0.998)])
    cmp = judged(baseline, typed(_results(1.5, python_only(0.0034))))
    (why,) = cmp.why
    assert why.explanation is None
    assert why.reading == ("no operator recorded on either side: its time is the host's own work (Python), "
                           "which a kernel summary does not break down")
    lost = KernelSummary("cuda", 1, 0.0034, 0.0, 5, ()).to_json()  # launches, their kernels not recorded
    (why,) = judged(baseline, typed(_results(1.5, lost))).why
    assert "host's own work" not in why.reading
