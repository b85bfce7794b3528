"""What a run measures on, fixed before its first test: the device, the size profile, the GPUs it sees,
the machine's fingerprint and the caps the command line set (perfkit.session.Session holds one)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch

from perfkit.errors import UsageError
from perfkit.measure import capacity, hardware
from perfkit.parallel import launch
from perfkit.resultfile import datasheet
from perfkit.resultfile.model import PROFILES, ProfileName


@dataclass(frozen=True)
class Profile:
    """quick (a CPU box, minutes) or full (the course's sizes)."""

    name: ProfileName

    def __post_init__(self) -> None:
        if self.name not in PROFILES:
            raise UsageError(f"unknown profile {self.name!r}; choose quick or full")

    def pick(self, quick: Any, full: Any) -> Any:
        return full if self.name == "full" else quick


@dataclass(frozen=True)
class Settings:
    """What this run measures on: fixed before the first test, the same for every benchmark."""

    device: torch.device
    profile: Profile
    gpu_count: int
    fingerprint: hardware.Fingerprint
    torchrun_args: tuple[str, ...] = ()
    memory_cap: int | None = None

    @classmethod
    def detect(cls, device: str = "auto", profile: str | None = None,
               torchrun_args: str | None = None, memory_cap: str | None = None) -> Settings:
        """Read the machine (torch, NVML); changes nothing on it. The profile defaults to full with a GPU: a
        CPU box would take hours at the course's sizes. A memory cap is checked against every GPU (it is
        applied where the run starts: :meth:`apply_memory_cap`)."""
        gpu_count = hardware.gpu_count()
        kind = hardware.resolve_device(device)
        resolved = torch.device(kind)
        # a name given on the command line is checked by Profile itself
        chosen = Profile(cast(ProfileName, profile or ("full" if kind == "cuda" else "quick")))
        cap = capacity.parse_bytes(memory_cap) if memory_cap is not None else None
        if cap is not None:
            if kind != "cuda":
                raise UsageError("--perfkit-memory-cap caps the CUDA allocator; this run is on the CPU")
            for index in range(gpu_count):
                capacity.check_cap(cap, torch.device("cuda", index))
        return cls(resolved, chosen, gpu_count, hardware.fingerprint(kind, cap),
                   torchrun_args=launch.parse_torchrun_args(torchrun_args), memory_cap=cap)

    def apply_memory_cap(self) -> None:
        """Cap PyTorch's allocator on every GPU (``--perfkit-memory-cap``); nothing without a cap."""
        if self.memory_cap is not None:
            capacity.apply_cap(self.memory_cap, self.gpus)

    @property
    def gpus(self) -> list[torch.device]:
        return [torch.device("cuda", i) for i in range(self.gpu_count)] if self.device.type == "cuda" else []

    @property
    def hardware_id(self) -> str:
        """The fingerprint's hardware id (a measured one always has one; "unknown" as a file without it
        reads)."""
        return self.fingerprint.hardware_id or "unknown"

    def skip_reason(self, gpus_needed: Sequence[int], full_only: bool) -> str | None:
        """Why a test that needs these GPUs (or the full profile) cannot run here; None if it can.

        ``gpus_needed`` holds one count per GPU marker (``gpu`` counts as 1); empty: no GPU needed.
        """
        if gpus_needed and self.device.type != "cuda":
            reason = "no CUDA GPU is visible" if not self.gpu_count else "this run uses --perfkit-device=cpu"
            return f"needs a CUDA GPU: {reason}"
        if gpus_needed and max(gpus_needed) > self.gpu_count:
            return f"needs {max(gpus_needed)} GPUs, {self.gpu_count} visible"
        if full_only and self.profile.name != "full":
            return "full profile only (--perfkit-profile=full)"
        return None

    def gpu_spec(self) -> datasheet.GpuSpec | None:
        """The datasheet entry of the GPU under test; None on a CPU run or an unlisted GPU."""
        if self.device.type != "cuda":
            return None
        return datasheet.by_key(self.fingerprint.datasheet_key or "")
