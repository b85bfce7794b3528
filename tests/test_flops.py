"""FLOP accounting: FlopCounterMode and the PALEO formulas agree, totals match torchvision's figures."""
from __future__ import annotations

import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from perfkit import cli
from perfkit.errors import UsageError
from perfkit.workloads import flops

#: torchvision's documented "GFLOPS" (multiply-accumulates) at 224x224.
TORCHVISION_GMACS = {"resnet18": 1.814, "resnet50": 4.089, "vgg16": 15.47, "vgg19": 19.63}


def _both_counts(module: nn.Module, x: torch.Tensor) -> tuple[int, int | None]:
    with torch.no_grad():
        out = module(x)
        counted = flops.count_flops(lambda: module(x))
    return counted, flops.analytic_flops(module, x, out)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 3), cin_per_group=st.integers(1, 4), cout_per_group=st.integers(1, 4),
       groups=st.integers(1, 3), k=st.integers(1, 4), stride=st.integers(1, 3), padding=st.integers(0, 2),
       size=st.integers(5, 12), bias=st.booleans())
def test_conv_formula_agrees_with_the_counter(
    n, cin_per_group, cout_per_group, groups, k, stride, padding, size, bias
):
    conv = nn.Conv2d(cin_per_group * groups, cout_per_group * groups, k, stride=stride, padding=padding,
                     groups=groups, bias=bias)
    counted, analytic = _both_counts(conv, torch.randn(n, cin_per_group * groups, size, size))
    assert counted == analytic


@settings(max_examples=40, deadline=None)
@given(batch=st.lists(st.integers(1, 4), min_size=1, max_size=2), fin=st.integers(1, 64),
       fout=st.integers(1, 64), bias=st.booleans())
def test_linear_formula_agrees_with_the_counter(batch, fin, fout, bias):
    counted, analytic = _both_counts(nn.Linear(fin, fout, bias=bias), torch.randn(*batch, fin))
    assert counted == analytic


@pytest.mark.parametrize("module, x, expected", [
    (nn.ReLU(), torch.randn(2, 3, 4, 4), 2 * 3 * 4 * 4),
    (nn.MaxPool2d(2, 2), torch.randn(2, 3, 4, 4), 4 * 2 * 3 * 2 * 2),
    (nn.MaxPool2d(3, 2, padding=1), torch.randn(1, 1, 8, 8), 9 * 16),
    (nn.AdaptiveAvgPool2d(1), torch.randn(1, 2, 7, 7), 49 * 2),
    (nn.BatchNorm2d(3), torch.randn(2, 3, 4, 4), 2 * 2 * 3 * 4 * 4),
    (nn.Dropout(), torch.randn(5), 0),
])
def test_layers_the_counter_ignores_have_analytic_flops(module, x, expected):
    counted, analytic = _both_counts(module.eval(), x)
    assert counted == 0 and analytic == expected


def test_layers_without_a_formula_are_not_guessed():
    assert flops.analytic_flops(nn.Softmax(dim=1), torch.randn(2, 3), torch.randn(2, 3)) is None


@pytest.mark.parametrize("name", sorted(TORCHVISION_GMACS))
def test_counted_macs_match_torchvisions_documented_gflops(name):
    table = flops.flop_table(name, (1, 3, 224, 224))
    assert table.counted_flops / 2 / 1e9 == pytest.approx(TORCHVISION_GMACS[name], abs=0.006)
    assert table.total_flops == table.counted_flops + table.uncounted_flops
    assert sum(r.share for r in table.rows) == pytest.approx(1.0)


@pytest.mark.parametrize("name, share", [("vgg16", 0.991), ("vgg19", 0.993)])
def test_convolutions_hold_about_99_percent_of_vgg_forward_flops(name, share):
    assert flops.flop_table(name, (1, 3, 224, 224)).conv_flop_share == pytest.approx(share, abs=0.001)


def test_forward_backward_is_about_three_times_forward():
    table = flops.flop_table("resnet18", (2, 3, 64, 64))
    assert 2.5 < table.forward_backward_flops / table.total_flops < 3.0  # the first conv needs no input grad


def test_a_module_called_twice_sums_its_calls():
    rows = {r.name: r for r in flops.flop_table("resnet18", (1, 3, 64, 64)).rows}
    assert rows["layer1.0.relu"].calls == 2
    assert rows["layer1.0.relu"].analytic_flops == 2 * 64 * 16 * 16


def test_cli_json_has_the_documented_fields(capsys):
    assert cli.main(["flops", "vgg19", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    for key in ("total_flops", "total_macs", "params", "conv_flop_share", "layers", "convention"):
        assert key in payload
    assert payload["params"] == 143_667_240 and payload["total_macs"] == payload["total_flops"] // 2
    assert {"name", "type", "output_shape", "params", "flops", "macs", "share", "source"} <= set(
        payload["layers"][0]
    )


def test_cli_per_layer_table_states_the_convention(capsys):
    assert cli.main(["flops", "alexnet", "--per-layer"]) == 0
    out = capsys.readouterr().out
    assert "multiply-add as 2" in out and "features.0" in out and "analytic (not counted" in out


@pytest.mark.parametrize(("command", "said"), [
    (["flops", "alexnet", "--batch", "100000000000000"],
     "an input of shape 100000000000000x3x224x224 holds more than PyTorch can size (2^63 bytes)"),
    (["flops", "alexnet", "--batch", "1" + "0" * 23], "an input of shape 1" + "0" * 23 + "x3x224x224 holds"),
    (["predict", "alexnet", "--gpu", "h200", "--batch", "100000000000000"],
     "holds more than PyTorch can size"),
    # the input fits in 2^63 bytes, the first convolution's output does not
    (["flops", "alexnet", "--batch", "13000000000000"],
     "layer features.0 (Conv2d) would make a tensor of more than PyTorch can size"),
])
def test_a_batch_too_large_for_pytorch_to_size_is_one_sentence(capsys, command, said):
    assert cli.main(command) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and said in err and "give a smaller --batch or --input" in err


def test_unknown_model_lists_the_valid_ones():
    with pytest.raises(
        UsageError,
        match="choose one of alexnet, googlenet, resnet18, resnet18-cifar, resnet50, resnet50-cifar, "
              "tiny-cnn, vgg16, vgg16-swapped, vgg19",
    ):
        flops.flop_table("lenet", (1, 3, 32, 32))


def test_each_layers_backward_takes_its_input_and_weight_gradients():
    rows = {r.name: r for r in flops.flop_table("resnet18", (2, 3, 64, 64)).rows}
    assert rows["conv1"].backward_flops == rows["conv1"].flops  # the image needs no gradient: weights only
    assert rows["layer1.0.conv1"].backward_flops == 2 * rows["layer1.0.conv1"].flops  # input and weights
    assert rows["layer2.0.downsample.0"].backward_flops == 2 * rows["layer2.0.downsample.0"].flops
    assert rows["fc"].backward_flops == 2 * rows["fc"].flops
    assert rows["relu"].backward_flops == rows["relu"].flops  # analytic: the forward's figure again


@pytest.mark.parametrize("name, shape", [("resnet18", (2, 3, 64, 64)), ("resnet50", (1, 3, 64, 64)),
                                         ("vgg16", (1, 3, 32, 32)), ("googlenet", (1, 3, 64, 64))])
def test_the_layers_forward_and_backward_add_up_to_the_counters_whole_pass(name, shape):
    table = flops.flop_table(name, shape)
    assert sum(r.flops + r.backward_flops for r in table.rows) == table.forward_backward_flops


@pytest.mark.parametrize("name, shape", [("resnet18", (3, 64, 64)), ("vgg16", (3, 32, 32))])
def test_a_table_scaled_to_another_batch_is_the_table_counted_at_it(name, shape):
    counted = flops.flop_table(name, (6, *shape))
    scaled = flops.flop_table(name, (1, *shape)).at_batch(6)
    assert scaled.to_json() == counted.to_json()
