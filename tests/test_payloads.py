"""Family records: written by benches, read back by the report; a missing field is an error, not an empty
plot."""

from __future__ import annotations

import json

import pytest

from perfkit.errors import BaselineError
from perfkit.resultfile import payloads
from perfkit.resultfile.model import BenchmarkEntry
from perfkit.resultfile.payloads import EpochStats, LargeBatch, Layer, RooflinePoint, VectorAdd
from tests.conftest import ROOT, typed

BASELINES = sorted((ROOT / "baselines").glob("*.json"))


def test_a_record_round_trips_through_json():
    layer = Layer("relu", "forward", (256, 3, 224, 224), "memory", 0, 123)
    raw = json.loads(json.dumps(layer.to_json()))
    assert raw["pass"] == "forward" and raw["version"] == Layer.VERSION
    assert Layer.from_json(raw) == layer
    batch = LargeBatch(4, 2048, 512, 1.6, "linear-warmup", 24, 24, "synthetic",
                       (EpochStats(0, 2.1, 0.2, 3.5), EpochStats(1, 1.7, 0.4, 1.9)))
    assert LargeBatch.from_json(json.loads(json.dumps(batch.to_json()))) == batch


def test_a_missing_field_names_the_field_and_the_benchmark():
    raw = VectorAdd("grid", "explicit", 100, (390625, 256)).to_json()
    del raw["k"]
    bench = BenchmarkEntry.from_json({"fullname": "benches/test_vector_add.py::test_gpu_explicit[K100-grid]",
                                      "stats": {"median": 1.0}, "extra_info": {"vector_add": raw}}, "test")
    with pytest.raises(
        BaselineError, match=r"test_gpu_explicit\[K100-grid\]: vector_add: field 'k' is missing"
    ):
        bench.record(VectorAdd)


def test_a_wrong_type_or_a_newer_version_is_refused():
    with pytest.raises(BaselineError, match="expected int"):
        VectorAdd.from_json({"scenario": "grid", "mode": "cpu", "k": "ten"})
    with pytest.raises(BaselineError, match="upgrade perfkit"):
        VectorAdd.from_json({"scenario": "grid", "mode": "cpu", "k": 1, "version": VectorAdd.VERSION + 1})


def test_context_that_older_runs_stored_beside_the_fields_is_ignored():
    point = RooflinePoint.from_json({"label": "vgg16", "flops": 2e9, "bytes": 1e8, "bytes_source": "ncu dram",
                                     "precision": "tf32", "attained_tflops": 3.0})
    assert point.intensity == pytest.approx(20.0)


def test_a_benchmark_of_another_family_has_no_record():
    bench = BenchmarkEntry.from_json(
        {"fullname": "b", "stats": {"median": 1.0}, "extra_info": {"layer": {}}}, "test"
    )
    assert bench.record(VectorAdd) is None


@pytest.mark.parametrize("path", BASELINES, ids=[p.stem for p in BASELINES])
def test_every_record_in_the_committed_baselines_reads(path):
    results = typed(json.loads(path.read_text()))
    assert results.unreadable(payloads.FAMILIES) == []
    found = {kind.TAG: len(list(results.family(kind))) for kind in payloads.FAMILIES}
    assert sum(found.values()) > 0
    one_gpu_nightly = (
        "vector_add",
        "layer",
        "vgg_swap",
        "memory_estimate",
        "ppp",
        "roofline",
        "peak",
        "layer_capacity",
        "time_to_accuracy",
    )
    expected = {
        "nvidia-h200-x1": (*one_gpu_nightly, "batch_epoch", "batch_capacity", "large_batch"),
        "nvidia-h100-80gb-hbm3-x1": one_gpu_nightly,
        # the quick profile runs the weekly families too; one GPU has no all-reduce to sweep
        "nvidia-h200-x1-quick": (*one_gpu_nightly, "batch_epoch", "batch_capacity", "large_batch", "scaling"),
        # a CPU has no PPP, roofline, data-parallel or large-batch runs (GPU only)
        "cpu-amd-epyc-2cpu-quick": (
            "vector_add",
            "layer",
            "vgg_swap",
            "memory_estimate",
            "peak",
            "layer_capacity",
            "batch_epoch",
            "batch_capacity",
            "time_to_accuracy",
        ),
        "nvidia-h200-x2": ("scaling", "allreduce_sweep", "large_batch", "layer_capacity"),
        # the nightly data-parallel and capacity families only (no weekly large-batch run yet)
        "nvidia-h100-80gb-hbm3-x2": ("scaling", "allreduce_sweep", "layer_capacity"),
        # its large-batch entries of old ids were dropped (2026-11-26) until a 4-GPU run saves them again
        "nvidia-h200-x4": ("scaling", "allreduce_sweep"),
    }
    families = expected.get(path.stem, ("scaling", "allreduce_sweep", "large_batch"))
    assert all(found[k] for k in families), {k: found[k] for k in families}


def test_a_roofline_without_a_point_is_an_unreadable_record_said_where_it_is():
    said = r"^b\.json: bench: roofline: holds no point; re-run its benchmark$"
    with pytest.raises(BaselineError, match=said):
        payloads.Roofline.from_json({"points": [], "version": 1}, "b.json: bench: roofline")
