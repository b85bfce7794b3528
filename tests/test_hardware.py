from __future__ import annotations

import dataclasses
import os

import pytest
import torch

from perfkit.errors import HardwareError, UsageError
from perfkit.measure import hardware
from perfkit.resultfile import datasheet
from perfkit.resultfile.fingerprint import Fingerprint


@pytest.mark.parametrize("model, expected", [
    ("Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", "intel-xeon-platinum-8481c"),
    ("AMD EPYC 7763 64-Core Processor", "amd-epyc-7763-64-core"),
    ("Apple M2 Pro", "apple-m2-pro"),
    ("x86_64", "x86-64"),  # platform.machine() where the model name is empty: an id keeps no '_' or '.'
    ("Ampere Altra v1.2 -- Q80", "ampere-altra-v1-2-q80"),
])
def test_cpu_slugs(model, expected):
    assert hardware.model_slug(model) == expected
    assert hardware.hardware_id("cpu", None, 0, model, 2) == f"cpu-{expected}-2cpu"


@pytest.mark.parametrize("name, count, expected", [
    ("NVIDIA H200", 1, "nvidia-h200-x1"),
    ("NVIDIA H200", 4, "nvidia-h200-x4"),
    ("Tesla V100-SXM2-32GB", 8, "tesla-v100-sxm2-32gb-x8"),
])
def test_gpu_ids_name_the_box(name, count, expected):
    assert hardware.hardware_id("cuda", name, count, "any cpu", 16) == expected


def test_a_cpu_run_on_a_gpu_box_gets_the_cpu_id():
    assert hardware.hardware_id("cpu", "NVIDIA H200", 1, "AMD EPYC 9654", 16) == "cpu-amd-epyc-9654-16cpu"


def test_the_cpu_signature_tells_apart_hosts_that_share_a_model_name():
    epyc = (
        "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD "
        "EPYC\n\n"
        "processor\t: 1\ncpu family\t: 99\nmodel\t\t: 9\n"
    )
    assert hardware.cpu_signature(epyc) == "family 26 model 2"
    assert hardware.cpu_signature("processor\t: 0\nCPU implementer\t: 0x41\n") is None  # no x86 family: Arm


def test_a_cpu_run_on_a_virtual_machine_is_named_by_its_boot_too(tmp_path, monkeypatch):
    vm, bare, boot = tmp_path / "vm", tmp_path / "bare", tmp_path / "boot_id"
    (tmp_path / "dmi").mkdir()
    vm.write_text("processor\t: 0\nflags\t\t: fpu vme hypervisor avx2\n")
    bare.write_text("processor\t: 0\nflags\t\t: fpu vme avx2\n")
    boot.write_text("0b7c\n")
    assert hardware._vm_boot(str(vm), str(boot)) == "0b7c"
    # a bare-metal box keeps its id across reboots (no firmware names a hypervisor: an empty DMI folder)
    assert hardware._vm_boot(str(bare), str(boot), str(tmp_path / "dmi"), str(tmp_path / "none")) == ""
    assert hardware._vm_boot(str(vm), str(tmp_path / "none")) == ""
    arm = tmp_path / "arm"  # an Arm VM: no flags line; its firmware names the hypervisor
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd\n")
    assert hardware._vm_boot(str(arm), str(boot), str(tmp_path / "dmi"), str(tmp_path / "none")) == ""
    (tmp_path / "xen").write_text("xen\n")
    assert hardware._vm_boot(str(arm), str(boot), str(tmp_path / "dmi"), str(tmp_path / "xen")) == "0b7c"
    (tmp_path / "dmi" / "sys_vendor").write_text("QEMU\n")
    assert hardware._vm_boot(str(arm), str(boot), str(tmp_path / "dmi"), str(tmp_path / "none")) == "0b7c"
    # two VMs of one image (one host name, one /etc/machine-id) differ by their boots
    names = set()
    for boot_id in ("first", "second"):
        monkeypatch.setattr(hardware, "_vm_boot", lambda boot_id=boot_id: boot_id)
        names.add(hardware.machine_id("cpu", 0))
    assert len(names) == 2


def test_the_fingerprint_counts_the_cpus_this_process_may_use(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    fp = hardware.fingerprint("cpu")
    assert fp.cpu_count == 2 and fp.hardware_id.endswith("-2cpu")


@pytest.mark.parametrize("cuda_name, key", [
    ("Tesla K80", "k80"),
    ("NVIDIA GeForce GTX 1080 Ti", "gtx-1080-ti"),
    ("Tesla V100-SXM2-32GB", "v100-sxm2"),
    ("Tesla V100-PCIE-16GB", "v100-pcie"),
    ("Quadro RTX 8000", "rtx-8000"),
    ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
    ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA H200", "h200"),
    ("NVIDIA B200", "b200"),
])
def test_datasheet_lookup_by_cuda_device_name(cuda_name, key):
    assert datasheet.lookup(cuda_name).key == key


def test_unknown_gpu_has_no_datasheet_entry():
    assert datasheet.lookup("Some Future GPU") is None


def test_every_datasheet_entry_has_a_source_fp32_and_bandwidth():
    for spec in datasheet.GPUS:
        assert spec.source and spec.bandwidth_gbps > 0 and spec.peak_tflops("fp32") > 0
        assert spec.ceiling(datasheet.COPY) == spec.bandwidth_gbps
        assert spec.ceiling(datasheet.matmul_key("fp32")) == spec.tflops["fp32"]


def test_unknown_device_is_a_usage_error():
    with pytest.raises(UsageError, match="auto, cpu or cuda"):
        hardware.resolve_device("tpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without a GPU")
def test_asking_for_cuda_without_a_gpu_says_what_to_use_instead():
    with pytest.raises(HardwareError, match="use auto or cpu"):
        hardware.resolve_device("cuda")
    assert hardware.resolve_device("auto") == "cpu"


def test_fingerprint_of_this_machine_has_every_field():
    fp = hardware.fingerprint("cpu").to_json()
    assert fp["hardware_id"].startswith("cpu-")
    assert fp["torch"] == torch.__version__ and fp["python"] and fp["cpu_count"] >= 1


def test_the_measured_fingerprint_is_the_record_every_reader_reads_back():
    fp = hardware.fingerprint("cpu")
    assert isinstance(fp, Fingerprint) and fp.device == "cpu" and fp.recorded is None
    written = fp.to_json()
    assert list(written) == [f.name for f in dataclasses.fields(Fingerprint)
                             if f.name not in ("extra", "recorded")]
    assert Fingerprint.from_json(written, "run.json") == fp
