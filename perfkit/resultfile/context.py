"""What a benchmark tells the judge besides its figures: the ``extra_info`` keys MetricRecorder writes (the
figure it gates on, the ceiling it follows, its own minimum effect, ...), read back and written again."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from perfkit.resultfile.figures import TIME
from perfkit.resultfile.metrics import (
    BETWEEN_HOSTS_KEY,
    BOUND_KEY,
    GATE_KEY,
    GATE_NONE,
    GPU_BOUND_KEY,
    INFORMATIONAL_KEY,
    TOLERANCE_KEY,
)


@dataclass(frozen=True)
class Context:
    """What a benchmark tells the judge besides its figures (``extra_info`` keys written by MetricRecorder).

    ``gate``: the figure its verdict rests on (the time by default; None: none of its own, declared
    ``informational`` with the reason); ``bound``: the ceiling its time should follow across hardware;
    ``tolerance``: its own minimum effect; ``gpu_bound``: GPU work without a ceiling to follow (a bound
    one is GPU work too); ``between_hosts``: why its noise lies between hosts of one model and cannot be cut
    (MetricRecorder.noise_between_hosts).
    """

    gate: str | None = TIME
    bound: str | None = None
    tolerance: float | None = None
    informational: str | None = None
    gpu_bound: bool = False
    between_hosts: str | None = None

    @classmethod
    def from_extra(cls, extra: Mapping[str, Any]) -> Context:
        """The context ``extra`` holds; a ValueError naming the key whose value is not a name or sentence."""
        gate = _text(extra, GATE_KEY) or TIME
        tolerance = extra.get(TOLERANCE_KEY)
        return cls(None if gate == GATE_NONE else gate, _text(extra, BOUND_KEY),
                   None if tolerance is None else float(tolerance), _text(extra, INFORMATIONAL_KEY),
                   bool(extra.get(GPU_BOUND_KEY) or extra.get(BOUND_KEY)), _text(extra, BETWEEN_HOSTS_KEY))

    def to_extra(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.gate != TIME:
            out[GATE_KEY] = GATE_NONE if self.gate is None else self.gate
        if self.bound:
            out[BOUND_KEY] = self.bound
        if self.tolerance is not None:
            out[TOLERANCE_KEY] = self.tolerance
        if self.informational:
            out[INFORMATIONAL_KEY] = self.informational
        if self.gpu_bound and not self.bound:
            out[GPU_BOUND_KEY] = True
        if self.between_hosts:
            out[BETWEEN_HOSTS_KEY] = self.between_hosts
        return out


def _text(extra: Mapping[str, Any], key: str) -> str | None:
    """``extra[key]``, a figure's name or a reason; None where absent or empty."""
    value = extra.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"extra_info.{key} is {value!r}, not a name or sentence")
    return value or None
