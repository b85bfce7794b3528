"""A flagged benchmark's kernels that moved most, before and after, as bars (``perfkit report``, beside the
explanation's table): a new kernel is a bar where there was none, a slower one a longer bar."""
from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from pathlib import Path

from perfkit.explain.why import Why
from perfkit.render.plotting import pyplot, save_figure

#: Kernels drawn per benchmark (the table under the reading lists them too).
SHOWN = 8
#: A kernel's name on the axis, cut to this many characters (a GEMM's name runs to a hundred).
LABEL_CHARS = 48


def kernel_charts(whys: Sequence[Why], out: Path) -> dict[str, Path]:
    """A chart per explained benchmark of ``whys``, saved in ``out``; a benchmark without compared kernels
    has none."""
    return {w.benchmark: path for w in whys if (path := kernel_chart(w, out)) is not None}


def kernel_chart(why: Why, out: Path) -> Path | None:
    """``why``'s top kernels by their change, before and after, in microseconds per call of the work."""
    explanation = why.explanation
    if explanation is None or not explanation.compared or not explanation.kernels:
        return None
    kernels = explanation.kernels[:SHOWN]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.45 * len(kernels)))
    rows = range(len(kernels))
    for offset, label, values, colour in ((-0.2, "before", [k.before_us for k in kernels], "#9aa5b1"),
                                          (0.2, "after", [k.after_us for k in kernels], "#c0392b")):
        ax.barh([r + offset for r in rows], values, height=0.4, label=label, color=colour)
    ax.set_yticks(list(rows), [_label(k.name, k.status) for k in kernels], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("device time per call of the work (µs)")
    name = why.benchmark.split("::")[-1]
    ax.set_title(textwrap.fill(f"{name}, {why.verdict}: {why.reading}", 100), fontsize=8)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    # the whole node id: one test's id may repeat in two bench files
    return save_figure(fig, out / f"why-{re.sub(r'[^A-Za-z0-9_.-]+', '_', why.benchmark)}.png")


def _label(name: str, status: str) -> str:
    short = name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"
    return f"{short} ({status})" if status else short
