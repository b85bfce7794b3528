"""Why a benchmark got slower (or faster), read from two kernel summaries: which kernels moved, which appeared
or vanished, how the copies and launches changed, and whether the time went to the GPU or to the host.

Kernels are matched by family (perfkit.explain.names), so a kernel compiled again, or a GEMM for which cuBLAS
picked another tile, still matches; several raw names of one family are added up, and each side's raw names
stay on the row (a changed tile is often the cause). Times are per call. The one-line ``reading`` says the
largest move in words, by these rules, in order:

1. summaries of different devices are not compared;
2. the GPU's busy time within ``BUSY_STEADY`` while the host's wall time moved by ``HOST_MOVED`` or more: the
   host's dispatch moved, not the GPU's work ("launch-bound");
3. no kernel or copy kind moved by ``KERNEL_MOVED`` of the device time: nothing to name;
4. else the largest move by absolute time: a new kernel, a vanished one, a kernel that changed (with the
   runner-up where it moved beyond ``KERNEL_MOVED`` too), or a kind of copy.

On a CPU summary the "kernels" are aten operators and the busy time is the operators' time; the words say so.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import ClassVar, NamedTuple

from perfkit.explain.names import normalise
from perfkit.explain.summary import OTHER, CopyStat, KernelStat, KernelSummary
from perfkit.resultfile.payloads import Record

#: A kernel (or a kind of copy) that moved by less than this share of the work's device time is within noise:
#: GPU work reproduces within about 1% from run to run (perfkit's Policy.bound_threshold says the same).
KERNEL_MOVED = 0.01
#: The GPU's busy time counts as unchanged below this change: twice its run-to-run spread, and below the 3%
#: that perfkit's judge flags in GPU-bound work, so a flagged row with the busy time this steady was not the
#: GPU's doing.
BUSY_STEADY = 0.02
#: The host's wall time "moved" from this change on: the smallest change perfkit's judge flags in work with
#: host time in it (Policy.threshold), so a host shift this size can explain a flagged row on its own.
HOST_MOVED = 0.05

NOT_COMPARED = "another device: not compared"
#: The head of :meth:`Explanation.rows_for_table`'s table.
TABLE_HEAD = ("what", "before", "after", "change", "share", "note")


class _Words(NamedTuple):
    """How the reading names a device's work: one and many of its units, what starting one is, its busy time,
    the host's share and what work bound by that share is."""

    one: str
    many: str
    launches: str
    busy: str
    host: str
    bound: str


_WORDS = {"cuda": _Words("kernel", "kernels", "launches", "GPU time", "host dispatch", "launch-bound"),
          "cpu": _Words("operator", "operators", "calls", "operator time", "host time",
                        "overhead outside the operators")}

Family = tuple[list[str], float, float]  # a family's raw names, its launches and its time, per call
NONE: Family = ([], 0.0, 0.0)  # a family one side lacks


@dataclass(frozen=True)
class KernelRow(Record):
    """One family of kernels, per call on each side; ``share``: of the whole kernel-time change (None where
    that change is within noise)."""

    TAG: ClassVar[str] = "kernel_row"
    name: str
    before_us: float
    after_us: float
    before_count: float
    after_count: float
    share: float | None
    before_names: tuple[str, ...] = ()
    after_names: tuple[str, ...] = ()

    @property
    def delta_us(self) -> float:
        return self.after_us - self.before_us

    @property
    def status(self) -> str:
        """"new" (after only), "vanished" (before only) or ""."""
        if not self.before_count and not self.before_us:
            return "new"
        return "vanished" if not self.after_count and not self.after_us else ""


@dataclass(frozen=True)
class CopyRow(Record):
    """One kind of copy, per call on each side."""

    TAG: ClassVar[str] = "copy_row"
    kind: str
    before_us: float
    after_us: float
    before_bytes: int
    after_bytes: int
    before_count: float
    after_count: float

    @property
    def delta_us(self) -> float:
        return self.after_us - self.before_us


@dataclass(frozen=True)
class Explanation(Record):
    """Two summaries compared: the rows, the launches, host and busy time per call, and the reading."""

    TAG: ClassVar[str] = "explanation"
    device: str
    compared: bool
    reading: str
    kernels: tuple[KernelRow, ...] = ()
    copies: tuple[CopyRow, ...] = ()
    launches_before: float = 0.0
    launches_after: float = 0.0
    host_before_s: float = 0.0
    host_after_s: float = 0.0
    busy_before_s: float = 0.0
    busy_after_s: float = 0.0
    clock_before_mhz: float | None = None  # the SM clock each side was profiled at, where it was read
    clock_after_mhz: float | None = None

    def rows_for_table(self, limit: int = 10) -> list[tuple[str, str, str, str, str, str]]:
        """Rows under ``TABLE_HEAD``: the ``limit`` kernels that moved most, then each kind of copy, the
        launches (where there were any), the busy time, the host's time and the SM clock (where both sides
        read it)."""
        if not self.compared:
            return []
        rows = [(k.name, _time(k.before_us), _time(k.after_us), _time(k.delta_us, signed=True),
                 "-" if k.share is None else f"{k.share:.0%}", k.status) for k in self.kernels[:limit]]
        rows += [(f"{c.kind} copies", _time(c.before_us), _time(c.after_us), _time(c.delta_us, signed=True),
                  "", _bytes_note(c)) for c in self.copies]
        if self.launches_before or self.launches_after:
            rows.append(("launches", f"{self.launches_before:g}", f"{self.launches_after:g}",
                         f"{self.launches_after - self.launches_before:+g}", "", ""))
        busy = _WORDS.get(self.device, _WORDS["cuda"]).busy
        for what, before, after in ((busy, self.busy_before_s, self.busy_after_s),
                                    ("host", self.host_before_s, self.host_after_s)):
            change = _change(before, after)
            rows.append((what, _time(before * 1e6), _time(after * 1e6), change, "", ""))
        if self.clock_before_mhz and self.clock_after_mhz:
            rows.append(("SM clock", f"{self.clock_before_mhz:.0f} MHz", f"{self.clock_after_mhz:.0f} MHz",
                         _change(self.clock_before_mhz, self.clock_after_mhz), "", ""))
        return rows


def explain(before: KernelSummary, after: KernelSummary) -> Explanation:
    """What changed from ``before`` to ``after`` (see the module's docstring)."""
    if before.device != after.device:
        return Explanation(device=after.device, compared=False, reading=NOT_COMPARED)
    base = _device_us(before) or _device_us(after)
    kernels = _kernel_rows(before, after, base)
    copies = _copy_rows(before.copies, after.copies)
    explanation = Explanation(
        device=after.device, compared=True, reading="", kernels=kernels, copies=copies,
        launches_before=before.launches, launches_after=after.launches, host_before_s=before.host_s,
        host_after_s=after.host_s, busy_before_s=before.gpu_busy_s, busy_after_s=after.gpu_busy_s,
        clock_before_mhz=before.sm_clock_mhz, clock_after_mhz=after.sm_clock_mhz)
    return replace(explanation, reading=_reading(explanation, base))


def _device_us(summary: KernelSummary) -> float:
    """The device time a move is weighed against: every kernel's and copy's time per call."""
    return summary.kernel_us + sum(c.total_us for c in summary.copies)


def _kernel_rows(before: KernelSummary, after: KernelSummary, base: float) -> tuple[KernelRow, ...]:
    """The kernels of both sides matched by family, the one that moved most first."""
    match = normalise if after.device == "cuda" else _same
    sides = [_families(s.kernels, match) for s in (before, after)]
    total = sum(k.total_us for k in after.kernels) - sum(k.total_us for k in before.kernels)
    shares = abs(total) >= KERNEL_MOVED * base > 0
    rows = []
    for name in sorted(sides[0].keys() | sides[1].keys()):
        (old_names, old_count, old_us), (new_names, new_count, new_us) = (s.get(name, NONE) for s in sides)
        share = (new_us - old_us) / total if shares else None
        rows.append(KernelRow(name, old_us, new_us, old_count, new_count, share, tuple(old_names),
                              tuple(new_names)))
    return tuple(sorted(rows, key=lambda r: (-abs(r.delta_us), r.name)))


def _same(name: str) -> str:
    """An operator's name as it is: aten names do not change between builds."""
    return name


def _families(kernels: Iterable[KernelStat], match: Callable[[str], str]) -> dict[str, Family]:
    """Per family: its raw names, launches and time; ``OTHER`` stays itself."""
    families: dict[str, Family] = {}
    for k in kernels:
        family = k.name if k.name == OTHER else match(k.name)
        names, count, total = families.get(family, NONE)
        families[family] = (sorted({*names, k.name}), count + k.count, total + k.total_us)
    return families


def _copy_rows(before: Iterable[CopyStat], after: Iterable[CopyStat]) -> tuple[CopyRow, ...]:
    """Each kind of copy on either side, the one that moved most first."""
    old, new = ({c.kind: c for c in copies} for copies in (before, after))
    none = CopyStat("", 0, 0, 0.0)
    rows = []
    for kind in sorted(old.keys() | new.keys()):
        a, b = old.get(kind, none), new.get(kind, none)
        rows.append(CopyRow(kind, a.total_us, b.total_us, a.bytes, b.bytes, a.count, b.count))
    return tuple(sorted(rows, key=lambda r: (-abs(r.delta_us), r.kind)))


def _reading(e: Explanation, base: float) -> str:
    """The one line that says where the time went (rules 2 to 4 of the module's docstring)."""
    words = _WORDS.get(e.device, _WORDS["cuda"])
    busy_change = _relative(e.busy_before_s, e.busy_after_s)
    host_change = _relative(e.host_before_s, e.host_after_s)
    if (busy_change is not None and host_change is not None and abs(busy_change) < BUSY_STEADY
            and abs(host_change) >= HOST_MOVED):
        return f"{words.busy} unchanged, {words.host} {host_change:+.0%}: {words.bound}{_launch_note(e)}"
    rows: list[KernelRow | CopyRow] = [*e.kernels, *e.copies]
    moved = sorted((r for r in rows if base and abs(r.delta_us) >= KERNEL_MOVED * base),
                   key=lambda r: -abs(r.delta_us))
    if not moved:
        return f"no {words.one} changed beyond {KERNEL_MOVED:.0%}"
    top = moved[0]
    if isinstance(top, CopyRow):
        return _copy_phrase(top)
    if top.status == "new":
        return (f"new {words.one} {top.name}: {_time(top.delta_us, signed=True)} "
                f"({_counted(top.after_count, words)})")
    if top.status == "vanished":
        return (f"{words.one} {top.name} gone: {_time(top.delta_us, signed=True)} "
                f"({_counted(top.before_count, words)})")
    if len(moved) > 1:
        return f"{_phrase(top)}, then {_phrase(moved[1])}"
    return f"{_phrase(top)}, all other {words.many} within {KERNEL_MOVED:.0%}"


def _phrase(row: KernelRow | CopyRow) -> str:
    """A row that moved, in a few words: "+0.21 ms in sm90_xmma_gemm_... (+5.1%)"."""
    if isinstance(row, CopyRow):
        return _copy_phrase(row)
    change = _relative(row.before_us, row.after_us)
    note = row.status if change is None else f"{change:+.1%}"
    return f"{_time(row.delta_us, signed=True)} in {row.name} ({note})"


def _copy_phrase(row: CopyRow) -> str:
    change = _relative(row.before_us, row.after_us)
    moved = ("new" if change is None else f"{change:+.1%}") + f", {_bytes_note(row)}"
    return f"{_time(row.delta_us, signed=True)} in {row.kind} copies ({moved})"


def _counted(launches: float, words: _Words) -> str:
    """``launches`` a call, in the device's word ("1 launch", "0.5 launches", "2 calls")."""
    if launches != 1:
        return f"{launches:g} {words.launches}"
    plural = words.launches
    return f"1 {plural.removesuffix('es') if plural.endswith('ches') else plural.removesuffix('s')}"


def _launch_note(e: Explanation) -> str:
    if e.launches_before == e.launches_after:
        return ""
    return f" (launches {e.launches_before:g} to {e.launches_after:g} a call)"


def _relative(before: float, after: float) -> float | None:
    return after / before - 1.0 if before > 0 else None


def _change(before: float, after: float) -> str:
    """As perfkit.render.tables.fmt_change words a change (the verdict's layer may not import render)."""
    change = _relative(before, after)
    return "-" if change is None else f"{change:+.1%}"


def _time(us: float, signed: bool = False) -> str:
    """Microseconds in ms from 10 us to a second (the scale kernel times are read in), else in us or s."""
    sign = "+" if signed else ""
    for unit, scale, start in (("s", 1e6, 1e6), ("ms", 1e3, 10.0)):
        if abs(us) >= start:
            return f"{us / scale:{sign}.4g} {unit}"
    return f"{us:{sign}.4g} us"


def _bytes_note(row: CopyRow) -> str:
    delta = row.after_bytes - row.before_bytes
    return f"{delta / 1e6:+.1f} MB" if abs(delta) >= 100_000 else f"{delta:+d} B"
