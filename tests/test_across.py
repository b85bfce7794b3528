"""The per-layer roofline model and the comparison across hardware, on stored inputs.

``tests/data/baselines/across-h200.json`` and ``across-h100.json`` hold fifteen benchmarks of each committed
baseline (ceilings, the launch kernel, PPP, layers, vector adds, the layer stack, DDP, a FLOP count),
made with perfkit's own tool:

    perfkit baseline save baselines/<id>.json --only <the fifteen names> --merge --dir tests/data/tmp

so a re-saved baseline does not move these tests; every expectation here is computed from their own figures.
"""
from __future__ import annotations

import dataclasses
import math
import statistics

import pytest

from perfkit.cli import judge_files, work_of
from perfkit.render import report, speedups
from perfkit.resultfile import datasheet, load
from perfkit.resultfile.figures import ceiling_label
from perfkit.resultfile.metrics import METHODS_KEY
from perfkit.verdict import across
from perfkit.verdict.expected import EAGER, GRAPH, Estimate, NoModel, NoRoof, Roofs, Step, Work, estimate
from perfkit.verdict.judge import Verdict
from tests.conftest import DATA, typed

H200, H100 = DATA / "baselines" / "across-h200.json", DATA / "baselines" / "across-h100.json"
PPP_B1 = "benches/test_ppp.py::test_layerwise_ppp[b1-vgg16]"
PPP_B64 = "benches/test_ppp.py::test_layerwise_ppp[b64-vgg16]"
GRID = "benches/test_vector_add.py::test_gpu_explicit[K100-grid]"
MAXPOOL = "benches/test_layers.py::test_layer[maxpool-forward]"
TINY = "benches/test_timer_fidelity.py::test_timer_fidelity[tiny]"
STACK = "benches/test_capacity.py::test_layer_stack_capacity[cap10.91GiB-balanced]"
COPY = "copy_bandwidth_gbps"
ONE_BLOCK = "benches/test_vector_add.py::test_gpu_explicit[K1-one_block]"


@pytest.fixture(scope="module")
def compared():
    """The stored H200 entries against the H100's, as ``perfkit compare`` judges them."""
    return judge_files(H200, H100, None)


@pytest.fixture(scope="module")
def rows(compared):
    return {r.benchmark: r for r in compared[2].hardware_rows}


def test_a_devices_roofs_are_its_measured_ceilings_and_its_launch_kernels_costs():
    results = load.load(H200)
    roofs = Roofs.of(results)
    tiny = results.runs()[TINY]
    copies = results.runs()["benches/test_ceilings.py::test_copy_bandwidth"][COPY]
    assert roofs.ceiling(COPY) == pytest.approx(statistics.median(copies))  # the median of its runs
    assert roofs.launch(GRAPH) == pytest.approx(statistics.median(tiny["graph_replay_s"]))
    assert roofs.launch(EAGER) == pytest.approx(statistics.median(tiny["events_batched_s"]))
    assert roofs.ceiling("matmul_tflops_bf16") == results.info.ceilings["matmul_tflops_bf16"]  # stored
    assert roofs.notes == ()


def test_a_ceiling_a_device_never_measured_is_its_datasheets_and_says_so():
    raw = load.read_json(H200)
    del raw["machine_info"]["perfkit"]["ceilings"]["matmul_tflops_bf16"]  # bf16 has no benchmark here
    roofs = Roofs.of(load.parse(raw, "h200 without bf16"))
    assert roofs.ceiling("matmul_tflops_bf16") == datasheet.by_key("h200").tflops["bf16"]
    assert roofs.notes == ("matmul_tflops_bf16 from the datasheet",)


def test_roofs_timed_at_a_locked_clock_say_so():
    raw = load.read_json(H200)
    copy = next(b for b in raw["benchmarks"] if b["name"] == "test_copy_bandwidth")
    copy["extra_info"]["clock_lock"] = {"sm_clock": "base/1590 MHz locked", "version": 1}
    roofs = Roofs.of(load.parse(raw, "h200 locked"))
    assert roofs.notes == ("nvidia-h200-x1's roofs were timed at base/1590 MHz locked",)


def test_each_step_takes_the_larger_of_its_compute_and_memory_time_plus_its_launches():
    roofs = Roofs("d", {COPY: 1000.0, "matmul_tflops_tf32": 100.0, "matmul_tflops_fp32": 10.0},
                  {EAGER: 5e-6, GRAPH: 1e-6})
    work = Work("w", (Step("conv", "forward", 2e12, 1e9, 1, "tf32"),  # 20 ms of FLOPs, 1 ms of bytes
                      Step("relu", "forward", 1e9, 4e9, 2, "fp32")),  # 0.1 ms of FLOPs, 4 ms of bytes
                EAGER, "time")
    found = estimate(work, roofs)
    assert (found.compute_s, found.memory_s, found.launch_s) == pytest.approx((0.02, 0.004, 15e-6))
    assert found.seconds == pytest.approx(0.024015)
    assert found.shares()["compute"] == pytest.approx(0.02 / 0.024015)
    graph = estimate(Work("w", work.steps, GRAPH, "time"), roofs)
    assert graph.launch_s == pytest.approx(3e-6)


def test_a_device_without_tf32_computes_it_in_fp32_and_one_without_a_precision_has_no_roof():
    v100 = Roofs.of_datasheet(datasheet.by_key("v100-sxm2"), Roofs("h", {}, {EAGER: 7e-6}))
    assert v100.flop_rate("tf32") == v100.flop_rate("fp32") == 15.7e12
    k80 = Roofs.of_datasheet(datasheet.by_key("k80"), Roofs("h", {}, {EAGER: 7e-6}))
    with pytest.raises(NoRoof, match="matmul_tflops_bf16"):
        k80.flop_rate("bf16")
    with pytest.raises(NoRoof, match="graph_replay_s"):
        k80.launch(GRAPH)
    assert "launch costs measured on h" in k80.notes[-1]


def test_each_benchmark_describes_its_work_from_its_records():
    h200, h100 = load.load(H200), load.load(H100)
    entries = h200.by_name()
    ppp = work_of(entries[PPP_B1], h200)
    assert isinstance(ppp, Work) and ppp.network and (ppp.launch, ppp.figure) == (GRAPH, "model_graph_s")
    assert ppp.label == "vgg16 batch 1 at 224x224, forward"
    assert {s.precision for s in ppp.steps if s.name.startswith("features.0")} == {"tf32"}  # a convolution
    assert {s.precision for s in ppp.steps if s.name == "classifier.0"} == {"fp32"}  # a linear layer
    older = work_of(h100.by_name()[PPP_B1], h100)  # the H100's bench gated batch 1 on its time then
    assert isinstance(older, Work) and (older.launch, older.figure) == (EAGER, "time")
    grid = work_of(entries[GRID], h200)
    assert isinstance(grid, Work) and not grid.network and grid.figure == "kernel_s"
    assert [(s.flops, s.bytes, s.launches) for s in grid.steps] == [(100_000_000, 1_200_000_000, 1)]
    ddp = work_of(entries["benches/test_data_parallel.py::test_ddp[resnet18-cifar-b128-weak-gpus1]"], h200)
    assert isinstance(ddp, Work) and ddp.label.startswith("resnet18 batch 128 at 32x32, training step")
    assert ddp.steps[-1].kind == "update" and {s.kind for s in ddp.steps} == {"forward", "backward", "update"}
    stack = work_of(entries[STACK], h200)
    assert isinstance(stack, Work) and sum(s.kind == "forward" for s in stack.steps) == 2 * 110 + 2 * 110


@pytest.mark.parametrize("name, gpu, reason", [
    ("benches/test_vector_add.py::test_cpu_numpy[K1]", False, "the host's loop"),
    ("benches/test_flops.py::test_flop_count[vgg16]", False, "a meta device"),
])
def test_work_the_model_cannot_count_says_why(name, gpu, reason):
    h200 = load.load(H200)
    found = work_of(h200.by_name()[name], h200)
    assert isinstance(found, NoModel) and found.gpu is gpu and reason in found.reason


def test_kernels_keep_their_ceilings_ratio_and_the_launch_kernel_its_costs(rows):
    h200, h100 = Roofs.of(load.load(H200)), Roofs.of(load.load(H100))
    copy = rows["benches/test_ceilings.py::test_copy_bandwidth"]
    assert copy.expected == pytest.approx(h100.ceiling(COPY) / h200.ceiling(COPY))
    assert copy.speedup == copy.expected and copy.verdict == across.AS_EXPECTED and copy.model is None
    tiny = rows[TINY]
    assert tiny.expected == pytest.approx(h200.launch(GRAPH) / h100.launch(GRAPH)) == tiny.speedup
    # max-pooling reaches a third of the copy ceiling it names: its roof is the multiprocessors' issue rate
    # (SMs x clock, the same 132 x 1980 MHz on both), the lower one; the copy ratio would expect 0.7
    maxpool = rows[MAXPOOL]
    assert maxpool.bound is not None and maxpool.bound.startswith("SMs x clock (") and COPY in maxpool.bound
    assert maxpool.expected == pytest.approx(1.0) and maxpool.verdict == across.AS_EXPECTED


def test_a_launch_measured_by_another_method_on_one_side_has_no_expectation_and_says_so():
    """The graph replay on one element read its element's address; over 200 addresses (method 3) the mean:
    the two devices' launch costs are compared only when both measured them the same way."""
    raw = load.read_json(H200)
    tiny = next(b for b in raw["benchmarks"] if b["fullname"] == TINY)
    tiny["extra_info"]["methods"] = {"graph_replay_s": 3, "launch_overhead_s": 3}
    spread = load.parse(raw, "h200, the replay over 200 addresses")
    row = next(r for r in across.hardware_rows(spread, load.load(H100), [TINY]))
    assert row.expected is None and not row.by_definition
    assert row.why.startswith("measured differently: method 3 on the first device, 1 on the second")
    same = next(r for r in across.hardware_rows(load.load(H200), load.load(H100), [TINY]))
    assert same.expected is not None and same.by_definition


def test_any_figure_a_row_reads_measured_by_another_method_on_one_side_leaves_it_without_an_expectation():
    """Not only the launch: max-pooling's time measured another way on the first device (as the 100 M first
    launches after a prefetch against after the host's write) is not set against the second's."""
    h200 = load.load(H200)
    def fourth_way(b):
        return dataclasses.replace(b, raw={**b.raw, "extra_info": {**b.extra, METHODS_KEY: {"time": 4}}})

    timed_another_way = tuple(fourth_way(b) if b.fullname == MAXPOOL else b for b in h200.benchmarks)
    other_way = dataclasses.replace(h200, benchmarks=timed_another_way)
    row = next(r for r in across.hardware_rows(other_way, load.load(H100), [MAXPOOL]))
    assert row.expected is None and row.model is None and row.ratio is None
    assert row.why == ("measured differently: method 4 on the first device, 2 on the second (time); re-save "
                       "the older baseline's entry")
    same = next(r for r in across.hardware_rows(h200, load.load(H100), [MAXPOOL]))
    assert same.expected is not None


def test_a_kernel_far_below_its_ceiling_keeps_that_ceiling_where_a_datasheet_lists_no_multiprocessors():
    """The issue roof needs both devices' SMs and clock: towards a device whose datasheet lists none (the B200
    here) max pooling keeps the copy ratio; a kernel at its ceiling (ReLU) never takes the issue roof."""
    h200 = load.load(H200)
    side = across._Side.of(h200, None)
    maxpool, relu = side.target(MAXPOOL), side.target("benches/test_layers.py::test_layer[relu-forward]")
    assert maxpool.share is not None and maxpool.share < across.ISSUE_SHARES[1] < (relu.share or 0.0)
    b200, h100 = datasheet.by_key("b200"), datasheet.by_key("h100-sxm")
    assert b200 is not None and b200.issue_rate() is None and h100 is not None
    towards_b200 = Roofs.of_datasheet(b200, Roofs.of(h200))
    assert across.expect(maxpool, dataclasses.replace(maxpool, roofs=towards_b200)).bound == COPY
    towards_h100 = Roofs.of_datasheet(h100, Roofs.of(h200))
    assert across.expect(relu, dataclasses.replace(relu, roofs=towards_h100)).bound == COPY


def test_networks_and_streaming_kernels_take_the_models_ratio_between_their_ceilings(rows):
    h200, h100 = Roofs.of(load.load(H200)), Roofs.of(load.load(H100))
    copy_ratio = h100.ceiling(COPY) / h200.ceiling(COPY)
    tf32_ratio = h100.ceiling("matmul_tflops_tf32") / h200.ceiling("matmul_tflops_tf32")
    grid = rows[GRID]  # streams memory: 98% of its time at the copy ceiling
    assert grid.model is not None and grid.model.current.shares()["memory"] > 0.95
    assert grid.model.baseline.seconds / grid.model.current.seconds == pytest.approx(copy_ratio, rel=0.03)
    assert copy_ratio < grid.expected < 1  # its time beyond the roofs at the same SMs x clock
    b64 = rows[PPP_B64]  # names the TF32 ceiling, yet its ReLU and pooling layers stream memory
    assert b64.bound is None and b64.model is not None and copy_ratio < b64.expected < tf32_ratio
    assert b64.source().startswith("model: compute ")
    assert b64.errors() is not None and all(e > 1 for e in b64.errors())  # the roofs are a lower bound


def _first_launch(path, gbps=None, k=100, scenario="tuned"):
    """A stored baseline whose warm managed K100 launch reads as a first launch of size ``k`` (its records
    changed as a first launch writes them), with a first touch ceiling of ``gbps`` where given."""
    raw = load.read_json(path)
    bench = next(b for b in raw["benchmarks"] if b["name"] == "test_gpu_managed[K100-tuned-warm]")
    bench["extra_info"]["vector_add"].update(mode="managed_first", k=k, scenario=scenario)
    del bench["extra_info"]["bound"]  # only a warm launch names the copy ceiling
    if gbps is not None:
        raw["machine_info"]["perfkit"]["ceilings"][f"first_touch_k{k}_gbps"] = gbps
    return load.parse(raw, path.name), bench["fullname"]


def test_a_first_launch_on_managed_memory_migrates_its_inputs_at_the_first_touchs_rate_then_streams():
    (h200, name), (h100, _) = _first_launch(H200, 10.0), _first_launch(H100, 8.0)
    work = work_of(h200.by_name()[name], h200)
    assert isinstance(work, Work) and work.label == "vector add of 100 M elements, tuned grid (managed first)"
    assert [(s.kind, s.bytes, s.roof) for s in work.steps] == [("migrate", 8e8, "first_touch_k100_gbps"),
                                                               ("kernel", 1.2e9, COPY)]
    (row,) = across.hardware_rows(h200, h100, [name], work_of)
    # 80 ms of migration against 0.3 ms of streaming: the first touch's ratio, nearly
    assert row.model is not None and row.expected == pytest.approx(0.8, rel=0.01)
    assert row.model.current.shares()["migration"] > 0.99 and "migration 100%" in row.source()
    with pytest.raises(NoRoof, match="no measured first_touch_k100_gbps .*test_first_touch measures it"):
        estimate(work, Roofs.of(load.load(H200)))  # the committed baselines predate the ceiling


def test_one_blocks_first_launch_migrates_then_goes_at_its_multiprocessors_pace():
    h200, name = _first_launch(H200, 10.0, scenario="one_block")
    work = work_of(h200.by_name()[name], h200)
    assert isinstance(work, Work) and work.label == "vector add of 100 M elements, one block (managed first)"
    assert [(s.kind, s.bytes, s.roof) for s in work.steps] == [
        ("migrate", 8e8, "first_touch_k100_gbps"), ("kernel", 8e8, "one_block_copy_k100_gbps")]
    with pytest.raises(NoRoof, match="one_block_copy_k100_gbps"):  # the first touch is there, this is not
        estimate(work, Roofs.of(h200))


def test_a_first_launch_of_a_size_no_first_touch_was_measured_at_says_its_pages_migrate():
    h200, name = _first_launch(H200, k=5)
    found = work_of(h200.by_name()[name], h200)
    assert isinstance(found, NoModel) and found.gpu and "pages migrate inside the timing" in found.reason
    assert "the ceilings family measures K = 1, 100" in found.reason


def test_one_thread_or_one_block_goes_at_the_pace_of_its_multiprocessors_same_sized_copy():
    h200 = load.load(H200)
    one_block = work_of(h200.by_name()[ONE_BLOCK], h200)
    assert isinstance(one_block, Work)
    assert one_block.label == "vector add of 1 M elements, one block (explicit)"
    # priced per element at the copy's element rate: the copy moves 8 bytes an element, the add waits as long
    assert [(s.bytes, s.launches, s.roof) for s in one_block.steps] == [(8e6, 1, "one_block_copy_k1_gbps")]
    with pytest.raises(NoRoof, match="no measured one_block_copy_k1_gbps .*test_one_sm_copy measures it"):
        estimate(one_block, Roofs.of(h200))  # these baselines predate the ceiling
    sheet = Roofs.of_datasheet(datasheet.by_key("h200"), Roofs.of(h200))
    assert "one_block_copy_k1_gbps" not in sheet.ceilings


def test_a_size_no_one_multiprocessor_copy_was_measured_at_says_so():
    raw = load.read_json(H200)
    bench = next(b for b in raw["benchmarks"] if b["fullname"] == ONE_BLOCK)
    bench["extra_info"]["vector_add"]["k"] = 5  # a weekly size
    h200 = load.parse(raw, "h200 at K5")
    found = work_of(h200.by_name()[ONE_BLOCK], h200)
    assert isinstance(found, NoModel) and found.gpu
    assert "no copy by one multiprocessor of its size" in found.reason
    assert "one block at K=100" in found.reason


@pytest.mark.parametrize("held_as", ["ceilings", "baseline_ceilings"])  # measured, or lent to a nightly run
def test_given_each_devices_one_block_ceiling_one_block_expects_its_ratio(held_as):
    def with_one_block(path, gbps, held_as="ceilings"):
        raw = load.read_json(path)
        raw["machine_info"]["perfkit"].setdefault(held_as, {})["one_block_copy_k1_gbps"] = gbps
        return load.parse(raw, path.name)

    h200, h100 = with_one_block(H200, 12.0), with_one_block(H100, 10.8, held_as)
    (row,) = across.hardware_rows(h200, h100, [ONE_BLOCK], work_of)
    assert row.model is not None and row.model.current.shares()["memory"] > 0.99  # 0.7 ms a launch, a launch
    assert row.expected == pytest.approx(0.9, rel=0.01)
    measured = statistics.geometric_mean(h200.runs()[ONE_BLOCK]["kernel_s"]) / statistics.geometric_mean(
        h100.runs()[ONE_BLOCK]["kernel_s"])
    assert row.figure == "kernel_s" and row.speedup == pytest.approx(measured)
    assert row.errors() is not None and all(0.5 < e < 1.5 for e in row.errors())  # 18.5 GB/s of adds


def test_a_benchmark_that_gates_on_another_figure_on_one_side_is_read_by_it_on_both(rows):
    b1 = rows[PPP_B1]  # the H200's batch 1 gates on its CUDA-graph replay, the older H100 run on its time
    assert b1.figure == "model_graph_s"
    h200, h100 = load.load(H200).runs()[PPP_B1], load.load(H100).runs()[PPP_B1]
    assert b1.speedup == pytest.approx(statistics.geometric_mean(h200["model_graph_s"])
                                       / statistics.geometric_mean(h100["model_graph_s"]))
    assert b1.model is not None and b1.model.current.launch_s > 0


def test_across_hardware_no_benchmark_regresses_or_improves_and_each_speaks_of_its_speedup(compared):
    comparison = compared[2]
    verdicts = comparison.benchmark_verdicts()
    assert not {Verdict.REGRESSED, Verdict.IMPROVED} & set(verdicts.values())
    assert comparison.regressions == ()  # so `perfkit compare --fail` passes: the code did not change
    assert verdicts[MAXPOOL] is Verdict.AS_EXPECTED and verdicts[PPP_B64] is Verdict.AS_EXPECTED
    gate = next(r for r in comparison.rows if r.benchmark == PPP_B64 and r.figure == "time")
    assert gate.note.startswith("speedup ") and "from model: compute" in gate.note
    host = [h for h in comparison.hardware_rows if not h.gpu]
    assert {h.benchmark.split("::")[1] for h in host} == {"test_cpu_numpy[K1]", "test_flop_count[vgg16]"}


def test_the_summary_counts_the_benchmarks_whose_speedup_checks_an_expectation_and_those_within_x115(rows):
    gpu = [r for r in rows.values() if r.gpu]
    expected = [r for r in rows.values() if r.expected is not None and not r.by_definition]
    own = [r for r in rows.values() if r.by_definition]
    near = [r for r in expected if r.ratio is not None and 1 / 1.15 <= r.ratio <= 1.15]
    # one block: these baselines never measured its ceiling; host work carries none
    assert len(rows) == 15 and len(gpu) == 13 and len(expected) + len(own) == 12
    said = speedups.hardware_summary(list(rows.values()))
    assert said.startswith(f"{len(expected)} of {len(rows)} benchmarks carry an expected speedup")
    assert f"{len(near)} of them lie within x1.15" in said
    assert said.endswith(f"; {len(own)} measure the ceiling they are expected by (their speedup is it)")


@pytest.mark.parametrize("speedup, expected, verdict", [
    (0.80, 0.80, across.AS_EXPECTED), (0.91, 0.80, across.AS_EXPECTED), (0.93, 0.80, across.FASTER),
    (0.66, 0.80, across.SLOWER), (1.01, 0.80, across.FAR_FROM), (0.63, 0.80, across.FAR_FROM),
    (0.8, None, None),
])
def test_a_speedup_is_as_expected_within_x115_and_far_beyond_x125(speedup, expected, verdict):
    assert across.HardwareRow("b", speedup, None, expected).verdict == verdict


def test_the_time_beyond_the_roofs_is_carried_at_the_issue_rate_and_a_launch_bound_ones_as_measured():
    h200, b200 = Roofs("h200", {}, {}, (), datasheet.by_key("h200")), Roofs("b", {}, {}, ())
    half = Roofs("half", {}, {}, (), dataclasses.replace(datasheet.by_key("h200"), sms=66))  # half the SMs
    memory = across.Modelled("step", Estimate(0.0, 1.0, 0.1), Estimate(0.0, 0.7, 0.1))  # 1.1 s, 0.8 s
    assert memory.expected == pytest.approx(1.1 / 0.8)  # the roofs alone
    streaming = Work("step", (Step("add", "kernel", 0.0, 1e9, 1, "fp32"),), EAGER, "time")
    one_block = Work("step", (Step("add", "kernel", 0.0, 1e9, 1, "fp32", "one_block_copy_k1_gbps"),), EAGER,
                     "time")
    same = across._beyond(memory, streaming, 2.75, h200, h200)  # measured x2.5 the model: 1.65 s beyond it
    assert same.residual_s == pytest.approx(1.65) and same.expected == pytest.approx(2.75 / (0.8 + 1.65))
    slower = across._beyond(memory, streaming, 2.75, h200, half)  # twice as long beyond on half the SMs
    assert slower.residual_factor == pytest.approx(2.0)
    assert slower.expected == pytest.approx(2.75 / (0.8 + 3.3))
    launches = across.Modelled("step", Estimate(0.0, 0.1, 0.9), Estimate(0.0, 0.05, 0.9))
    # the host's: no datasheet has it, so each run's own eager launch pace carries it (none: as measured)
    assert across._beyond(launches, streaming, 5.0, h200, half).residual_factor == 1.0
    fast_host = dataclasses.replace(h200, launch_s={EAGER: 6.9e-6})
    slow_host = dataclasses.replace(half, launch_s={EAGER: 8.7e-6})
    host = across._beyond(launches, streaming, 5.0, fast_host, slow_host)
    assert host.residual_factor == pytest.approx(8.7 / 6.9)
    lent = dataclasses.replace(slow_host, launch_lender="h200")  # a datasheet's device: its host is unknown
    assert across._beyond(launches, streaming, 5.0, fast_host, lent).residual_factor == 1.0
    alone = dataclasses.replace(streaming, launch="alone")  # its launch: the device's floor, not the host
    assert across._beyond(launches, alone, 5.0, fast_host, slow_host).residual_factor == 1.0
    assert across._beyond(memory, streaming, 2.75, h200, b200) is memory  # no SMs x clock on a side
    # faster than a model at the copy ceiling: its bytes stayed on chip, its time beyond the 0.1 s launch at
    # the SMs' pace (twice as long on half of them); not so for bytes a single multiprocessor moves
    on_chip = across._beyond(memory, streaming, 1.0, h200, half)
    assert on_chip.expected == pytest.approx(1.0 / (0.1 + 2 * 0.9)) and "stayed on chip" in on_chip.notes[-1]
    assert across._beyond(memory, one_block, 1.0, h200, half) is memory
    flops = across.Modelled("step", Estimate(1.0, 0.0, 0.1), Estimate(0.8, 0.0, 0.1))  # a GEMM beat its roof
    assert across._beyond(flops, streaming, 0.5, h200, half) is flops


def test_a_far_speedup_within_its_own_runs_spread_says_so_and_one_beyond_it_does_not():
    spread = across.HardwareRow("b", 0.60, None, 1.0, spread=(1.30, 1.35))  # x1.755 together
    assert spread.verdict == across.FAR_FROM and spread.within_spread
    assert spread.reason() == ("within its own runs' spread (slowest over fastest x1.3 on the baseline's "
                               "machines, x1.35 on the current's)")
    assert spread.reason() in spread.source()
    beyond = across.HardwareRow("b", 0.55, None, 1.0, spread=(1.30, 1.35))  # x1.82 from its expectation
    assert beyond.verdict == across.FAR_FROM and not beyond.within_spread and beyond.reason() == ""
    near = across.HardwareRow("b", 0.95, None, 1.0, spread=(1.30, 1.35))
    assert near.reason() == ""  # only a row beyond x1.25 needs a reason


def test_a_device_never_measured_scales_the_ceilings_no_datasheet_lists_by_its_clock_and_host_link():
    one_sm, touch = "one_block_copy_k1_gbps", "first_touch_k100_gbps"
    h200 = datasheet.by_key("h200")
    measured = Roofs("nvidia-h200-x1", {COPY: 4200.0, one_sm: 20.0, touch: 9.0}, {EAGER: 5e-6}, (), h200,
                     frozenset({COPY, one_sm, touch}))
    a100 = Roofs.of_datasheet(datasheet.by_key("a100-80gb"), measured)
    assert a100.ceiling(one_sm) == pytest.approx(20.0 * 1410 / 1980)  # boost clocks
    assert a100.ceiling(touch) == pytest.approx(9.0 * 64 / 128)  # PCIe Gen4 against Gen5
    assert any("scaled by the datasheets' boost clocks" in note for note in a100.notes)
    b200 = Roofs.of_datasheet(datasheet.by_key("b200"), measured)  # lists neither a clock nor a host link
    assert b200.ceiling(one_sm) is None and b200.ceiling(touch) is None
    with pytest.raises(NoRoof, match="no measured first_touch_k100_gbps"):
        b200.byte_rate(touch)


def test_the_report_holds_the_across_hardware_plot_and_table(tmp_path, compared):
    _, current, comparison = compared
    text = report.write_report(current, tmp_path, comparison, "across-h200.json").read_text()
    section = text.split("## Across hardware: measured vs expected speedup")[1].split("\n## ")[0]
    assert "](hardware.png)" in section and (tmp_path / "hardware.png").stat().st_size > 20_000
    assert f"| {MAXPOOL} | " in section and "FAR from expected" in section and "model: compute" in section
    assert section.count("| benches/") == len(comparison.hardware_rows)
    assert not math.isnan(comparison.geomean_time_ratio or math.nan)


def test_a_ceilings_kind_in_a_legend_is_a_word_or_two():
    assert ceiling_label("copy_bandwidth_gbps") == "copy" and ceiling_label("matmul_tflops_bf16") == "matmul"
    assert ceiling_label("one_block_copy_k100_gbps") == "one block"
    assert ceiling_label("one_thread_copy_k1_gbps") == "one thread"


def _kernel(share: float | None, seconds: float, sheet: str, copy: float) -> across._Target:
    """A kernel bound by the copy ceiling on a device of datasheet ``sheet``, its copy ceiling ``copy``."""
    spec = datasheet.by_key(sheet)
    roofs = Roofs(sheet, {COPY: copy}, {EAGER: 5e-6}, sheet=spec, measured=frozenset({COPY}))
    return across._Target(roofs, NoModel("a kernel"), COPY, False, True, share, seconds)


@pytest.mark.parametrize(("then", "now", "expected", "why"), [
    (_kernel(0.30, 1e-3, "h200", 4000), _kernel(0.30, 1e-3, "h100-sxm", 3000), 1.0, "issue"),
    # never faster than its bytes allow: 45% of a copy ceiling that falls to a quarter, the same SMs x clock
    (_kernel(0.45, 1e-3, "h200", 4000), _kernel(None, 1e-3, "h100-sxm", 1000), 1000 / 4000 / 0.45, "issue"),
    # and no faster than its multiprocessors: an A100 issues 0.58 of an H200's
    (_kernel(0.45, 1e-3, "h200", 3000), _kernel(None, 1e-3, "a100-80gb", 2500), 108 * 1410 / (132 * 1980),
     "issue"),
    (_kernel(0.60, 1e-3, "h200", 4000), _kernel(0.30, 1e-3, "h100-sxm", 3000), 0.75, "ceiling"),  # near it
    (_kernel(0.01, 1e-3, "h200", 4000), _kernel(0.01, 1e-3, "h100-sxm", 3000), 0.75, "ceiling"),  # one thread
    (_kernel(0.30, 20e-6, "h200", 4000), _kernel(0.30, 20e-6, "h100-sxm", 3000), 0.75, "ceiling"),  # launches
])
def test_the_issue_roof_takes_a_kernel_far_below_its_ceiling_on_both_devices_and_far_above_its_launch(
        then, now, expected, why):
    found = across.expect(then, now)
    assert found.expected == pytest.approx(expected)
    assert (found.bound or "").startswith("SMs x clock") == (why == "issue")


@pytest.mark.parametrize("kernel_s, read_as", [(6.5e-4, "kernel_s"), (None, "time")])
def test_a_work_recorded_with_a_ratio_gate_is_read_by_the_time_the_ratio_is_of(kernel_s, read_as):
    """One block's launch gates on itself over one multiprocessor's copy (a ratio near 1): read as seconds,
    ``perfkit predict`` printed "over_one_sm_copy 1.071 s"; its kernel's own time is what its model is of
    (a first launch records none: its time)."""
    from perfkit import SCHEMA_VERSION
    from perfkit.verdict.expected import timed_as

    metrics = {"over_one_sm_copy": {"value": 1.07, "unit": "ratio", "better": "lower", "gate": True}}
    if kernel_s is not None:
        metrics["kernel_s"] = {"value": kernel_s, "unit": "s", "better": "lower"}
    bench = {"fullname": "benches/test_vector_add.py::test_gpu_managed[K1-one_block-warm]", "name": "k",
             "group": None, "extra_info": {"metrics": metrics, "gate": "over_one_sm_copy"},
             "stats": {"data": [7e-4] * 3, "median": 7e-4, "iqr": 0.0, "rounds": 3}}
    info = {"schema_version": SCHEMA_VERSION, "hardware_id": "h", "fingerprint": {}, "ceilings": {}}
    entry = typed({"benchmarks": [bench], "machine_info": {"perfkit": info}}).benchmarks[0]
    work = Work("k", (Step("add", "kernel", 0.0, 12e6, 1, "fp32"),), EAGER, "over_one_sm_copy")
    assert timed_as(work, entry).figure == read_as
    timed = Work("k", work.steps, EAGER, "graph_replay_s")  # a time figure is read as it is
    assert timed_as(timed, entry).figure == "graph_replay_s"


def test_a_kernel_timed_alone_pays_the_devices_floor_of_a_kernel_not_the_hosts_launch_pace():
    """kernel_s timed by events around one launch after an L2 flush holds no host dispatch, so its launch
    term is the one-element kernel timed the same way (the 1 M-element vector add on the H200 and the H100:
    x0.86 measured, x0.77 expected with the host's eager pace, x0.86 with the floor); the same kernel timed
    back to back (method 1: a GPU whose L2 cannot hold it) keeps the host's pace."""
    from perfkit import SCHEMA_VERSION
    from perfkit.resultfile.metrics import METHODS_KEY
    from perfkit.verdict.expected import ALONE, timed_as

    def entry(method: int):
        bench = {"fullname": "benches/test_vector_add.py::test_gpu_explicit[K1-grid]", "name": "k",
                 "group": None, "extra_info": {METHODS_KEY: {"kernel_s": method}},
                 "stats": {"data": [1e-5] * 3, "median": 1e-5, "iqr": 0.0, "rounds": 3}}
        info = {"schema_version": SCHEMA_VERSION, "hardware_id": "h", "fingerprint": {}, "ceilings": {}}
        return typed({"benchmarks": [bench], "machine_info": {"perfkit": info}}).benchmarks[0]

    roofs = Roofs("h200", {"copy_bandwidth_gbps": 4000.0}, {EAGER: 7e-6, ALONE: 4e-6}, ())
    work = Work("k", (Step("add", "kernel", 0.0, 12e6, 1, "fp32"),), EAGER, "kernel_s")
    alone, batched = timed_as(work, entry(2)), timed_as(work, entry(1))
    assert (alone.launch, batched.launch) == (ALONE, EAGER)
    assert estimate(alone, roofs).launch_s == pytest.approx(4e-6)
    assert estimate(batched, roofs).launch_s == pytest.approx(7e-6)
    with pytest.raises(NoRoof, match="events_l2_flushed_s of the one-element kernel"):
        estimate(alone, Roofs("old", {"copy_bandwidth_gbps": 4000.0}, {EAGER: 7e-6}, ()))
