"""Two kernel summaries compared: the rows, and the one-line reading of where the time went."""
from __future__ import annotations

import json

import pytest

from perfkit.explain.diff import (
    BUSY_STEADY,
    HOST_MOVED,
    KERNEL_MOVED,
    NOT_COMPARED,
    TABLE_HEAD,
    Explanation,
    explain,
)
from perfkit.explain.summary import OTHER, CopyStat, KernelStat, KernelSummary

GEMM_128 = ("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_"
            "execute_segment_k_off_kernel__5x_cublas")
GEMM_64 = GEMM_128.replace("tilesize128x128x32", "tilesize64x128x32")
GEMM = "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n"
ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
       "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")
ADD_BF16 = ADD.replace("<float>", "<c10::BFloat16>")  # the same operation on another dtype: one family


def _summary(kernels: dict[str, tuple[float, float]], *, host_ms: float = 10.0, busy_ms: float | None = None,
             launches: float = 100, copies: tuple[CopyStat, ...] = (), device: str = "cuda") -> KernelSummary:
    """A summary per call; its busy time is its kernels' time unless given."""
    stats = tuple(KernelStat(name, count, us) for name, (count, us) in kernels.items())
    busy_s = sum(s.total_us for s in stats) / 1e6 if busy_ms is None else busy_ms / 1e3
    return KernelSummary(device=device, calls=1, host_s=host_ms / 1e3, gpu_busy_s=busy_s, launches=launches,
                         kernels=stats, copies=copies)


def test_a_gemm_that_got_slower_is_named_with_its_change():
    before = _summary({GEMM_128: (1, 4100.0), ADD: (12, 500.0)}, host_ms=5.0)
    after = _summary({GEMM_64: (1, 4310.0), ADD: (12, 502.0)}, host_ms=5.3)
    got = explain(before, after)
    assert got.reading == f"+0.21 ms in {GEMM} (+5.1%), all other kernels within 1%"
    top = got.kernels[0]
    assert (top.name, top.delta_us, top.status) == (GEMM, pytest.approx(210.0), "")
    assert (top.before_names, top.after_names) == ((GEMM_128,), (GEMM_64,))  # cuBLAS picked another tile
    assert top.share == pytest.approx(210 / 212)
    assert [k.name for k in got.kernels] == [GEMM, "vectorized_elementwise_kernel[add]"]


def test_a_new_elementwise_kernel_is_named_with_its_launches():
    before = _summary({GEMM_128: (1, 4100.0)})
    after = _summary({GEMM_128: (1, 4100.0), ADD: (12, 50.0)})
    got = explain(before, after)
    assert got.reading == "new kernel vectorized_elementwise_kernel[add]: +0.05 ms (12 launches)"
    assert [(k.name, k.status) for k in got.kernels] == [("vectorized_elementwise_kernel[add]", "new"),
                                                         (GEMM, "")]


def test_a_vanished_kernel_is_named():
    got = explain(_summary({GEMM_128: (1, 4100.0), ADD: (3, 300.0)}), _summary({GEMM_128: (1, 4100.0)}))
    assert got.reading == "kernel vectorized_elementwise_kernel[add] gone: -0.3 ms (3 launches)"
    assert got.kernels[0].status == "vanished"


def test_slower_host_dispatch_with_the_gpu_unchanged_reads_launch_bound():
    before = _summary({GEMM_128: (1, 400.0), ADD: (99, 600.0)}, host_ms=1.0, launches=100)
    after = _summary({GEMM_128: (1, 401.0), ADD: (149, 601.0)}, host_ms=1.38, launches=150)
    got = explain(before, after)
    assert got.reading == "GPU time unchanged, host dispatch +38%: launch-bound (launches 100 to 150 a call)"


def test_the_host_moving_less_than_its_threshold_is_not_called_launch_bound():
    before = _summary({GEMM_128: (1, 1000.0)}, host_ms=1.0)
    after = _summary({GEMM_128: (1, 1000.0)}, host_ms=1.0 + 0.9 * HOST_MOVED)
    assert explain(before, after).reading == "no kernel changed beyond 1%"


def test_a_busy_gpu_that_moved_too_is_not_called_launch_bound():
    before = _summary({GEMM_128: (1, 1000.0)}, host_ms=1.0)
    after = _summary({GEMM_128: (1, 1000.0 * (1 + 2 * BUSY_STEADY))}, host_ms=1.4)
    assert explain(before, after).reading.startswith(f"+0.04 ms in {GEMM}")


@pytest.mark.parametrize(("moved", "named"), [(0.9 * KERNEL_MOVED, False), (1.1 * KERNEL_MOVED, True)])
def test_a_kernel_is_named_only_once_it_moved_by_its_threshold_of_the_device_time(moved, named):
    before = _summary({GEMM_128: (1, 5000.0), ADD: (10, 5000.0)})
    after = _summary({GEMM_128: (1, 5000.0 + moved * 10_000), ADD: (10, 5000.0)})
    reading = explain(before, after).reading
    assert (reading != "no kernel changed beyond 1%") == named, reading


def test_the_runner_up_is_named_where_it_moved_too():
    before = _summary({GEMM_128: (1, 4000.0), ADD: (10, 1000.0)})
    after = _summary({GEMM_128: (1, 4400.0), ADD: (10, 1100.0)})
    assert explain(before, after).reading == (f"+0.4 ms in {GEMM} (+10.0%), then +0.1 ms in "
                                              "vectorized_elementwise_kernel[add] (+10.0%)")


def test_raw_names_of_one_family_are_summed_on_each_side():
    before = _summary({ADD: (10, 100.0), ADD_BF16: (5, 50.0)})
    after = _summary({ADD: (10, 100.0), ADD_BF16: (5, 50.0)})
    (row,) = explain(before, after).kernels
    assert (row.before_count, row.before_us, set(row.after_names)) == (15, 150.0, {ADD, ADD_BF16})


def test_copies_that_moved_most_are_the_reading():
    before = _summary({GEMM_128: (1, 1000.0)}, copies=(CopyStat("HtoD", 1, 4_000_000, 200.0),))
    after = _summary({GEMM_128: (1, 1000.0)}, copies=(CopyStat("HtoD", 2, 8_000_000, 400.0),))
    got = explain(before, after)
    assert got.reading == "+0.2 ms in HtoD copies (+100.0%, +4.0 MB)"
    assert got.copies[0].delta_us == 200.0


def test_summaries_of_a_cpu_and_a_gpu_run_are_not_compared():
    cpu = _summary({"aten::mm": (1, 900.0)}, device="cpu")
    got = explain(cpu, _summary({GEMM_128: (1, 90.0)}))
    assert (got.compared, got.reading, got.kernels, got.rows_for_table()) == (False, NOT_COMPARED, (), [])


def test_on_cpu_operators_keep_their_names_and_the_words_say_operators():
    before = _summary({"aten::mm": (1, 900.0), "aten::relu": (1, 100.0)}, host_ms=2.0, device="cpu")
    slower = _summary({"aten::mm": (1, 990.0), "aten::relu": (1, 100.0)}, host_ms=2.1, device="cpu")
    assert explain(before, slower).reading == "+0.09 ms in aten::mm (+10.0%), all other operators within 1%"
    overhead = _summary({"aten::mm": (1, 900.0), "aten::relu": (1, 100.0)}, host_ms=3.0, device="cpu")
    assert explain(before, overhead).reading == ("operator time unchanged, host time +50%: overhead outside "
                                                 "the operators")


def test_the_other_kernels_entry_is_matched_as_itself():
    before = _summary({OTHER: (40, 300.0), GEMM_128: (1, 1000.0)})
    after = _summary({OTHER: (45, 360.0), GEMM_128: (1, 1000.0)})
    assert explain(before, after).kernels[0].name == OTHER


def test_rows_for_a_text_table_rank_kernels_by_their_change_then_copies_launches_busy_and_host():
    before = _summary({GEMM_128: (1, 4000.0), ADD: (10, 100.0), "k3": (1, 50.0)}, launches=12,
                      copies=(CopyStat("DtoH", 1, 1000, 8.0),))
    after = _summary({GEMM_128: (1, 4400.0), ADD: (10, 90.0), "k3": (1, 50.0)}, launches=12,
                     copies=(CopyStat("DtoH", 1, 1000, 8.0),))
    rows = explain(before, after).rows_for_table(limit=2)
    assert all(len(row) == len(TABLE_HEAD) and all(isinstance(c, str) for c in row) for row in rows)
    assert [row[0] for row in rows] == [GEMM, "vectorized_elementwise_kernel[add]", "DtoH copies", "launches",
                                        "GPU time", "host"]
    assert rows[0] == (GEMM, "4 ms", "4.4 ms", "+0.4 ms", "103%", "")  # of +390 us in all
    assert rows[3] == ("launches", "12", "12", "+0", "", "")


def test_an_explanation_round_trips_through_json():
    got = explain(_summary({GEMM_128: (1, 4100.0)}, copies=(CopyStat("HtoD", 1, 64, 1.0),)),
                  _summary({GEMM_64: (1, 4310.0), ADD: (2, 20.0)}))
    raw = json.loads(json.dumps(got.to_json()))
    assert raw["version"] == 1 and raw["reading"] == got.reading
    assert Explanation.from_json(raw) == got
