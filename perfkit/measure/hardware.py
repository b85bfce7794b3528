"""What machine a result came from: a coarse hardware id and the full fingerprint.

The id names the box (``nvidia-h200-x1``, ``cpu-intel-xeon-platinum-8481c-8cpu``) and picks the
baseline file; the fingerprint (driver, CUDA, library versions: the record of
perfkit.resultfile.fingerprint, which every reader of a result file reads back) goes into
pytest-benchmark's ``machine_info`` so a comparison can say "driver changed" beside a regression.
"""
from __future__ import annotations

import hashlib
import os
import platform
import re
import sys
from importlib import metadata

from perfkit.cpus import usable_cpus
from perfkit.errors import HardwareError, UsageError
from perfkit.measure import clocks
from perfkit.measure.nvml import nvml_open
from perfkit.render.tables import slug
from perfkit.resultfile import datasheet
from perfkit.resultfile.fingerprint import DeviceKind, Fingerprint


def model_slug(text: str) -> str:
    """A GPU's or CPU's model name as the hardware id spells it: lower-case words joined by '-', without
    trademarks, 'CPU' and clock speeds (a stored key: its spelling must not change)."""
    text = re.sub(r"\((r|tm|c)\)", " ", text, flags=re.IGNORECASE)
    text = re.sub(r"@.*$", " ", text)
    text = re.sub(r"\b(cpu|processor)\b", " ", text, flags=re.IGNORECASE)
    return slug(text.lower())


def hardware_id(device: DeviceKind, gpu_name: str | None, gpu_count: int, cpu_model: str,
                cpu_count: int) -> str:
    """The box: the GPU model and how many (``nvidia-h200-x1``), or the CPU model and how many logical CPUs
    this process may use (``cpu-amd-epyc-2cpu``): cloud runners of one CPU model come with 2 to 64 of them."""
    if device == "cuda" and gpu_name:
        return f"{model_slug(gpu_name)}-x{gpu_count}"
    return f"cpu-{model_slug(cpu_model) or model_slug(platform.machine()) or 'unknown'}-{cpu_count}cpu"


def cpu_signature(cpuinfo: str | None = None) -> str | None:
    """The x86 CPU family and model (``family 26 model 2``), from ``/proc/cpuinfo`` (or ``cpuinfo``'s text).

    A cloud VM often names its CPU only "AMD EPYC", so two hosts of different generations share the
    model name and the hardware id; the signature tells them apart beside a verdict. None elsewhere.
    """
    fields: dict[str, str] = {}
    for line in (_read("/proc/cpuinfo") if cpuinfo is None else cpuinfo).splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            if fields:
                break  # the first processor's block is enough
            continue
        fields.setdefault(key.strip(), value.strip())
    if "cpu family" not in fields or "model" not in fields:
        return None
    return f"family {fields['cpu family']} model {fields['model']}"


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo (Linux), else what platform knows."""
    for line in _read("/proc/cpuinfo").splitlines():
        if line.lower().startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _driver_version() -> str | None:
    """The NVIDIA driver version from NVML; None where NVML or the driver is missing."""
    try:
        with nvml_open() as nvml:
            try:
                version = nvml.nvmlSystemGetDriverVersion()
            except nvml.NVMLError:
                return None
    except HardwareError:
        return None
    return version.decode() if isinstance(version, bytes) else str(version)


def gpu_count() -> int:
    import torch  # seconds to import: only what asks about GPUs pays for it

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


#: What a GPU that torch could see leaves on a Linux host: the NVIDIA driver's files, WSL's GPU device,
#: ROCm's compute device (torch.cuda on AMD GPUs).
GPU_DRIVER_FILES = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/dxg", "/dev/kfd")


def no_gpu_driver() -> bool:
    """True where no GPU can be visible to torch, told without importing it (seconds): a Linux host without
    any GPU driver's files, or a Mac (torch.cuda has no macOS build). False means "ask torch"."""
    if sys.platform == "darwin":
        return True
    return sys.platform.startswith("linux") and not any(os.path.exists(f) for f in GPU_DRIVER_FILES)


def hardware_id_here(wanted: str) -> str:
    """This machine's hardware id for the device ``wanted`` (auto, cpu, cuda), as :func:`fingerprint` names
    it; a CPU's without importing torch (``perfkit hw --id`` answers scripts, which wait for it)."""
    if wanted == "cpu" or (wanted == "auto" and no_gpu_driver()):
        return hardware_id("cpu", None, 0, cpu_model(), usable_cpus())
    return fingerprint(resolve_device(wanted)).hardware_id or "unknown"  # a measured one always has its id


def resolve_device(wanted: str) -> DeviceKind:
    """'auto' becomes 'cuda' where a GPU is visible, else 'cpu'; asking for a missing GPU is an error."""
    if wanted not in ("auto", "cpu", "cuda"):
        raise UsageError(f"unknown device {wanted!r}; choose auto, cpu or cuda")
    if wanted == "cuda" and not gpu_count():
        raise HardwareError("the device cuda was asked for, but no CUDA GPU is visible; use auto or cpu")
    return "cuda" if wanted == "cuda" or (wanted == "auto" and gpu_count()) else "cpu"


def fingerprint(device: DeviceKind, memory_cap: int | None = None) -> Fingerprint:
    """Read the machine; ``device`` is the one this run measures ('cuda' or 'cpu'), ``memory_cap`` the
    allocator cap in bytes (perfkit.measure.capacity), if any."""
    import torch

    cpu, cpus = cpu_model(), usable_cpus()
    gpu_name = memory = capability = spec_key = None
    count = gpu_count()
    if count:
        props = torch.cuda.get_device_properties(0)
        gpu_name = props.name
        memory = round(props.total_memory / 2**30, 1)
        capability = f"{props.major}.{props.minor}"
        spec = datasheet.lookup(props.name)
        spec_key = spec.key if spec else None
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return Fingerprint(
        hardware_id=hardware_id(device, gpu_name, count, cpu, cpus),
        device=device,
        gpu_name=gpu_name,
        gpu_count=count,
        gpu_memory_gib=memory,
        compute_capability=capability,
        datasheet_key=spec_key,
        driver=_driver_version() if count else None,
        cuda=torch.version.cuda,
        cudnn=str(cudnn) if cudnn else None,
        torch=torch.__version__,
        torchvision=_version("torchvision"),
        numba=_version("numba"),
        numba_cuda=_version("numba-cuda"),
        python=sys.version.split()[0],
        cpu_model=cpu,
        cpu_count=cpus,
        memory_cap_gib=round(memory_cap / 2**30, 2) if memory_cap is not None else None,
        cpu_signature=cpu_signature(),
        machine=machine_id(device, count),
        sm_clock=clocks.sm_clocks(0) if count else None,
    )


def machine_id(device: DeviceKind, gpus: int) -> str:
    """A short stable name of the physical machine: its GPUs' UUIDs for a GPU run (a lent VM may get a new
    host name each time), else the host name and /etc/machine-id, and on a virtual machine this boot's id
    too (:func:`_vm_boot`). Runs of one machine share their noise; runs of two machines of one kind add a
    between-machine term (perfkit.verdict.noise)."""
    if device == "cuda" and gpus:
        import torch

        parts = [str(torch.cuda.get_device_properties(i).uuid) for i in range(gpus)]
    else:
        parts = [platform.node(), _read("/etc/machine-id"), _vm_boot()]
    return hashlib.sha256("/".join(p for p in parts if p).encode()).hexdigest()[:12]


#: What the firmware of a virtual machine names its maker or product (DMI), where the CPU flags do not say
#: (an Arm CPU has no ``hypervisor`` flag): KVM/QEMU, Xen, VMware, Hyper-V, VirtualBox and the clouds' own.
VM_FIRMWARE = ("kvm", "qemu", "xen", "vmware", "virtual machine", "virtualbox", "amazon ec2",
               "google compute engine", "openstack", "bochs", "cloud hypervisor", "firecracker",
               "apple virtualization", "parallels", "alibaba cloud")


def _vm_boot(cpuinfo: str = "/proc/cpuinfo", boot_id: str = "/proc/sys/kernel/random/boot_id",
             dmi: str = "/sys/class/dmi/id", hypervisor: str = "/sys/hypervisor/type") -> str:
    """This boot's id on a virtual machine (the CPU flags name a hypervisor, or on Arm the firmware's maker or
    product does), else "": VMs started from one image share their host name and /etc/machine-id (every lent
    2-vCPU VM here read "vm" and one machine-id), so without it runs of different hosts read as one machine
    and their shifts as noise of one. A VM kept across reboots, or a cloud's bare-metal host its firmware
    names, reads as a new machine after each boot, which costs only the between-machine term its runs then
    measure."""
    flags = next((line for line in _read(cpuinfo).splitlines() if line.startswith("flags")), "")
    firmware = f"{_read(f'{dmi}/sys_vendor')} {_read(f'{dmi}/product_name')}".lower()
    virtual = ("hypervisor" in flags.split() or any(name in firmware for name in VM_FIRMWARE)
               or bool(_read(hypervisor)))  # Xen's guests name it there
    return _read(boot_id) if virtual else ""


def _read(path: str) -> str:
    """A small system file's text, stripped; "" where it cannot be read."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return ""
