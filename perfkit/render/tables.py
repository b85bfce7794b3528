"""Number formats, plain-text tables and slugs shared by every renderer (markdown tables:
perfkit.render.document)."""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds / 1e-9:.4g} ns"


def fmt_value(value: float | None, unit: str) -> str:
    """A figure's value in its unit: four significant digits, a large one whole with thousands separated
    (30,990 images, not 3.099e+04)."""
    if value is None:
        return "-"
    if unit == "s":
        return fmt_time(value)
    return (f"{value:,.0f} {unit}" if 1e4 <= abs(value) < 1e15 else f"{value:.4g} {unit}").strip()


def fmt_change(change: float | None) -> str:
    return "-" if change is None else f"{change:+.1%}"


def slug(text: str, keep: str = "") -> str:
    """``text`` with each run of characters other than ASCII letters, digits and those of ``keep`` made one
    '-', trimmed of '-' and '.': safe in a file name, a URL and a hardware id."""
    return re.sub(f"[^A-Za-z0-9{re.escape(keep)}]+", "-", text).strip("-.")


def terminal_width() -> int | None:
    """The terminal's columns (``COLUMNS`` where set); None where the output goes to a file or a pipe and
    ``COLUMNS`` is not set: there every row stays whole on one line, for grep."""
    if "COLUMNS" in os.environ or sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def text_table(head: list[str], rows: list[list[str]], width: int | None = None) -> str:
    """Columns padded to their widest cell. With ``width``, a table wider than that is laid out to fit it:
    the ``benchmark`` column's full names lose their file (``benches/x.py::``), as many leading columns as fit
    stay columns, and each row's other cells follow on a wrapped, indented line of ``name value`` pairs."""
    # one line per cell, every row as long as the head
    rows = [[" ".join(str(c).split("\n")) for c in row] + [""] * (len(head) - len(row)) for row in rows]
    if width is None or not rows or _padded(head, rows) <= width:
        return _columns(head, rows)
    width = max(width, 20)
    if "benchmark" in head:  # a benchmark's full name without its file
        at = head.index("benchmark")
        rows = [[c.rsplit("::", 1)[-1] if i == at else c for i, c in enumerate(row)] for row in rows]
    keep = len(head)
    while keep > 1 and _padded(head[:keep], [r[:keep] for r in rows]) > width:
        keep -= 1
    table = _columns(head[:keep], [r[:keep] for r in rows]).splitlines()
    out = table[:2]
    for line, row in zip(table[2:], rows):
        out.append(line)
        rest = " · ".join(f"{name} {cell}" for name, cell in zip(head[keep:], row[keep:]) if cell.strip())
        if rest:
            out += textwrap.wrap(rest, width, initial_indent="    ", subsequent_indent="    ",
                                 break_on_hyphens=False, break_long_words=False)
    return "\n".join(out)


def _padded(head: list[str], rows: list[list[str]]) -> int:
    """The width of ``_columns``' widest line."""
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    return sum(widths) + 2 * (len(widths) - 1)


def _columns(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]

    def line(cells: list[str]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()

    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in rows])


def wrapped(text: str, width: int | None) -> str:
    """``text`` with each line longer than ``width`` wrapped, its continuation indented as the line was."""
    if width is None:
        return text
    out = []
    for line in text.splitlines():
        indent = line[: len(line) - len(line.lstrip())]
        out += textwrap.wrap(line, width, subsequent_indent=indent + "  ", break_on_hyphens=False,
                             break_long_words=False) or [""]
    return "\n".join(out)
