"""PALEO-style prediction arithmetic and the course's K80 question."""
from __future__ import annotations

import json
import re

import pytest

from perfkit import cli
from perfkit.errors import UsageError
from perfkit.resultfile import datasheet
from perfkit.workloads import flops, paleo

K80 = datasheet.by_key("k80")


def test_a_layer_is_bounded_by_the_slower_of_compute_and_memory():
    table = flops.flop_table("vgg16", (1, 3, 224, 224))
    pred = paleo.predict(table, K80, "fp32")
    for layer, row in zip(pred.layers, table.rows):
        assert layer.compute_s == pytest.approx(row.flops / 4.365e12)
        assert layer.memory_s == pytest.approx((row.input_elems + row.params + row.output_elems) * 4 / 240e9)
        assert layer.pipelined_s == max(layer.compute_s, layer.memory_s) <= layer.serial_s
    assert pred.pipelined_s == pytest.approx(sum(x.pipelined_s for x in pred.layers))


def test_ppp_scales_the_time_inversely():
    table = flops.flop_table("resnet50", (1, 3, 224, 224))
    full, half = paleo.predict(table, K80, "fp32", 1.0), paleo.predict(table, K80, "fp32", 0.5)
    assert half.pipelined_s == pytest.approx(2 * full.pipelined_s)


@pytest.mark.parametrize("model", ["vgg16", "googlenet", "resnet50"])
def test_k80_double_precision_is_slower_by_at_most_the_peak_ratio(model):
    table = flops.flop_table(model, (1, 3, 224, 224))
    single, double = paleo.predict(table, K80, "fp32"), paleo.predict(table, K80, "fp64")
    # fp64 has 1/3 of the fp32 peak and moves twice the bytes
    assert 2.0 < double.pipelined_s / single.pipelined_s <= 3.0 + 1e-9


def test_at_batch_1_vggs_convolutions_are_compute_bound_and_its_classifier_memory_bound():
    pred = paleo.predict(flops.flop_table("vgg16", (1, 3, 224, 224)), K80, "fp32")
    bounds = {layer.name: layer.bound for layer in pred.layers}
    assert bounds["features.2"] == "compute"  # 3x3 conv, 64 -> 64 channels at 224x224
    assert bounds["classifier.0"] == "memory"  # 25088 x 4096 weights read once for one image
    assert pred.pipelined_s > sum(x.flops for x in pred.layers) / 4.365e12


def test_cli_predict_json(capsys):
    assert cli.main(["predict", "resnet50", "--gpu", "k80", "--precision", "fp64", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert (
        payload["gpu"] == "k80" and payload["peak_tflops"] == 1.455 and "K80 datasheet" in payload["source"]
    )
    assert payload["predicted_s"] > 0 and len(payload["layers"]) > 100


def test_a_device_name_finds_its_datasheet_entry():
    assert paleo.gpu_spec("Tesla K80").key == "k80"
    assert paleo.gpu_spec("Tesla V100-SXM2-16GB").key == "v100-sxm2"
    assert paleo.gpu_spec("V100-PCIE").key == "v100-pcie" and paleo.gpu_spec("gtx").key == "gtx-1080-ti"


@pytest.mark.parametrize("name, choices", [("v100", "v100-sxm2 (NVIDIA Tesla V100 SXM2), v100-pcie"),
                                           ("H100", "h100-pcie (NVIDIA H100 PCIe), h100-sxm"),
                                           ("a100", "a100-80gb (NVIDIA A100 80GB SXM), a100-40gb")])
def test_a_name_several_entries_share_is_refused_with_the_choices(name, choices, capsys):
    with pytest.raises(UsageError, match=rf"'{name}' names 2 datasheet entries whose peaks differ: "
                                         rf"{re.escape(choices)}"):
        paleo.gpu_spec(name)
    assert cli.main(["predict", "alexnet", "--gpu", name]) == cli.EXIT_USAGE
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: paleo.gpu_spec("x100"), "unknown GPU 'x100'; choose one of k80, gtx-1080-ti"),
        (
            lambda: paleo.predict(flops.flop_table("alexnet", (1, 3, 224, 224)), K80, "bf16"),
            "no bf16 peak for k80",
        ),
        (
            lambda: paleo.predict(flops.flop_table("alexnet", (1, 3, 224, 224)), K80, "fp32", 0),
            "percent of peak",
        ),
    ],
)
def test_bad_prediction_requests(call, match):
    with pytest.raises(UsageError, match=match):
        call()
