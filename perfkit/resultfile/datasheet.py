"""Vendor datasheet peaks for the GPUs the course used and the ones perfkit runs on.

Dense (no structured sparsity) peak throughput in TFLOP/s per precision and memory
bandwidth in GB/s, at boost clock, per CUDA device (a K80 board holds two devices).
tf32/bf16/fp16 are tensor-core rates where the chip has tensor cores; ``nvlink_gbps`` the NVLink bandwidth
per GPU that the vendor lists (both directions together) where its GPUs reach every other over NVLink. These
are leads: the ceilings benchmark measures what the machine really does and keeps both, as
test_allreduce_busbw measures the all-reduce's bus bandwidth.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Ceiling keys shared by the datasheet, the measured ceilings and the comparison.
COPY = "copy_bandwidth_gbps"
PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp16")


def matmul_key(precision: str) -> str:
    return f"matmul_tflops_{precision}"


#: A ring all-reduce's bus bandwidth among ``gpus`` GPUs (nccl-tests' busbw): a multi-GPU step's link roof.
_ALLREDUCE_KEY = re.compile(r"allreduce_busbw_gpus(?P<gpus>\d+)_gbps")


def allreduce_key(gpus: int) -> str:
    return f"allreduce_busbw_gpus{gpus}_gbps"


def allreduce_gpus(key: str) -> int | None:
    """The GPU count of an all-reduce roof's key; None for any other key."""
    found = _ALLREDUCE_KEY.fullmatch(key)
    return int(found["gpus"]) if found else None


@dataclass(frozen=True)
class GpuSpec:
    key: str
    name: str
    memory_gb: float
    bandwidth_gbps: float
    tflops: dict[str, float] = field(default_factory=dict)
    source: str = ""
    pattern: str = ""
    #: multiprocessors and their boost clock: the issue roof of work paced by neither memory nor FLOPs
    sms: int | None = None
    boost_mhz: int | None = None
    #: NVLink bandwidth per GPU as the vendor lists it, both directions together (GB/s); None where the
    #: datasheet lists none that joins every GPU of a machine (PCIe boards, a bridge that joins two)
    nvlink_gbps: float | None = None
    #: the host link as the vendor lists it (PCIe, both directions together, GB/s): what a first touch of
    #: managed memory crosses; None where the datasheet lists none
    host_link_gbps: float | None = None

    def issue_rate(self) -> float | None:
        """Multiprocessor cycles per second at the boost clock (SMs x clock), where the sheet lists both."""
        return self.sms * self.boost_mhz * 1e6 if self.sms and self.boost_mhz else None

    def peak_tflops(self, precision: str) -> float | None:
        return self.tflops.get(precision)

    def ceiling(self, key: str) -> float | None:
        """The figure matching a ceiling key, in its unit (GB/s for the copy and an all-reduce, TFLOP/s for
        matmuls). An all-reduce's bus bandwidth is bounded by one direction of each GPU's links: half the
        NVLink figure the vendor lists for both directions (nccl-tests compares busbw with it: an H100 SXM's
        900 GB/s NVLink is 450 GB/s each way), whatever the GPU count, NVSwitch joining every pair."""
        if key == COPY:
            return self.bandwidth_gbps
        if key.startswith("matmul_tflops_"):
            return self.peak_tflops(key.removeprefix("matmul_tflops_"))
        if allreduce_gpus(key) is not None:
            return self.nvlink_gbps / 2 if self.nvlink_gbps else None
        return None  # a ceiling no datasheet lists (one multiprocessor's pace, a first touch's migration)


_HOPPER_SXM = {"fp64": 34.0, "fp32": 67.0, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4}
_AMPERE_A100 = {"fp64": 9.7, "fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0}

GPUS: tuple[GpuSpec, ...] = (
    GpuSpec(
        "k80",
        "NVIDIA Tesla K80 (one GK210 of the board)",
        12,
        240,
        {"fp64": 1.455, "fp32": 4.365},
        "NVIDIA Tesla K80 datasheet (board: 2.91 FP64 / 8.73 FP32 TFLOP/s boost, 480 GB/s; halved per GPU)",
        r"K80",
        sms=13,
        boost_mhz=875,
        # no NVLink: the board's two GPUs and the host share PCIe 3.0
        host_link_gbps=32,  # PCIe 3.0 x16
    ),
    GpuSpec(
        "gtx-1080-ti",
        "NVIDIA GeForce GTX 1080 Ti",
        11,
        484,
        {"fp64": 0.354, "fp32": 11.34, "fp16": 0.177},
        "NVIDIA GeForce GTX 1080 Ti specifications (3584 cores at 1582 MHz boost; FP64 1/32, FP16 1/64)",
        r"1080 ?Ti",
        sms=28,
        boost_mhz=1582,
        # no NVLink (an SLI bridge): PCIe 3.0 only
        host_link_gbps=32,  # PCIe 3.0 x16
    ),
    GpuSpec(
        "v100-sxm2",
        "NVIDIA Tesla V100 SXM2",
        32,
        900,
        {"fp64": 7.8, "fp32": 15.7, "fp16": 125.0},
        "NVIDIA Tesla V100 datasheet (SXM2; fp16 = tensor core)",
        r"V100.*SXM|V100-SXM",
        sms=80,
        boost_mhz=1530,
        nvlink_gbps=300,  # Tesla V100 datasheet: NVLink 300 GB/s (SXM2)
        host_link_gbps=32,  # Tesla V100 datasheet: PCIe 32 GB/s
    ),
    GpuSpec(
        "v100-pcie",
        "NVIDIA Tesla V100 PCIe",
        32,
        900,
        {"fp64": 7.0, "fp32": 14.0, "fp16": 112.0},
        "NVIDIA Tesla V100 datasheet (PCIe; fp16 = tensor core)",
        r"V100",
        sms=80,
        boost_mhz=1380,
        # no NVLink: PCIe 3.0, 32 GB/s
        host_link_gbps=32,  # Tesla V100 datasheet: PCIe 32 GB/s
    ),
    GpuSpec(
        "rtx-8000",
        "NVIDIA Quadro RTX 8000",
        48,
        672,
        {"fp64": 0.51, "fp32": 16.3, "fp16": 130.5},
        "NVIDIA Quadro RTX 8000 datasheet (fp16 = tensor core; FP64 1/32)",
        r"RTX 8000",
        sms=72,
        boost_mhz=1770,
        # an NVLink bridge joins two boards only (100 GB/s): none joins a machine's GPUs
        host_link_gbps=32,  # PCIe 3.0 x16
    ),
    GpuSpec(
        "a100-80gb",
        "NVIDIA A100 80GB SXM",
        80,
        2039,
        dict(_AMPERE_A100),
        "NVIDIA A100 Tensor Core GPU datasheet (SXM 80GB; dense tensor-core rates)",
        r"A100.*80 ?GB",
        sms=108,
        boost_mhz=1410,
        nvlink_gbps=600,  # A100 datasheet: NVIDIA NVLink 600 GB/s (SXM)
        host_link_gbps=64,  # A100 datasheet: PCIe Gen4 64 GB/s
    ),
    GpuSpec(
        "a100-40gb",
        "NVIDIA A100 40GB SXM",
        40,
        1555,
        dict(_AMPERE_A100),
        "NVIDIA A100 Tensor Core GPU datasheet (SXM 40GB; dense tensor-core rates)",
        r"A100",
        sms=108,
        boost_mhz=1410,
        nvlink_gbps=600,  # A100 datasheet: NVIDIA NVLink 600 GB/s (SXM)
        host_link_gbps=64,  # A100 datasheet: PCIe Gen4 64 GB/s
    ),
    GpuSpec(
        "h100-pcie",
        "NVIDIA H100 PCIe",
        80,
        2000,
        {"fp64": 26.0, "fp32": 51.0, "tf32": 378.0, "bf16": 756.0, "fp16": 756.0},
        "NVIDIA H100 Tensor Core GPU datasheet (PCIe; dense = half the sparsity figures)",
        r"H100.*PCIe",
        sms=114,
        boost_mhz=1755,
        # an NVLink bridge joins two boards only (600 GB/s); PCIe Gen5 128 GB/s otherwise
        host_link_gbps=128,  # H100 datasheet: PCIe Gen5 128 GB/s
    ),
    GpuSpec(
        "h100-sxm",
        "NVIDIA H100 SXM",
        80,
        3350,
        dict(_HOPPER_SXM),
        "NVIDIA H100 Tensor Core GPU datasheet (SXM; dense = half the sparsity figures)",
        r"H100",
        sms=132,
        boost_mhz=1980,
        nvlink_gbps=900,  # H100 datasheet: NVIDIA NVLink 900 GB/s (SXM), PCIe Gen5 128 GB/s
        host_link_gbps=128,  # H100 datasheet: PCIe Gen5 128 GB/s
    ),
    GpuSpec(
        "b200",
        "NVIDIA B200 (HGX, 1000 W)",
        180,
        8000,
        {"fp64": 40.0, "fp32": 80.0, "tf32": 1100.0, "bf16": 2250.0, "fp16": 2250.0},
        "NVIDIA Blackwell datasheet (HGX B200 at 1000 W; dense = half the sparsity figures); DGX B200: "
        "1,440 GB and 64 TB/s of HBM3e for eight GPUs",
        r"B200",
        nvlink_gbps=1800,  # HGX B200 datasheet: fifth-generation NVLink, 1.8 TB/s a GPU (14.4 TB/s for 8)
    ),
    GpuSpec(
        "h200",
        "NVIDIA H200 SXM",
        141,
        4800,
        dict(_HOPPER_SXM),
        "NVIDIA H200 Tensor Core GPU datasheet (SXM; compute as H100 SXM, dense)",
        r"H200",
        sms=132,
        boost_mhz=1980,
        nvlink_gbps=900,  # H200 datasheet: NVIDIA NVLink 900 GB/s (SXM), PCIe Gen5 128 GB/s
        host_link_gbps=128,  # H200 datasheet: PCIe Gen5 128 GB/s
    ),
)


def lookup(device_name: str) -> GpuSpec | None:
    """The datasheet entry for a device name as CUDA reports it ('NVIDIA H200', 'Tesla K80', ...)."""
    for spec in GPUS:
        if re.search(spec.pattern, device_name, flags=re.IGNORECASE):
            return spec
    return None


def by_key(key: str) -> GpuSpec | None:
    return next((spec for spec in GPUS if spec.key == key), None)
