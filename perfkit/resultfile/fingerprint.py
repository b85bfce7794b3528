"""The machine and software a run measured on, as one frozen record: the fingerprint.

perfkit.measure.hardware reads the machine into a :class:`Fingerprint`; the run writes it to
``machine_info["perfkit"]["fingerprint"]`` with :meth:`Fingerprint.to_json`; every reader of a result file
gets it back from :meth:`Fingerprint.from_json` (perfkit.resultfile.model.PerfkitInfo), so a comparison
says "driver changed" beside a regression from the same fields the run recorded. Which fields are software and
which describe the machine is said once, on the fields themselves (:data:`SOFTWARE_FIELDS`,
:data:`HARDWARE_FIELDS`).

Older files hold fewer fields: a field a file lacks reads None, and is not written back unless it was given a
value; a key this record does not know is kept as read. A file read and written again keeps its
fingerprint as it was, key for key and in its order.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from perfkit.errors import BaselineError

T = TypeVar("T")

#: The kinds of device a run measures on: a CUDA GPU or the CPU (``--perfkit-device auto`` resolves to one).
DeviceKind = Literal["cuda", "cpu"]
DEVICES: tuple[DeviceKind, ...] = get_args(DeviceKind)

#: A field's part of the fingerprint (its metadata): what a change of it means beside a verdict.
PART = "part"
SOFTWARE = "software"  # the driver and the libraries: a change may shift every host-bound figure together
HARDWARE = "hardware"  # the machine: a change is another GPU, CPU, memory cap or clock


def _software() -> Any:
    return field(default=None, metadata={PART: SOFTWARE})


def _hardware() -> Any:
    return field(default=None, metadata={PART: HARDWARE})


def one_of(name: object, options: tuple[T, ...], what: str) -> T:
    """``name`` as the one of ``options`` (a Literal's values) it equals; a ValueError naming them else."""
    for option in options:
        if name == option:
            return option
    raise ValueError(f"the {what} {name!r} is neither {' nor '.join(map(str, options))}")


def device_kind(name: object) -> DeviceKind:
    """``name`` as a :data:`DeviceKind`; a ValueError for anything but "cuda" and "cpu"."""
    return one_of(name, DEVICES, "device")


@dataclass(frozen=True)
class Fingerprint:
    """What a run measured on. The fields without a part (the ids, and what follows from another field) are
    kept and shown, never listed as a change beside the verdicts: the hardware id decides whether two runs are
    judged at all, and a machine's hash changes with every lent VM.

    ``extra``: keys of a file this record does not model, kept as read; ``recorded``: the keys the file held,
    in its order (None: measured here, where every field is recorded).
    """

    hardware_id: str | None = None
    device: DeviceKind | None = None
    gpu_name: str | None = _hardware()
    gpu_count: int | None = _hardware()
    gpu_memory_gib: float | None = None  # follows from the GPU
    compute_capability: str | None = None  # follows from the GPU
    datasheet_key: str | None = None  # follows from the GPU
    driver: str | None = _software()
    cuda: str | None = _software()
    cudnn: str | None = _software()
    torch: str | None = _software()
    torchvision: str | None = _software()
    numba: str | None = _software()
    numba_cuda: str | None = _software()
    python: str | None = _software()
    cpu_model: str | None = _hardware()
    cpu_count: int | None = None  # a CPU run's is in its hardware id
    memory_cap_gib: float | None = _hardware()  # --perfkit-memory-cap: the card made to look smaller
    cpu_signature: str | None = _hardware()  # x86 family and model: hosts behind one model name differ
    # which physical machine (its GPUs, else the host): a hash, not a change to list
    machine: str | None = None
    sm_clock: str | None = _hardware()  # GPU 0's SM clock, application / maximum (perfkit.measure.clocks)
    extra: Mapping[str, Any] = field(default_factory=dict, repr=False)
    recorded: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_json(cls, raw: object, where: str) -> Fingerprint:
        """The fingerprint a result file holds (``null`` reads as an empty one); a field of the wrong type
        is a BaselineError."""
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise BaselineError(f"{where}: the fingerprint is {type(raw).__name__}, not an object; the file "
                                "is damaged")
        for name, value in raw.items():
            if name in _CHECKS and value is not None and not _CHECKS[name][0](value):
                wanted = _CHECKS[name][1]
                raise BaselineError(f"{where}: the fingerprint's {name} is {value!r}, not {wanted}; the file "
                                    "is damaged")
        known = {n: v for n, v in raw.items() if n in _CHECKS}
        extra = {str(n): v for n, v in raw.items() if n not in _CHECKS}
        return cls(**known, extra=extra, recorded=tuple(str(n) for n in raw))

    def has(self, name: str) -> bool:
        """Whether the fingerprint records field ``name``: every field of one measured here; of one read from
        a file, those the file held and those given a value since (an older file lacks the newer fields)."""
        return self.recorded is None or name in self.recorded or getattr(self, name) is not None

    def to_json(self) -> dict[str, Any]:
        """The fingerprint as a result file keeps it: the keys it was read with, in their order, then any
        field given a value since; every field of one measured here, in the record's order."""
        recorded = self.recorded or ()
        out: dict[str, Any] = {}
        for name in [*recorded, *(n for n in _CHECKS if n not in recorded)]:
            if name in _CHECKS:
                if self.has(name):
                    out[name] = getattr(self, name)
            elif name in self.extra:
                out[name] = self.extra[name]
        return out | {k: v for k, v in self.extra.items() if k not in out}

    def changes(self, other: Fingerprint) -> tuple[tuple[str, Any, Any], ...]:
        """(field, before, after) of each hardware or software field that differs from this one in ``other``;
        a field only one side records (added to the fingerprint after the older run) is not a change."""
        return tuple((name, getattr(self, name), getattr(other, name)) for name in CHANGE_FIELDS
                     if self.has(name) and other.has(name) and getattr(self, name) != getattr(other, name))


def _check(hint: Any) -> tuple[Callable[[Any], bool], str]:
    """The test of a JSON value against a field's type (None passes every field's), and the type in words."""
    (kind,) = [a for a in get_args(hint) if a is not type(None)]
    if get_origin(kind) is Literal:
        allowed = get_args(kind)
        return (lambda v: v in allowed), " or ".join(map(repr, allowed))
    if kind is float:  # a whole number of GiB is written without its ".0"
        return (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)), "a number"
    if kind is int:
        return (lambda v: isinstance(v, int) and not isinstance(v, bool)), "a whole number"
    if kind is str:
        return (lambda v: isinstance(v, str)), "a string"
    raise TypeError(f"no JSON test is written for a fingerprint field of type {kind}")


_HINTS = get_type_hints(Fingerprint)
_RECORD_FIELDS = [f for f in dataclasses.fields(Fingerprint) if f.name not in ("extra", "recorded")]
#: Per field of the record, in its order: the test of a value read from a file, and its type in words.
_CHECKS = {f.name: _check(_HINTS[f.name]) for f in _RECORD_FIELDS}

#: Fingerprint fields of the software: where one changed, a common host-bound shift may be its doing.
SOFTWARE_FIELDS: tuple[str, ...] = tuple(f.name for f in _RECORD_FIELDS if f.metadata.get(PART) == SOFTWARE)
#: Fingerprint fields of the machine whose change is shown beside the verdicts.
HARDWARE_FIELDS: tuple[str, ...] = tuple(f.name for f in _RECORD_FIELDS if f.metadata.get(PART) == HARDWARE)
#: Fingerprint fields whose change is shown beside the verdicts: the machine's and the software's.
CHANGE_FIELDS: tuple[str, ...] = tuple(f.name for f in _RECORD_FIELDS if f.metadata.get(PART))
