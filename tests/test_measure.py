"""Recording rates against ceilings, and absences with reasons where a figure cannot be measured."""
from __future__ import annotations

import pytest
import torch

from perfkit.measure import record
from perfkit.measure.ceilings import CeilingStore
from perfkit.results import datasheet
from perfkit.results.metrics import MetricRecorder

H200 = datasheet.by_key("h200")


def test_a_compute_rate_is_recorded_with_its_share_of_the_measured_and_datasheet_peaks():
    extra: dict = {}
    store = CeilingStore(measured={"matmul_tflops_tf32": 400.0})
    record.record_rate(MetricRecorder(extra), [0.001, 0.002, 0.001], 2e11, compute=True,
                        ceiling_key="matmul_tflops_tf32", ceilings=store, spec=H200)
    m = extra["metrics"]
    assert m["tflops"]["value"] == pytest.approx(200.0) and len(m["tflops"]["samples"]) == 3
    assert m["pct_of_peak"]["value"] == pytest.approx(0.5)
    assert m["pct_of_datasheet"]["value"] == pytest.approx(200.0 / H200.tflops["tf32"])
    assert extra["peak"] == {"key": "matmul_tflops_tf32", "measured": 400.0,
                             "measured_source": "measured in this run", "datasheet": H200.tflops["tf32"]}


def test_a_bandwidth_without_a_measured_ceiling_records_why():
    extra: dict = {}
    record.record_rate(MetricRecorder(extra), [0.5], 1e9, compute=False, ceiling_key=datasheet.COPY,
                        ceilings=CeilingStore(), spec=None)
    assert extra["metrics"]["bandwidth_gbps"]["value"] == pytest.approx(2.0)
    assert "benches/test_ceilings.py" in extra["metrics_absent"]["pct_of_copy_peak"]
    assert "pct_of_datasheet" in extra["metrics_absent"]


@pytest.mark.parametrize("times, amount, reason", [([], 1e9, "disabled"), ([0.1], 0, "no counted work")])
def test_no_rate_without_times_or_work(times, amount, reason):
    extra: dict = {}
    record.record_rate(MetricRecorder(extra), times, amount, compute=True, ceiling_key="matmul_tflops_fp32",
                        ceilings=CeilingStore(), spec=None)
    assert "metrics" not in extra and reason in extra["metrics_absent"]["tflops"]


def test_peak_memory_on_a_cpu_is_absent_with_a_reason():
    extra: dict = {}
    assert record.record_peak_memory(MetricRecorder(extra), lambda: None, torch.device("cpu")) is None
    assert set(extra["metrics_absent"]) == {"peak_allocated_mib", "peak_reserved_mib"}
