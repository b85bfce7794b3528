"""The course's single layers: FLOPs agree with the PALEO formulas, bytes with the documented model."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from perfkit.errors import MeasurementError, UsageError
from perfkit.workloads import layers

CPU = torch.device("cpu")
N = 2


def run(name: str, pass_: str) -> layers.LayerRun:
    case = layers.by_name(name)
    return layers.LayerRun(case, case.input_shape(N), CPU, pass_)


def test_the_course_shapes():
    assert [c.input_shape() for c in layers.LAYERS] == [(256, 3, 224, 224)] * 3 + [(256, 25088)]
    assert layers.by_name("conv").input_shape(8) == (8, 3, 224, 224)


def test_conv_flops_follow_paleo():
    # forward: 2·kh·kw·Cin·Hout·Wout·Cout·N; backward computes grad input and grad weight, as many again each
    forward = 2 * 3 * 3 * 3 * 224 * 224 * 128 * N
    assert run("conv", "forward").work().flops == forward
    assert run("conv", "forward_backward").work().flops == 3 * forward


def test_linear_flops_follow_paleo():
    forward = 2 * 25088 * 4096 * N
    assert run("linear", "forward").work().flops == forward
    assert run("linear", "forward_backward").work().flops == 3 * forward


@pytest.mark.parametrize("name", ["relu", "maxpool"])
def test_activation_and_pooling_count_no_flops(name):
    assert run(name, "forward").work().flops == 0


def test_relu_bytes():
    s = N * 3 * 224 * 224 * 4
    assert run("relu", "forward").work().min_bytes == 2 * s  # read and write in place
    # clone (2S) + forward (2S) + backward reads grad and saved output, writes grad input (3S)
    assert run("relu", "forward_backward").work().min_bytes == 7 * s


def test_maxpool_bytes():
    s = N * 3 * 224 * 224 * 4
    assert run("maxpool", "forward").work().min_bytes == s + s // 4
    assert run("maxpool", "forward_backward").work().min_bytes == (s + s // 4) + (s // 4 + s + s)


@pytest.mark.parametrize("pass_", layers.PASSES)
@pytest.mark.parametrize("name", [c.name for c in layers.LAYERS])
def test_every_layer_runs_and_passes_its_check(name, pass_):
    r = run(name, pass_)
    r()
    r()
    r.check()


def test_backward_does_not_accumulate_gradients_across_calls():
    r = run("linear", "forward_backward")
    r()
    first = r.module.weight.grad.clone()
    r()
    assert torch.equal(r.module.weight.grad, first)


class WrongInFloat32(nn.Module):
    """Right in float64 (the reference), wrong in float32 (the device path): the check must catch it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + (1.0 if x.dtype == torch.float32 else 0.0)


def test_a_wrong_result_fails_the_check():
    case = layers.LayerCase("wrong", WrongInFloat32, (N, 8), "memory")
    with pytest.raises(MeasurementError, match="wrong output is wrong"):
        layers.LayerRun(case, case.input_shape(), CPU, "forward").check()


@pytest.mark.parametrize("call, match", [
    (lambda: layers.by_name("softmax"), "unknown layer 'softmax'; choose one of relu, maxpool, conv, linear"),
    (lambda: layers.LayerRun(layers.LAYERS[0], (1, 3, 4, 4), CPU, "backward"), "unknown pass 'backward'"),
])
def test_bad_requests_are_clear(call, match):
    with pytest.raises(UsageError, match=match):
        call()
