"""Number formats and plain-text tables shared by every renderer (markdown tables:
perfkit.results.document)."""

from __future__ import annotations


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds / 1e-9:.4g} ns"


def fmt_value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return fmt_time(value) if unit == "s" else f"{value:.4g} {unit}".strip()


def fmt_change(change: float | None) -> str:
    return "-" if change is None else f"{change:+.1%}"


def text_table(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]

    def line(cells: list[str]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()

    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in rows])
