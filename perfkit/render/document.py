"""A report as one list of sections, rendered to markdown (report.md, CI job summaries) and to one
self-contained HTML page (every plot embedded as a data URI, so it opens offline, attached to a CI run or
mailed). Both renderings come from the same sections; neither is parsed back from the other.

Text and table cells may hold ``code``, **bold** and links to a section, ``[words](#anchor)`` with the
anchor :func:`anchor` gives the section's title, which both renderings understand. A table cell may be a
:class:`Spark` (a small trend): unicode bars in markdown, an inline SVG in HTML.

The HTML writer here (:func:`page_html`, :func:`table_html` and the one style sheet, :data:`STYLE`) writes
the dashboard's pages too (perfkit.render.dashboard_html), so the two look alike and change together.
"""
from __future__ import annotations

import base64
import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from perfkit.render.tables import text_table, wrapped


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Spark:
    """A figure over runs, oldest first, drawn small enough for a table cell; ``label`` says what it is,
    ``link`` the anchor of a section it opens (its chart), ``changes`` the runs a change point begins at,
    ``breaks`` those a new method of measuring it begins at (the line breaks there: two series)."""

    values: tuple[float, ...]
    label: str
    link: str = ""
    changes: tuple[int, ...] = ()
    breaks: tuple[int, ...] = ()

    def stretches(self) -> list[tuple[int, int]]:
        """(start, end) of each run of values measured one way."""
        return list(pairwise([0, *(i for i in self.breaks if 0 < i < len(self.values)), len(self.values)]))


Cell = str | Spark


@dataclass(frozen=True)
class Table:
    """``kind`` names the table's style in HTML: ``verdicts`` keeps each row on one line (its last cell,
    a note, clipped to the page's width, whole in its tooltip), so the rows a person should read fit on the
    first screen, but for its second cell, the benchmark, which wraps where the page is too narrow for its
    id (a 1280-pixel screen cut the H100-vs-H200 table's MDE column off); ``benchmarks`` keeps each row on
    one line beside a plot."""

    head: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    kind: str = ""

    @classmethod
    def of(cls, head: Sequence[str], rows: Sequence[Sequence[Cell | object]], kind: str = "") -> Table:
        return cls(tuple(head), tuple(tuple(c if isinstance(c, Spark) else str(c) for c in row)
                                      for row in rows), kind)


@dataclass(frozen=True)
class Image:
    alt: str
    path: Path


@dataclass(frozen=True)
class Collapsed:
    """Blocks a reader opens when they want them (``<details>``, which GitHub's markdown renders too)."""

    summary: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Columns:
    """Blocks side by side in HTML (a table beside its plots: the left as wide as it needs, the right the
    rest), wrapping onto one column on a narrow screen; one after the other in markdown."""

    left: tuple[Block, ...]
    right: tuple[Block, ...]


Block = Text | Table | Image | Collapsed | Columns


@dataclass(frozen=True)
class Section:
    title: str
    blocks: tuple[Block, ...]
    level: int = 2


@dataclass(frozen=True)
class Document:
    title: str
    sections: tuple[Section, ...]


def anchor(title: str) -> str:
    """The id GitHub gives a heading (lower case, spaces as hyphens, punctuation but ``-`` and ``_``
    dropped); the HTML page gives its headings the same, so one link works in both renderings."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


#: A sparkline's height spans at least this share of its values' middle (twice the 5% minimum effect a
#: figure is judged by), so runs 0.2% apart draw nearly flat, not as a cliff from the floor to the top.
SPARK_MIN_SPAN = 0.10


def _scaled(values: Sequence[float]) -> list[float]:
    """Each value's place between the smallest and the largest, 0 to 1, the two widened about their middle
    to SPARK_MIN_SPAN of it where they lie closer (all 0.5 when they are equal)."""
    low, high = min(values), max(values)
    pad = max(0.0, SPARK_MIN_SPAN * abs(low + high) / 2 - (high - low)) / 2
    low, high = low - pad, high + pad
    return [0.5 if high == low else (v - low) / (high - low) for v in values]


# ---- markdown ----------------------------------------------------------------------------------------------

_BARS = "▁▂▃▄▅▆▇█"


def spark_text(spark: Spark) -> str:
    """A trend as unicode bars, one per run: ▁ the smallest, █ the largest; ¦ where a new method begins."""
    bars = [_BARS[round(f * (len(_BARS) - 1))] for f in _scaled(spark.values)] if spark.values else []
    return "¦".join("".join(bars[a:b]) for a, b in spark.stretches()) if bars else ""


def cell_text(cell: Cell) -> str:
    """A cell as plain text (a trend as unicode bars)."""
    return spark_text(cell) if isinstance(cell, Spark) else cell


def _markdown_spark(spark: Spark) -> str:
    bars = spark_text(spark)
    return f"[{bars}](#{spark.link})" if spark.link and bars else bars


def _markdown_cell(cell: Cell) -> str:
    return _markdown_spark(cell) if isinstance(cell, Spark) else cell.replace("|", "\\|")


def markdown_table(head: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(out + ["| " + " | ".join(_markdown_cell(c) for c in r) + " |" for r in rows])


def _markdown_block(block: Block) -> str:
    if isinstance(block, Table):
        return markdown_table(block.head, block.rows)
    if isinstance(block, Image):
        return f"![{block.alt}]({block.path.name})"
    if isinstance(block, Collapsed):  # GitHub renders the markdown inside once blank lines set it apart
        inner = "\n\n".join(_markdown_block(b) for b in block.blocks)
        return f"<details><summary>{html.escape(block.summary)}</summary>\n\n{inner}\n\n</details>"
    if isinstance(block, Columns):
        return "\n\n".join(_markdown_block(b) for b in (*block.left, *block.right))
    return block.text


def plain_text(blocks: Sequence[Block], width: int | None = None) -> str:
    """Text and tables for a terminal (a table's columns padded, a trend as unicode bars), one blank line
    between blocks, fitted to ``width`` columns where given; other blocks are left out."""
    parts = []
    for block in blocks:
        if isinstance(block, Table):
            parts.append(text_table(list(block.head), [[cell_text(c) for c in r] for r in block.rows], width))
        elif isinstance(block, Text):
            parts.append(wrapped(block.text, width))
    return "\n\n".join(parts) + "\n"


def markdown_sections(sections: Sequence[Section]) -> str:
    parts = []
    for section in sections:
        if section.title:
            parts.append(f"{'#' * section.level} {section.title}")
        parts += [_markdown_block(b) for b in section.blocks]
    return "\n\n".join(parts) + "\n"


def markdown(doc: Document) -> str:
    return f"# {doc.title}\n\n" + markdown_sections(doc.sections)


# ---- HTML --------------------------------------------------------------------------------------------------

#: The one style sheet of every page perfkit writes: the report's and the dashboard's.
STYLE = """
body { font-family: system-ui, sans-serif; margin: .6em auto; max-width: 1400px; padding: 0 1em; color: #222 }
h1 { font-size: 1.1em; margin: 0.2em 0; }
h2 { font-size: 1em; } h3, h4 { font-size: 0.95em; } h1 code { font-size: inherit; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.15em 0.45em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.verdicts { font-size: 0.8em; width: 100%; }
table.verdicts th, table.verdicts td { white-space: nowrap; padding: 0.1em 0.35em; line-height: 1.25; }
table.verdicts td:last-child { width: 100%; max-width: 0; overflow: hidden; text-overflow: ellipsis; }
table.verdicts td:nth-child(2) { white-space: normal; overflow-wrap: anywhere; min-width: 30em; }
table.benchmarks td { white-space: nowrap; }
table.trends td { vertical-align: middle; }
img { max-width: 100%; box-sizing: border-box; border: 1px solid #eee; }
figure { margin: 0.6em 0; }
figcaption { font-size: 0.85em; color: #555; }
code { background: #f5f5f5; padding: 0 0.2em; }
details { margin: 0.4em 0; }
summary { cursor: pointer; }
.columns { display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-start; }
.columns > div { flex: 0 1 auto; min-width: 0; overflow-x: auto; }
.columns > div + div { flex: 1 1 480px; }
svg.spark { vertical-align: middle; }
svg.history { max-width: 100%; box-sizing: border-box; height: auto; border: 1px solid #eee; }
.v { font-weight: 600; padding: 0 0.3em; border-radius: 3px; white-space: nowrap; }
.regressed { background: #fdd; color: #900; } .unknown { background: #ffe9c6; color: #8a4b00; }
.improved { background: #dfd; color: #060; } .changed { background: #e6e6ff; color: #339; }
.unchanged, .new, .missing { color: #555; padding: 0; }
.not-judged, .measured-differently { background: #eee; color: #444; }
.muted { color: #666; font-size: 0.9em; }
"""


#: ``[words](#anchor)``; the words may hold one level of brackets, as a benchmark id does (``test_x[a-b]``).
_LINK = re.compile(r"\[((?:[^\[\]]|\[[^\[\]]*\])+)\]\(#([\w-]+)\)")


def _inline(text: str) -> str:
    escaped = html.escape(text)
    escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
    escaped = re.sub(_LINK, r'<a href="#\2">\1</a>', escaped)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", escaped)


def spark_svg(spark: Spark, width: int = 64, height: int = 16) -> str:
    """A trend as an inline SVG line (no script, no file, no network), the newest run a dot, a dashed red line
    before each run a change point begins at and a gap with a dotted grey line before each a new method
    begins at; the label is its tooltip, and with a link the line opens its chart."""
    if not spark.values:
        return ""
    step = (width - 4) / max(len(spark.values) - 1, 1)
    points = [(2 + i * step, height - 2 - f * (height - 4)) for i, f in enumerate(_scaled(spark.values))]
    lines = "".join(
        '<polyline points="' + " ".join(f"{x:.1f},{y:.1f}" for x, y in points[a:b])
        + '" fill="none" stroke="#1f77b4" stroke-width="1.5"/>' for a, b in spark.stretches()
    )
    marks = "".join(
        f'<line x1="{2 + (i - 0.5) * step:.1f}" y1="0" x2="{2 + (i - 0.5) * step:.1f}" y2="{height}" '
        f'stroke="{color}" stroke-width="1" stroke-dasharray="{dashes}"/>'
        for indices, color, dashes in ((spark.changes, "#d62728", "2 2"), (spark.breaks, "#888888", "1 2"))
        for i in indices if 0 < i < len(spark.values)
    )
    x, y = points[-1]
    svg = (f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="{html.escape(spark.label)}"><title>{html.escape(spark.label)}</title>{marks}'
           f'{lines}<circle cx="{x:.1f}" cy="{y:.1f}" r="2" fill="#d62728"/></svg>')
    return f'<a href="#{spark.link}">{svg}</a>' if spark.link else svg


def _html_cell(cell: Cell, clipped: bool = False) -> str:
    """A table cell; a clipped one carries its whole text as its tooltip."""
    if isinstance(cell, Spark):
        return f"<td>{spark_svg(cell)}</td>"
    return f'<td title="{html.escape(cell)}">{_inline(cell)}</td>' if clipped else f"<td>{_inline(cell)}</td>"


def _html_cells(row: Sequence[Cell], kind: str) -> str:
    clip = len(row) - 1 if kind == "verdicts" else -1  # the last cell, a note
    return "".join(_html_cell(c, i == clip) for i, c in enumerate(row))


def _html_block(block: Block) -> str:
    if isinstance(block, Table):
        return table_html([_inline(c) for c in block.head], [_html_cells(r, block.kind) for r in block.rows],
                          block.kind)
    if isinstance(block, Image):
        if not block.path.is_file():
            return f"<p><em>{html.escape(block.alt)}: {html.escape(block.path.name)} is missing</em></p>"
        data = base64.b64encode(block.path.read_bytes()).decode("ascii")
        return (f'<figure><img alt="{html.escape(block.alt)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{html.escape(block.alt)}</figcaption></figure>")
    if isinstance(block, Collapsed):
        return (f"<details><summary>{_inline(block.summary)}</summary>"
                + "\n".join(_html_block(b) for b in block.blocks) + "</details>")
    if isinstance(block, Columns):
        return ('<div class="columns"><div>' + "\n".join(_html_block(b) for b in block.left) + "</div><div>"
                + "\n".join(_html_block(b) for b in block.right) + "</div></div>")
    return "\n".join(f"<p>{_inline(line)}</p>" for line in block.text.splitlines() if line.strip())


def _heading(section: Section, seen: dict[str, int]) -> str:
    """A section's heading with the id :func:`anchor` gives its title (a repeated one numbered as GitHub
    numbers it: ``-1``, ``-2``)."""
    slug = anchor(section.title)
    seen[slug] = seen.get(slug, -1) + 1
    ident = f"{slug}-{seen[slug]}" if seen[slug] else slug
    level = min(section.level, 6)
    return f'<h{level} id="{ident}">{_inline(section.title)}</h{level}>'


def html_page(doc: Document) -> str:
    body = [f"<h1>{_inline(doc.title)}</h1>"]
    seen: dict[str, int] = {}
    for section in doc.sections:
        if section.title:
            body.append(_heading(section, seen))
        body += [_html_block(b) for b in section.blocks]
    return page_html(doc.title, body)


def page_html(title: str, body: Iterable[str]) -> str:
    """A whole page of ``body``'s HTML blocks under the one style sheet (the report's and the dashboard's),
    titled ``title`` (plain text)."""
    head = f'<meta charset="utf-8"><title>{html.escape(title)}</title><style>{STYLE}</style>'
    text = "\n".join(body)
    return f'<!DOCTYPE html>\n<html lang="en"><head>{head}</head>\n<body>\n{text}\n</body></html>\n'


def table_html(head: Iterable[str], rows: Iterable[str], kind: str = "") -> str:
    """A table of header cells in HTML and rows of ``<td>`` elements, of the style sheet's class ``kind``."""
    of = f' class="{kind}"' if kind else ""
    return (f"<table{of}><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join(f"<tr>{r}</tr>" for r in rows) + "</tbody></table>")


def write(doc: Document, folder: Path) -> Path:
    """``report.md`` and ``report.html`` (the same sections, self-contained) in ``folder``; the markdown's
    path."""
    path = folder / "report.md"
    path.write_text(markdown(doc), encoding="utf-8")
    (folder / "report.html").write_text(html_page(doc), encoding="utf-8")
    return path
