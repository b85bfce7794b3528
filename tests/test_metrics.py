from __future__ import annotations

import pytest

from perfkit.errors import BaselineError, UsageError
from perfkit.resultfile import figures
from perfkit.resultfile.metrics import Method, Metric, MetricRecorder, MetricSpec
from perfkit.resultfile.model import BenchmarkEntry, Context


def test_recorded_metrics_follow_the_json_contract():
    extra: dict = {}
    rec = MetricRecorder(extra)
    rec.record(figures.BANDWIDTH, samples=[3.0, 1.0, 2.0])
    rec.record(figures.TOTAL_FLOPS, 1234)
    rec.record(figures.PEAK_ALLOCATED_MIB, 5.0)
    assert extra["metrics"]["bandwidth_gbps"] == {"value": 2.0, "unit": "GB/s", "better": "higher",
                                                  "samples": [3.0, 1.0, 2.0]}
    assert extra["metrics"]["total_flops"] == {"value": 1234.0, "unit": "FLOP", "better": "none"}
    assert (
        extra["metrics"]["peak_allocated_mib"]["gate"] is True
    )  # a gating figure is declared so in the catalogue
    entry = BenchmarkEntry.from_json({"fullname": "b", "stats": {"median": 1.0}, "extra_info": extra}, "test")
    assert set(entry.metrics) == {"bandwidth_gbps", "total_flops", "peak_allocated_mib"}
    assert entry.gating_figures() == {"time", "peak_allocated_mib"}


def test_absent_metrics_carry_a_reason_not_a_zero():
    extra: dict = {}
    MetricRecorder(extra).absent(figures.AVG_POWER_W, "NVML is not available")
    assert extra == {"metrics_absent": {"avg_power_w": "NVML is not available"}}


def test_the_context_the_judge_reads_is_written_through_its_own_methods():
    extra: dict = {}
    recorder = MetricRecorder(extra)
    recorder.gate_on(figures.KERNEL_S)
    recorder.bound_by(figures.COPY_BANDWIDTH)
    recorder.tolerance(0.03)
    assert Context.from_extra(extra) == Context("kernel_s", "copy_bandwidth_gbps", 0.03, gpu_bound=True)
    declared: dict = {}
    MetricRecorder(declared).gpu_bound()
    assert Context.from_extra(declared).gpu_bound and Context.from_extra(declared).to_extra() == declared
    recorder.informational("a count, not a speed")
    assert (
        Context.from_extra(extra).gate is None
        and Context.from_extra(extra).informational == "a count, not a speed"
    )
    with pytest.raises(UsageError, match="says why"):
        recorder.informational(" ")
    with pytest.raises(UsageError, match="its own method"):
        recorder.info("bound", "copy_bandwidth_gbps")
    with pytest.raises(UsageError, match="a fraction between 0 and 1"):
        recorder.tolerance(5)


@pytest.mark.parametrize("value, samples, better, match", [
    (1.0, None, "up", "better"),
    (float("nan"), None, "lower", "finite"),
    (None, None, "lower", "needs a value or samples"),
])
def test_bad_metrics_are_refused(value, samples, better, match):
    with pytest.raises(UsageError, match=match):
        MetricRecorder({}).record(MetricSpec("m", "s", better), value, samples)


def test_a_malformed_stored_metric_is_a_baseline_error():
    with pytest.raises(BaselineError, match="'m' is malformed"):
        BenchmarkEntry.from_json({"fullname": "b", "stats": {"median": 1.0},
                                  "extra_info": {"metrics": {"m": {"value": "fast"}}}}, "test")


def test_every_figure_has_one_unit():
    specs = [v for v in vars(figures).values() if isinstance(v, MetricSpec)]
    specs += [figures.matmul_ceiling(p) for p in figures.PRECISIONS]
    units: dict[str, set[str]] = {}
    for spec in specs:
        units.setdefault(spec.name, set()).add(spec.unit)
    assert all(len(u) == 1 for u in units.values()), {n: u for n, u in units.items() if len(u) > 1}
    assert set(figures.UNITS.items()) <= {(s.name, s.unit) for s in specs}


def test_metric_round_trips_through_json():
    metric = Metric.from_samples([1.0, 2.0, 4.0], "ms", "lower")
    assert Metric.from_json("m", metric.to_json()) == metric


def test_a_count_read_off_the_machine_says_so_and_a_decided_one_stays_as_it_was():
    extra: dict = {}
    rec = MetricRecorder(extra)
    rec.record(figures.DRAM_BYTES, 136285952)  # declared read off the machine
    rec.record(figures.NUM_CONV, 1412, exact=False)  # this run's search filled the card's free memory
    rec.record(figures.NUM_FC, 110)
    stored = extra["metrics"]
    assert stored["dram_bytes"]["exact"] is False and stored["num_conv"]["exact"] is False
    assert "exact" not in stored["num_fc"]  # files written before the key read the same
    assert Metric.from_json("num_conv", stored["num_conv"]).exact is False
    assert Metric.from_json("num_fc", stored["num_fc"]).exact is True


def test_a_benchmark_records_the_method_its_figures_were_measured_by():
    extra: dict = {}
    recorder = MetricRecorder(extra)
    recorder.record(figures.KERNEL_S, samples=[8e-6, 9e-6])
    recorder.measured_by(figures.KERNEL_ALONE)
    assert extra["methods"] == {"kernel_s": 2, "bandwidth_gbps": 2, "share_of_datasheet": 2,
                                "share_of_copy_peak": 2}  # those computed from it too, the derived pass's
    entry = BenchmarkEntry.from_json({"fullname": "b", "stats": {"median": 1.0}, "extra_info": extra}, "test")
    assert entry.method("kernel_s") == 2 and entry.method("time") == 1  # a figure not named: version 1
    plain = BenchmarkEntry.from_json({"fullname": "b", "stats": {"median": 1.0},
                                      "extra_info": {"methods": {"kernel_s": 1}}}, "test")
    assert plain.methods == {} and plain.method("kernel_s") == 1
    with pytest.raises(UsageError, match="measured_by"):
        recorder.info("methods", {})


@pytest.mark.parametrize("methods", [{"kernel_s": True}, {"kernel_s": 0}, {"kernel_s": "2"}, [2]])
def test_a_malformed_method_version_is_a_baseline_error(methods):
    with pytest.raises(BaselineError, match="not an object of method versions"):
        BenchmarkEntry.from_json({"fullname": "b", "stats": {"median": 1.0},
                                  "extra_info": {"methods": methods}}, "test")


def test_a_method_covers_the_runs_from_its_first_on_and_applies_to_its_benchmarks_on_its_device():
    method = figures.KERNEL_ALONE
    assert method.covers("2026-11-23T13:45:58.725042+00:00") and method.covers("2026-11-24T00:00:00")
    assert not method.covers("2026-11-23T12:05:12.028093+00:00") and not method.covers("")
    assert method.covers("2026-11-23T15:45:58+02:00") and not method.covers("2026-11-23T14:45:57+01:00")
    assert method.applies_to("benches/test_vector_add.py::test_gpu_explicit[K1-grid]", "cuda")
    assert not method.applies_to("benches/test_vector_add.py::test_gpu_explicit[K100-grid]", "cuda")
    relu = "benches/test_layers.py::test_layer[relu-forward]"
    assert figures.LAYER_CALLS_BACK_TO_BACK.applies_to(relu, "cuda")
    assert not figures.LAYER_CALLS_BACK_TO_BACK.applies_to(relu, "cpu")  # one call a round on a CPU, as ever
    step = "benches/test_model_memory.py::test_training_memory[{}-resnet50]"
    swept = figures.LAUNCH_BOUND_FASTEST_CORE  # the benchmark sweeps the cores exactly where this says
    assert swept.applies_to(step.format("b32"), "cuda") and not swept.applies_to(step.format("b32"), "cpu")
    assert not any(swept.applies_to(step.format(batch), "cuda") for batch in ("b4", "b128", "b512"))
    with pytest.raises(UsageError, match="a version from 2 up"):
        Method(1, "the first way", "2026-11-23T13:45:58+00:00", ("time",), ("b",))
    with pytest.raises(UsageError, match="ISO date of its first run"):
        Method(2, "another way", "soon", ("time",), ("b",))


def test_each_method_is_found_by_its_figure_and_version():
    grid = "benches/test_vector_add.py::test_gpu_explicit[K1-grid]"
    assert figures.method_of(grid, "kernel_s", 2) is figures.KERNEL_ALONE
    assert figures.method_of(grid, "kernel_s", 1) is None  # the first way has no declaration
    assert figures.method_of("benches/test_ceilings.py::test_matmul_flops[tf32]", "time", 2) is \
        figures.SUSTAINED_MATMUL
    # one version, several methods: each benchmark finds its own by its id
    family = "benches/test_data_parallel.py::"
    assert figures.method_of(family + "test_ddp[r18-gpus2]", "time", 2) is figures.DDP_HEURISTIC_CONVS
    assert figures.method_of(family + "test_dataparallel[r18-gpus1]", "throughput_vs_ddp", 2) is \
        figures.THROUGHPUT_OVER_HEURISTIC_DDP
    large = "benches/test_large_batch.py::test_large_batch_accuracy[gpus1-B128]"
    assert figures.method_of(large, "train_s", 2) is figures.LARGE_BATCH_HEURISTIC_CONVS
    first = "benches/test_vector_add.py::test_gpu_managed[K{}-grid-first]"
    assert figures.method_of(first.format(1), "time", 3) is figures.MANAGED_FIRST_BESIDE_TOUCH
    assert figures.method_of(first.format(100), "time", 3) is figures.MANAGED_FIRST_LARGE_BESIDE_TOUCH
    forty = figures.MANAGED_FIRST_BESIDE_TOUCH_FORTY
    assert figures.method_of(first.format(1), "over_first_touch", 4) is forty
    # one version, two methods of one figure: the 100 M launches' fourth way is the prefetch
    prefetched = figures.MANAGED_FIRST_LARGE_PREFETCHED
    assert figures.method_of(first.format(100), "over_first_touch", 4) is prefetched
    assert all(m.version >= 2 and m.figures and m.benchmarks for m in figures.METHODS)
