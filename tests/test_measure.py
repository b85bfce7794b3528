"""Recording rates with the ceiling they are a share of, and absences with reasons where a figure cannot be
measured."""

from __future__ import annotations

import pytest
import torch

from perfkit.measure import record
from perfkit.resultfile import datasheet
from perfkit.resultfile.metrics import MetricRecorder
from perfkit.resultfile.payloads import RatePeak

H200 = datasheet.by_key("h200")


def test_a_compute_rate_is_recorded_with_its_datasheet_share_and_the_ceiling_it_divides_by():
    extra: dict = {}
    record.record_rate(MetricRecorder(extra), [0.001, 0.002, 0.001], 2e11, compute=True,
                        ceiling_key="matmul_tflops_tf32", spec=H200)
    m = extra["metrics"]
    assert m["tflops"]["value"] == pytest.approx(200.0) and len(m["tflops"]["samples"]) == 3
    assert m["share_of_datasheet"]["value"] == pytest.approx(200.0 / H200.tflops["tf32"])
    assert "share_of_peak" not in m  # a share of this run's ceiling: added by the derived pass
    assert RatePeak.from_json(extra["peak"]) == RatePeak("matmul_tflops_tf32", H200.tflops["tf32"])


def test_a_bandwidth_without_a_datasheet_records_why():
    extra: dict = {}
    record.record_rate(
        MetricRecorder(extra), [0.5], 1e9, compute=False, ceiling_key=datasheet.COPY, spec=None
    )
    assert extra["metrics"]["bandwidth_gbps"]["value"] == pytest.approx(2.0)
    assert "share_of_datasheet" in extra["metrics_absent"]


@pytest.mark.parametrize("times, amount, reason", [([], 1e9, "disabled"), ([0.1], 0, "no counted work")])
def test_no_rate_without_times_or_work(times, amount, reason):
    extra: dict = {}
    record.record_rate(MetricRecorder(extra), times, amount, compute=True, ceiling_key="matmul_tflops_fp32",
                        spec=None)
    assert "metrics" not in extra and reason in extra["metrics_absent"]["tflops"]


def test_peak_memory_on_a_cpu_is_absent_with_a_reason():
    extra: dict = {}
    assert record.record_peak_memory(MetricRecorder(extra), lambda: None, torch.device("cpu")) is None
    assert set(extra["metrics_absent"]) == {"peak_allocated_mib", "peak_reserved_mib"}
