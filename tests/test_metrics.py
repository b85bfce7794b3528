from __future__ import annotations

import pytest

from perfkit.errors import BaselineError, UsageError
from perfkit.results.metrics import Metric, MetricRecorder, metrics_of


def test_recorded_metrics_follow_the_json_contract():
    extra: dict = {}
    rec = MetricRecorder(extra)
    rec.record("bandwidth_gbps", unit="GB/s", better="higher", samples=[3.0, 1.0, 2.0])
    rec.record("flops", 1234, "FLOP", "none")
    assert extra["metrics"]["bandwidth_gbps"] == {"value": 2.0, "unit": "GB/s", "better": "higher",
                                                  "samples": [3.0, 1.0, 2.0]}
    assert extra["metrics"]["flops"] == {"value": 1234.0, "unit": "FLOP", "better": "none"}
    assert set(metrics_of({"extra_info": extra})) == {"bandwidth_gbps", "flops"}


def test_absent_metrics_carry_a_reason_not_a_zero():
    extra: dict = {}
    MetricRecorder(extra).absent("avg_power_w", "NVML is not available")
    assert extra == {"metrics_absent": {"avg_power_w": "NVML is not available"}}


@pytest.mark.parametrize("kwargs, match", [
    ({"value": 1.0, "better": "up"}, "better"),
    ({"value": float("nan")}, "finite"),
    ({}, "needs a value or samples"),
])
def test_bad_metrics_are_refused(kwargs, match):
    with pytest.raises(UsageError, match=match):
        MetricRecorder({}).record("m", **kwargs)


def test_a_malformed_stored_metric_is_a_baseline_error():
    with pytest.raises(BaselineError, match="'m' is malformed"):
        metrics_of({"extra_info": {"metrics": {"m": {"value": "fast"}}}})


def test_metric_round_trips_through_json():
    metric = Metric.from_samples([1.0, 2.0, 4.0], "ms", "lower")
    assert Metric.from_json("m", metric.to_json()) == metric
