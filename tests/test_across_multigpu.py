"""The model across hardware on several GPUs: a DDP step is one GPU's step plus the ring all-reduce of its
gradients at the bus bandwidth its run measured (else half its datasheet's NVLink), a run of several GPUs
borrows the launch costs of the one-GPU baseline of its GPU, and what has no figure or no model says why.

The result sets are the stored one-GPU entries of tests/data/baselines/across-*.json (tests/test_across.py)
made into runs of several GPUs as those baselines hold them: no one-element kernel, no ceilings of their
own, a DDP step on one GPU and on several, and where a test says so an all-reduce's bus bandwidth.
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from perfkit import predict
from perfkit.cli import work_of
from perfkit.resultfile import datasheet, load
from perfkit.resultfile.model import ResultSet
from perfkit.verdict import across, multigpu
from perfkit.verdict.expected import (
    ALLREDUCE,
    ALLREDUCE_HIDDEN,
    EAGER,
    NoModel,
    Roofs,
    Step,
    Work,
    estimate,
    recorded_work,
)
from perfkit.workloads import benchwork
from tests.conftest import DATA

H200, H100 = DATA / "baselines" / "across-h200.json", DATA / "baselines" / "across-h100.json"
DDP1 = "benches/test_data_parallel.py::test_ddp[resnet18-cifar-b128-weak-gpus1]"
MiB = 2**20


def ddp(gpus: int) -> str:
    return DDP1.replace("gpus1", f"gpus{gpus}")


def sweep(gpus: int) -> str:
    return f"benches/test_data_parallel.py::test_allreduce_busbw[gpus{gpus}]"


@pytest.fixture(scope="module")
def lenders() -> list[ResultSet]:
    """The one-GPU runs at hand, each with its one-element kernel's launch costs."""
    return [load.load(H200), load.load(H100)]


def _renamed(entry: dict[str, Any], name: str, extra: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(entry)
    out["name"], out["fullname"] = name.split("::")[-1], name
    out["param"] = name.split("[")[-1].rstrip("]")
    out["extra_info"] = extra
    return out


def several(path: Any, gpus: int, step_s: tuple[float, float], busbw: float | None = None,
            sheet: str | None = None, method: str = "DDP") -> ResultSet:
    """The stored one-GPU run as a run of ``gpus`` GPUs holds it: its DDP step on one GPU and on ``gpus``
    (``step_s``: three runs of each), the second by ``method``; ``busbw``: its all-reduce's measured bus
    bandwidth (GB/s); ``sheet``: another datasheet key for its GPU."""
    raw = load.read_json(path)
    info = raw["machine_info"]["perfkit"]
    info["hardware_id"] = info["fingerprint"]["hardware_id"] = info["hardware_id"].replace("-x1", f"-x{gpus}")
    info["fingerprint"]["gpu_count"] = gpus
    if sheet is not None:
        info["fingerprint"]["datasheet_key"] = sheet
    info["ceilings"] = {}
    for key in ("noise", "run_dates", "run_machines", "run_origins"):
        info.pop(key, None)
    one = next(b for b in raw["benchmarks"] if b["fullname"] == DDP1)
    one["extra_info"].pop("work", None)
    record = one["extra_info"]["scaling"] | {"gpus": gpus, "global_batch": 128 * gpus, "method": method}
    benches = [one, _renamed(one, ddp(gpus), one["extra_info"] | {"scaling": record})]
    runs = {DDP1: {"time": [step_s[0]] * 3}, ddp(gpus): {"time": [step_s[1]] * 3}}
    if busbw is not None:
        row = {"bytes": 2**30, "time_us": 2**30 / busbw / 1e3, "algbw_gbps": busbw, "busbw_gbps": busbw}
        metrics = {"busbw_gbps": {"value": busbw, "unit": "GB/s", "better": "higher"}}
        benches.append(_renamed(one, sweep(gpus), {"metrics": metrics, "allreduce_sweep": {
            "gpus": gpus, "rows": [row], "version": 1}}))
        runs[sweep(gpus)] = {"time": [2**30 / busbw / 1e9] * 3, "busbw_gbps": [busbw] * 3}
    raw["benchmarks"], info["runs"] = benches, runs
    return load.parse(raw, f"{info['hardware_id']} (test)")


def gradient_bytes(results: ResultSet) -> float:
    """What the DDP run measured of its gradients (gradient_mib: every parameter's float32 gradient)."""
    return results.by_name()[DDP1].metrics["gradient_mib"].value * MiB


@pytest.mark.parametrize("gpus", [2, 4])
def test_a_ddp_step_is_one_gpus_step_plus_the_ring_all_reduce_of_its_gradients_at_the_measured_busbw(
        gpus, lenders):
    h200 = several(H200, gpus, (0.010, 0.011), busbw=300.0)
    h100 = several(H100, gpus, (0.012, 0.013), busbw=150.0)
    rows = {r.benchmark: r for r in across.hardware_rows(h200, h100, [DDP1, ddp(gpus)], work_of,
                                                          lenders=lenders)}
    one, step = rows[DDP1], rows[ddp(gpus)]
    assert one.model is not None and step.model is not None
    moved = 2 * (gpus - 1) / gpus * gradient_bytes(h200)  # a ring: 2(N-1)/N of the bytes through each GPU
    assert gradient_bytes(h200) == pytest.approx(4 * 11_689_512, rel=1e-6)  # ResNet-18's parameters, fp32
    assert step.model.baseline.communication_s == pytest.approx(moved / 300e9)
    assert step.model.current.communication_s == pytest.approx(moved / 150e9)
    assert step.model.baseline.hidden_s == step.model.current.hidden_s == 0  # exposed whole
    before, after = one.model.baseline.seconds + moved / 300e9, one.model.current.seconds + moved / 150e9
    assert step.model.baseline.seconds == pytest.approx(before)
    beyond = 0.011 - before  # launch-bound: the host's time beyond the roofs stays as measured
    assert step.model.residual_s == pytest.approx(beyond) and step.model.residual_factor == 1.0
    assert step.expected == pytest.approx(0.011 / (after + beyond))
    assert step.speedup == pytest.approx(0.011 / 0.013)
    assert step.ratio == pytest.approx(0.011 / 0.013 / (0.011 / (after + beyond)))
    assert "all-reduce busbw 300 GB/s measured -> 150 GB/s measured" in step.source()
    assert step.model.current.shares()["all-reduce"] == pytest.approx(moved / 150e9 / after)


def test_without_its_own_busbw_a_side_moves_its_gradients_at_half_its_datasheets_nvlink(lenders):
    h200, h100 = several(H200, 2, (0.010, 0.011)), several(H100, 2, (0.012, 0.013), busbw=150.0)
    row = across.hardware_rows(h200, h100, [ddp(2)], work_of, lenders=lenders)[0]
    assert row.model is not None
    sheet = datasheet.by_key("h200")
    assert sheet is not None and sheet.nvlink_gbps == 900
    assert row.model.baseline.communication_s == pytest.approx(gradient_bytes(h200) / 450e9)
    assert "all-reduce busbw 450 GB/s (half its datasheet's NVLink) -> 150 GB/s measured" in row.source()


def test_a_side_with_no_link_figure_has_no_expectation_and_says_which_figure_is_missing(lenders):
    h200 = several(H200, 2, (0.010, 0.011), busbw=300.0)
    pcie = several(H100, 2, (0.012, 0.013), sheet="h100-pcie")  # a datasheet that lists no NVLink
    found = across.hardware_rows(h200, pcie, [DDP1, ddp(2)], work_of, lenders=lenders)
    rows = {r.benchmark: r for r in found}
    assert rows[DDP1].expected is not None  # one GPU: no link read
    row = rows[ddp(2)]
    assert row.expected is None and row.gpu
    assert row.why == ("nvidia-h100-80gb-hbm3-x2 has no all-reduce bus bandwidth among 2 GPUs: it measured "
                       "no benches/test_data_parallel.py::test_allreduce_busbw[gpus2] and its datasheet "
                       "(h100-pcie) lists no NVLink bandwidth")
    assert row.sentence().endswith(f"no expectation: {row.why}")


def test_a_run_of_several_gpus_borrows_the_launch_costs_of_the_one_gpu_baseline_of_its_gpu_and_says_so(
        lenders):
    h200, h100 = several(H200, 2, (0.010, 0.011), busbw=300.0), several(H100, 2, (0.012, 0.013), busbw=150.0)
    assert Roofs.of(h200).launch_s == {}  # no one-element kernel in a run of several GPUs
    roofs = multigpu.roofs_of(h200, lenders)
    assert roofs.launch_s == Roofs.of(lenders[0]).launch_s and roofs.launch_lender == "nvidia-h200-x1"
    assert roofs.notes[-1] == ("launch costs measured on nvidia-h200-x1 (nvidia-h200-x2 measured none: the "
                               "one-GPU baseline of its GPU lends its own)")
    assert multigpu.roofs_of(h200, [lenders[1]]).launch_s == {}  # another GPU's lends nothing
    row = across.hardware_rows(h200, h100, [DDP1], work_of, lenders=lenders)[0]
    assert row.expected is not None
    assert row.source().endswith("launch costs lent by nvidia-h200-x1 and nvidia-h100-80gb-hbm3-x1; measured "
                                 f"x{row.errors()[1]:.2g} its time")  # type: ignore[index]
    bare = across.hardware_rows(h200, h100, [DDP1], work_of)[0]
    assert bare.expected is None and bare.why.endswith("no launch cost")


def test_a_held_out_run_of_several_gpus_is_predicted_from_the_others_busbw_share_and_lent_launch_costs(
        lenders):
    h200, h100 = several(H200, 2, (0.010, 0.011), busbw=300.0), several(H100, 2, (0.012, 0.013), busbw=150.0)
    spec = datasheet.by_key("h100-sxm")
    assert spec is not None
    reference, rows = predict.held_out_rows(spec, h100, [h200], None, work_of, lenders)
    assert reference is h200
    row = {r.benchmark: r for r in rows}[ddp(2)]
    assert row.model is not None
    # the H100's datasheet busbw (450 GB/s) at the share of the H200's the reference measured (300 of 450):
    # nothing of the held-out run's own 150 GB/s
    assert row.model.current.communication_s == pytest.approx(gradient_bytes(h200) / 300e9)
    assert "launch costs lent by nvidia-h200-x1" in row.source() and "hbm3-x1" not in row.source()
    assert row.speedup == pytest.approx(0.011 / 0.013)


def test_of_an_all_reduce_under_the_backward_only_what_outlasts_it_counts_and_the_last_bucket_never_hides():
    key = datasheet.allreduce_key(2)
    roofs = Roofs("d", {datasheet.COPY: 1000.0, "matmul_tflops_fp32": 10.0, key: 100.0}, {EAGER: 5e-6})
    backward = Step("conv", "backward", 1e10, 0, 2, "fp32")  # 1 ms of FLOPs and two launches: 1.01 ms
    last = Step("last bucket", ALLREDUCE, 0, 1e7, 0, "fp32", key)  # 0.1 ms at 100 GB/s

    def with_hidden(moved: float) -> Any:
        rest = Step("buckets before", ALLREDUCE_HIDDEN, 0, moved, 0, "fp32", key)
        return estimate(Work("w", (backward, rest, last), EAGER, "time"), roofs)

    short = with_hidden(5e7)  # 0.5 ms, under the backward's 1.01
    assert (short.communication_s, short.hidden_s) == pytest.approx((1e-4, 5e-4))
    long = with_hidden(2e8)  # 2 ms: 0.99 ms outlast the backward
    assert (long.communication_s, long.hidden_s) == pytest.approx((1e-4 + 2e-3 - 1.01e-3, 1.01e-3))
    assert long.seconds == pytest.approx(1e-3 + 1e-5 + long.communication_s)
    alone = estimate(Work("w", (backward,), EAGER, "time"), roofs)
    assert "hidden" in long.split() and "hidden" not in alone.split() and "all-reduce" not in alone.shares()


def test_ddp_fills_its_buckets_in_reverse_layer_order_and_overlap_splits_off_the_last():
    layers = [3 * MiB, 0, 20 * MiB, 10 * MiB, MiB // 2]  # the first layer's gradients are all-reduced last
    assert benchwork.ddp_buckets(layers) == [MiB // 2 + 10 * MiB, 23 * MiB]
    net = benchwork.Network("resnet18", 64, (3, 32, 32), benchwork.TRAIN_STEP, "tf32", "fp32")
    exposed, overlapped = benchwork.ddp_work(net, 4, overlap=False), benchwork.ddp_work(net, 4, overlap=True)
    links = [[s for s in w.steps if s.kind in (ALLREDUCE, ALLREDUCE_HIDDEN)] for w in (exposed, overlapped)]
    assert [s.kind for s in links[0]] == [ALLREDUCE] and [s.kind for s in links[1]] == [ALLREDUCE_HIDDEN,
                                                                                       ALLREDUCE]
    moved = 1.5 * 4 * 11_689_512  # four GPUs' ring: 2 x 3/4 of the bytes
    assert sum(s.bytes for s in links[0]) == sum(s.bytes for s in links[1]) == pytest.approx(moved)
    assert exposed.steps[:-1] == benchwork.network_work(net, EAGER, "time").steps  # one GPU's, at its batch
    assert "on each of 4 GPUs; 44.6 MiB of gradients all-reduced" in exposed.label


def test_data_parallel_on_several_gpus_has_no_model_and_says_why(lenders):
    h200 = several(H200, 2, (0.010, 0.011), busbw=300.0, method="DataParallel")
    h100 = several(H100, 2, (0.012, 0.013), busbw=150.0, method="DataParallel")
    found = work_of(h200.by_name()[ddp(2)], h200)
    assert isinstance(found, NoModel) and found.reason.startswith("nn.DataParallel on 2 GPUs: one process")
    row = across.hardware_rows(h200, h100, [ddp(2)], work_of, lenders=lenders)[0]
    assert row.expected is None and row.gpu and row.why == found.reason


def test_the_datasheets_link_figure_is_half_the_nvlink_it_lists_whatever_the_gpu_count():
    h100, k80 = datasheet.by_key("h100-sxm"), datasheet.by_key("k80")
    assert h100 is not None and k80 is not None
    assert h100.ceiling(datasheet.allreduce_key(2)) == h100.ceiling(datasheet.allreduce_key(8)) == 450
    assert k80.ceiling(datasheet.allreduce_key(2)) is None
    assert datasheet.allreduce_gpus(datasheet.allreduce_key(4)) == 4
    assert datasheet.allreduce_gpus(datasheet.COPY) is None


def test_a_work_recorded_by_an_older_count_is_counted_again():
    h200 = several(H200, 2, (0.010, 0.011), busbw=300.0)
    bench = h200.by_name()[ddp(2)]

    def recording(work: dict[str, Any]) -> Any:
        return dataclasses.replace(bench, raw={**bench.raw, "extra_info": {**bench.extra, "work": work}})

    older = recording({"reason": "2 GPUs: the model speaks for one device's work", "gpu": True})  # no version
    assert recorded_work(older) is None
    assert isinstance(work_of(older, h200), Work)  # counted again: a DDP step on two GPUs
    assert recorded_work(recording(NoModel("why").to_json())) == NoModel("why")
