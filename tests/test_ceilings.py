from __future__ import annotations

import pytest
import torch

from perfkit.errors import MeasurementError, UsageError
from perfkit.measure import ceilings

CPU = torch.device("cpu")


def test_copy_counts_bytes_read_and_written_and_checks_its_result():
    work = ceilings.copy_workload(CPU, 4096)
    assert work.amount == 2 * 4096
    work.run()
    work.check()


def test_a_copy_that_did_not_happen_fails_its_check():
    work = ceilings.copy_workload(CPU, 4096)
    with pytest.raises(MeasurementError):
        work.check()  # never ran: the destination still holds zeros


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_matmul_counts_two_flops_per_fma_and_checks_against_float64(precision):
    work = ceilings.matmul_workload(CPU, 96, precision)
    assert work.amount == 2 * 96**3
    work.run()
    work.check()


def test_a_wrong_product_fails_its_check(monkeypatch):
    monkeypatch.setattr(ceilings.torch, "mm", lambda a, b, out: out.copy_(a))
    work = ceilings.matmul_workload(CPU, 64, "fp32")
    work.run()
    with pytest.raises(MeasurementError, match="relative error"):
        work.check()


def test_float32_matmul_precision_is_restored():
    before = torch.get_float32_matmul_precision()
    with ceilings.float32_matmul("tf32"):
        assert torch.get_float32_matmul_precision() == "high"
    assert torch.get_float32_matmul_precision() == before


def test_the_precision_in_use_follows_torchs_switches(monkeypatch):
    gpu, cpu = torch.device("cuda"), torch.device("cpu")
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", True)
    assert ceilings.precision_in_use("conv", gpu) == "tf32"
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    assert ceilings.precision_in_use("conv", gpu) == "fp32"
    with ceilings.float32_matmul("tf32"):
        assert ceilings.precision_in_use("matmul", gpu) == "tf32"
    with ceilings.float32_matmul("fp32"):
        assert ceilings.precision_in_use("matmul", gpu) == "fp32"
    assert ceilings.precision_in_use("conv", cpu) == "fp32"
    assert ceilings.precision_in_use("matmul", gpu, torch.bfloat16) == "bf16"


@pytest.mark.parametrize("op, dtype, match", [("attention", torch.float32, "unknown op kind"),
                                              ("conv", torch.float64, "no ceiling for torch.float64")])
def test_unknown_precisions_are_refused(op, dtype, match):
    with pytest.raises(UsageError, match=match):
        ceilings.precision_in_use(op, torch.device("cuda"), dtype)
