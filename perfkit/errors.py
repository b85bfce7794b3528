"""One exception family, so the CLI and the plugin can turn any of them into one clear line."""
from __future__ import annotations


class PerfkitError(Exception):
    """Base of every error perfkit raises on purpose; its message says what to do."""


class UsageError(PerfkitError):
    """The user asked for something malformed (a bad threshold, an unknown device)."""


class BaselineError(PerfkitError):
    """A result or baseline file is missing, corrupt, of another schema or of other hardware."""


class StoreError(PerfkitError):
    """A history database cannot be reached or read, holds no history, or has a newer schema."""


class HardwareError(PerfkitError):
    """The hardware asked for is not there (no CUDA device, too few GPUs)."""


class MeasurementError(PerfkitError):
    """A benchmark produced a wrong answer: a fast wrong result is a failure, not a result."""


class BuildError(PerfkitError):
    """A checkout's benchmarks do not collect or run (A/B, bisect): that commit does not build."""
