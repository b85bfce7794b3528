"""A report as one list of sections, rendered to markdown (report.md, CI job summaries) and to one
self-contained HTML page (every plot embedded as a data URI, so it opens offline, attached to a CI run or
mailed). Both renderings come from the same sections; neither is parsed back from the other.

Text may hold ``code`` and **bold**, which both renderings understand.
"""
from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Table:
    head: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, head: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
        return cls(tuple(head), tuple(tuple(str(c) for c in row) for row in rows))


@dataclass(frozen=True)
class Image:
    alt: str
    path: Path


Block = Text | Table | Image


@dataclass(frozen=True)
class Section:
    title: str
    blocks: tuple[Block, ...]
    level: int = 2


@dataclass(frozen=True)
class Document:
    title: str
    sections: tuple[Section, ...]


# ---- markdown ----------------------------------------------------------------------------------------------


def markdown_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(out + ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows])


def _markdown_block(block: Block) -> str:
    if isinstance(block, Table):
        return markdown_table(block.head, block.rows)
    if isinstance(block, Image):
        return f"![{block.alt}]({block.path.name})"
    return block.text


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

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
img { max-width: 100%; border: 1px solid #eee; }
code { background: #f5f5f5; padding: 0 0.2em; }
"""


def _inline(text: str) -> str:
    escaped = html.escape(text)
    escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", escaped)


def _html_block(block: Block) -> str:
    if isinstance(block, Table):
        return (
            "<table><thead><tr>"
            + "".join(f"<th>{_inline(c)}</th>" for c in block.head)
            + "</tr></thead><tbody>"
            + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in block.rows)
            + "</tbody></table>"
        )
    if isinstance(block, Image):
        if not block.path.is_file():
            return f"<p><em>{html.escape(block.alt)}: {html.escape(block.path.name)} is missing</em></p>"
        data = base64.b64encode(block.path.read_bytes()).decode("ascii")
        return f'<figure><img alt="{html.escape(block.alt)}" src="data:image/png;base64,{data}"></figure>'
    return "\n".join(f"<p>{_inline(line)}</p>" for line in block.text.splitlines() if line.strip())


def html_page(doc: Document) -> str:
    body = [f"<h1>{_inline(doc.title)}</h1>"]
    for section in doc.sections:
        if section.title:
            level = min(section.level, 6)
            body.append(f"<h{level}>{_inline(section.title)}</h{level}>")
        body += [_html_block(b) for b in section.blocks]
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta '
        f'charset="utf-8"><title>{html.escape(doc.title)}</title>'
        f"<style>{_STYLE}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def write(doc: Document, folder: Path) -> Path:
    """``report.md`` and ``report.html`` (the same sections, self-contained) in ``folder``; the markdown's
    path."""
    path = folder / "report.md"
    path.write_text(markdown(doc), encoding="utf-8")
    (folder / "report.html").write_text(html_page(doc), encoding="utf-8")
    return path
