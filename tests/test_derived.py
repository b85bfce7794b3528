"""Cross-benchmark figures from one pure pass over finished results: order- and selection-independent."""
from __future__ import annotations

import copy
import json

import pytest

from perfkit import SCHEMA_VERSION
from perfkit.resultfile import derived, load
from perfkit.resultfile.ceilings import Ceilings
from perfkit.resultfile.metrics import MetricRecorder, MetricSpec
from perfkit.resultfile.model import BenchmarkEntry, ResultSet
from perfkit.resultfile.payloads import (
    Ppp,
    PppLayer,
    RatePeak,
    Roofline,
    RooflinePoint,
    Scaling,
    VectorAdd,
    VggSwap,
)
from tests.conftest import ROOT, judged, typed, words

BASELINES = sorted((ROOT / "baselines").glob("*.json"))


def _bench(name: str, median: float, *records, metrics: dict | None = None) -> dict:
    extra: dict = {}
    recorder = MetricRecorder(extra)
    for record in records:
        recorder.payload(record)
    for metric, value in (metrics or {}).items():
        recorder.record(MetricSpec(metric, "", "higher"), value)
    return {
        "fullname": f"benches/x.py::{name}",
        "name": name,
        "stats": {"median": median, "data": [median] * 5},
        "extra_info": extra,
    }


def _results(*benches, ceilings: dict | None = None, lender: dict | None = None) -> ResultSet:
    """The benches as a result set, derived (``lender``: the ceilings a baseline of the machine lends)."""
    raw = {
        "benchmarks": list(benches),
        "machine_info": {
            "perfkit": {
                "schema_version": SCHEMA_VERSION,
                "hardware_id": "h200",
                "ceilings": dict(ceilings or {}),
                "fingerprint": {"datasheet_key": "h200"},
            }
        },
    }
    return derived.derive(load.typed(raw, "test"), _lent(lender) if lender else None)


def _lent(ceilings: dict) -> Ceilings:
    return Ceilings.of(load.typed({"benchmarks": [], "machine_info": {"perfkit": {
        "schema_version": SCHEMA_VERSION, "ceilings": ceilings}}}, "baseline"))


def _named(results: ResultSet, name: str) -> BenchmarkEntry:
    return next(b for b in results.benchmarks if b.name == name)


def _swap_pair() -> list[dict]:
    return [_bench("normal", 2.0, VggSwap("normal", "forward", "cuda", (8, 3, 224, 224)),
                   metrics={"peak_allocated_mib": 100.0}),
            _bench("swapped", 1.5, VggSwap("swapped", "forward", "cuda", (8, 3, 224, 224)),
                   metrics={"peak_allocated_mib": 80.0})]


def test_swap_ratios_do_not_depend_on_the_order_of_the_benchmarks():
    forward = _results(*_swap_pair())
    backward = _results(*reversed(_swap_pair()))
    for results in (forward, backward):
        swapped = _named(results, "swapped")
        assert swapped.value("time_ratio_vs_normal") == pytest.approx(0.75)
        assert swapped.value("memory_ratio_vs_normal") == pytest.approx(0.8)


def test_a_missing_partner_leaves_the_figure_absent_with_the_reason():
    (swapped,) = _results(_swap_pair()[1]).benchmarks
    assert "time_ratio_vs_normal" not in swapped.metrics
    assert "normal VGG16 (cuda, forward) is not in this result set" in swapped.absent["time_ratio_vs_normal"]


def test_a_ratio_over_a_time_of_zero_is_absent_with_the_reason_never_a_crash():
    zero = [dict(b, stats={**b["stats"], "median": 0.0}) for b in _swap_pair()]
    swapped = _named(_results(*zero), "swapped")
    assert "time_ratio_vs_normal" not in swapped.metrics
    assert swapped.absent["time_ratio_vs_normal"] == derived.OVER_ZERO
    assert swapped.value("memory_ratio_vs_normal") == pytest.approx(0.8)  # its partner's memory is not 0
    vector = _results(_bench("cpu", 0.075, VectorAdd("cpu_loop", "cpu", 100)),
                      _bench("grid", 0.0, VectorAdd("grid", "explicit", 100)))
    assert vector.benchmarks[1].absent["speedup_vs_cpu"] == derived.OVER_ZERO


def test_a_committed_baseline_with_every_time_zeroed_compares_in_both_directions(tmp_path, capsys):
    from perfkit import cli

    raw = json.loads((ROOT / "baselines" / "cpu-amd-epyc-2cpu-quick.json").read_text())
    raw["machine_info"]["perfkit"].pop("runs")
    for bench in raw["benchmarks"]:
        stats = bench["stats"]
        stats.update({key: 0.0 for key in ("min", "max", "mean", "median", "q1", "q3", "total")},
                     data=[0.0] * len(stats["data"]))
    zero = tmp_path / "zero.json"
    zero.write_text(json.dumps(raw))
    committed = str(ROOT / "baselines" / "cpu-amd-epyc-2cpu-quick.json")
    # as the baseline, the one zeroed run is not judged (one run); as the run judged, it has no log scale
    for pair, said in (((committed, str(zero)), "a zero or negative figure: no log scale"),
                       ((str(zero), committed), "not judged: needs 3 baseline runs (it has 1)")):
        assert cli.main(["compare", *pair]) == 0
        out, err = capsys.readouterr()
        # one run as the baseline and a saved baseline judged against it: said on stderr, judged as given
        swapped = "the order is BASELINE then CURRENT; judged as given" if pair[0] == str(zero) else ""
        assert (swapped in err if swapped else err == "") and said in out


def test_speedup_over_the_cpu_loop_at_the_same_k():
    results = _results(_bench("cpu", 0.075, VectorAdd("cpu_loop", "cpu", 100)),
                       _bench("grid", 0.150, VectorAdd("grid", "explicit", 100)),
                       _bench("grid5", 0.01, VectorAdd("grid", "explicit", 5)))
    grid, grid5 = results.benchmarks[1:]
    assert grid.value("speedup_vs_cpu") == pytest.approx(0.5)
    assert "K=5" in grid5.absent["speedup_vs_cpu"]


def test_a_rate_becomes_a_share_of_this_runs_ceiling_else_of_the_baselines():
    layer = _bench("relu", 1e-4, RatePeak("copy_bandwidth_gbps", 4800.0), metrics={"bandwidth_gbps": 3600.0})
    ceiling = _bench("copy", 2e-3, metrics={"copy_bandwidth_gbps": 4000.0})
    ran = _results(copy.deepcopy(layer), ceiling)
    assert ran.benchmarks[0].value("share_of_copy_peak") == pytest.approx(0.9)
    assert ran.info.ceilings == {"copy_bandwidth_gbps": 4000.0}
    alone = _results(copy.deepcopy(layer), lender={"copy_bandwidth_gbps": 4500.0})
    assert alone.benchmarks[0].value("share_of_copy_peak") == pytest.approx(0.8)
    assert alone.info.lent_ceilings == {"copy_bandwidth_gbps": 4500.0} and alone.info.ceilings == {}
    again = derived.derive(
        load.typed(alone.to_json(), "again")
    )  # the file derives the same way on its own later
    assert again.benchmarks[0].value("share_of_copy_peak") == pytest.approx(0.8)
    without = _results(copy.deepcopy(layer))
    assert "benches/test_ceilings.py" in without.benchmarks[0].absent["share_of_copy_peak"]


def test_a_rate_above_its_ceiling_is_no_share_of_it_and_says_why():
    layer = _bench("relu", 1e-4, RatePeak("copy_bandwidth_gbps", 4800.0), metrics={"bandwidth_gbps": 290.0})
    (relu, _) = _results(layer, _bench("copy", 2e-3, metrics={"copy_bandwidth_gbps": 42.7})).benchmarks
    assert "share_of_copy_peak" not in relu.metrics
    assert "290 GB/s is above the measured copy_bandwidth_gbps of 42.7" in relu.absent["share_of_copy_peak"]
    assert "cache" in relu.absent["share_of_copy_peak"]
    near = _bench("relu", 1e-4, RatePeak("copy_bandwidth_gbps", 4800.0), metrics={"bandwidth_gbps": 44.0})
    (relu, _) = _results(near, _bench("copy", 2e-3, metrics={"copy_bandwidth_gbps": 42.7})).benchmarks
    assert relu.value("share_of_copy_peak") == pytest.approx(44.0 / 42.7)  # a run's noise, still a share


def test_a_baseline_of_several_runs_divides_by_the_median_of_its_runs_ceilings():
    from perfkit.store.baselines import from_runs

    layer = _bench("relu", 1e-4, RatePeak("copy_bandwidth_gbps", 4800.0), metrics={"bandwidth_gbps": 3600.0})
    runs = [_results(copy.deepcopy(layer), _bench("copy", 2e-3, metrics={"copy_bandwidth_gbps": gbps}))
            for gbps in (4000.0, 7400.0, 3900.0, 4100.0)]  # one outlier, and it is the last run
    combined = from_runs(runs[1:] + runs[:1])
    assert combined.info.ceilings == {"copy_bandwidth_gbps": pytest.approx(4050.0)}
    assert _named(combined, "relu").value("share_of_copy_peak") == pytest.approx(3600.0 / 4050.0)


def test_ppp_and_the_roofline_use_the_ceiling_of_each_layers_math():
    ppp = Ppp("m", 1, "tf32", "fp32", (PppLayer("conv", "Conv2d", 1, 1e-3, int(4e11), None, None),
                                       PppLayer("fc", "Linear", 1, 1e-3, int(5e10), None, None),
                                       PppLayer("relu", "ReLU", 1, 1e-4, 0, None, None)), "FMA = 2")
    roof = Roofline((RooflinePoint("m", 4.5e11, 4.5e9, "analytic minimum", "tf32"),))
    ceilings = {"matmul_tflops_tf32": 400.0, "matmul_tflops_fp32": 50.0, "copy_bandwidth_gbps": 4000.0}
    (bench,) = _results(_bench("ppp", 0.01, ppp, roof), ceilings=ceilings).benchmarks
    ideal = 4e11 / 400e12 + 5e10 / 50e12  # 2 ms at the peaks, measured 10 ms
    assert bench.value("share_of_peak") == pytest.approx(ideal / 0.01)
    assert bench.value("share_of_datasheet") == pytest.approx((4e11 / 494.7e12 + 5e10 / 67e12) / 0.01)
    # intensity 100 FLOP/B is below the tf32 ridge (100 = 400e12 / 4e12): memory roof at 400 TFLOP/s
    assert bench.value("share_of_roof") == pytest.approx(45.0 / 400.0)


def _scaling(method: str, workload: str, key: str, gpus: int, images_per_s: float, step_s: float,
             batch_per_gpu: int = 128) -> dict:
    record = Scaling(method, workload, key, gpus, batch_per_gpu * gpus, batch_per_gpu, 10, 10, 1_000_000)
    return _bench(f"{method}-{workload}-gpus{gpus}", step_s, record, metrics={"images_per_s": images_per_s})


def test_speedups_pair_runs_by_job_not_by_order():
    runs = [_scaling("DDP", "b128-weak", "k128", 2, 20_000.0, 0.0128),
            _scaling("DDP", "B128-strong", "k128", 2, 12_000.0, 0.0107, batch_per_gpu=64),
            _scaling("DDP", "b128-weak", "k128", 1, 12_800.0, 0.010),
            _scaling("DataParallel", "b128-weak", "k128", 2, 10_000.0, 0.0256),
            _scaling("DataParallel", "b128-weak", "k128", 1, 12_000.0, 0.0107)]
    for order in (runs, list(reversed(runs))):
        by_name = {b.name: b for b in _results(*copy.deepcopy(order)).benchmarks}
        weak = by_name["DDP-b128-weak-gpus2"]
        assert weak.value("speedup") == pytest.approx(20_000 / 12_800)
        assert weak.value("scaling_efficiency") == pytest.approx(20_000 / 12_800 / 2)
        assert weak.value("comm_subtraction_ms") == pytest.approx((0.0128 - 128 / 12_800) * 1e3)
        assert by_name["DDP-B128-strong-gpus2"].value("speedup") == pytest.approx(12_000 / 12_800)
        dp = by_name["DataParallel-b128-weak-gpus2"]
        assert dp.value("speedup") == pytest.approx(10_000 / 12_000)
        assert dp.value("throughput_vs_ddp") == pytest.approx(
            10_000 / 20_000
        )  # the weak DDP run, not the strong
    alone = _results(copy.deepcopy(runs[0])).benchmarks[0]
    assert "no 1-GPU DDP run of k128" in alone.absent["speedup"]


@pytest.mark.parametrize("path", BASELINES, ids=[p.stem for p in BASELINES])
def test_the_committed_baselines_derive_idempotently_and_compare_clean_against_themselves(path):
    once = typed(json.loads(path.read_text()))
    twice = derived.derive(once)
    assert twice == once and twice.to_json() == once.to_json()
    result = judged(once, once)
    # nothing moved; a figure too noisy for its minimum effect is not shown unchanged without evidence, and a
    # benchmark that gates on nothing is info
    assert set(words(result.counts())) <= {"unchanged", "unknown", "not judged", "info"}
    assert all("its interval runs from" in r.note for r in result.rows if r.verdict.value == "unknown")


REVERSE = """
def pytest_collection_modifyitems(items):
    items.reverse()
"""


def _run_swap_bench(pytester, select: str = "cpu and forward and not backward") -> dict:
    pytester.makepyfile(test_vgg_swap=(ROOT / "benches" / "test_vgg_swap.py").read_text())
    result = pytester.runpytest_subprocess(
        "-p",
        "perfkit.plugin",
        "--perfkit-device=cpu",
        "--perfkit-baseline=none",
        "-k",
        select,
        "--benchmark-json=out.json",
    )
    result.assert_outcomes(passed=len(json.loads((pytester.path / "out.json").read_text())["benchmarks"]))
    return json.loads((pytester.path / "out.json").read_text())


def _figures(results: dict) -> dict:
    return {b["name"]: (sorted(b["extra_info"]["metrics"]), sorted(b["extra_info"].get("metrics_absent", {})))
            for b in results["benchmarks"]}


@pytest.mark.slow
def test_a_real_run_gives_the_same_figures_in_either_order_and_says_why_one_is_missing(pytester):
    forward = _run_swap_bench(pytester)
    pytester.makeconftest(REVERSE)
    backward = _run_swap_bench(pytester)
    assert [b["name"] for b in backward["benchmarks"]] != [b["name"] for b in forward["benchmarks"]]
    assert _figures(forward) == _figures(backward)
    for results in (forward, backward):
        medians = {
            b["extra_info"]["vgg_swap"]["variant"]: b["stats"]["median"] for b in results["benchmarks"]
        }
        swapped = next(b for b in results["benchmarks"] if "swapped" in b["name"])
        assert swapped["extra_info"]["metrics"]["time_ratio_vs_normal"]["value"] == pytest.approx(
            medians["swapped"] / medians["normal"])
    alone = _run_swap_bench(pytester, "cpu and swapped and forward and not backward")["benchmarks"]
    assert [b["name"] for b in alone] == ["test_vgg16[cpu-swapped-forward]"]
    assert "select it too" in alone[0]["extra_info"]["metrics_absent"]["time_ratio_vs_normal"]
