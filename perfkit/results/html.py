"""The run report as one self-contained HTML page: the markdown report rendered, every plot embedded as a
data URI, so the page opens offline, attached to a CI run or mailed.

It renders the markdown perfkit itself writes (headings, paragraphs, pipe tables, images, inline code and
bold), not markdown in general.
"""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
img { max-width: 100%; border: 1px solid #eee; }
code { background: #f5f5f5; padding: 0 0.2em; }
"""
_IMAGE = re.compile(r"^!\[(?P<alt>.*)\]\((?P<src>[^()]+)\)$")  # alt may hold brackets: test ids do


def write_html(markdown_path: Path) -> Path:
    """``report.html`` beside ``report.md``, the PNGs it names embedded; returns its path."""
    folder = markdown_path.parent
    lines = markdown_path.read_text(encoding="utf-8").splitlines()
    title = lines[0].lstrip("# ").strip() if lines else "perfkit report"
    body = "\n".join(_blocks(lines, folder))
    page = (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{_STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")
    path = folder / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


def _blocks(lines: list[str], folder: Path) -> list[str]:
    out: list[str] = []
    table: list[str] = []
    for line in [*lines, ""]:
        if line.startswith("|"):
            table.append(line)
            continue
        if table:
            out.append(_table(table))
            table = []
        if not line.strip():
            continue
        if line.startswith("#"):
            level = min(len(line) - len(line.lstrip("#")), 6)
            out.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
        elif image := _IMAGE.match(line.strip()):
            out.append(_image(image["alt"], folder / image["src"]))
        else:
            out.append(f"<p>{_inline(line.strip())}</p>")
    return out


def _table(rows: list[str]) -> str:
    cells = [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]] for row in rows]
    separator = len(cells) > 1 and all(c and set(c) <= {"-", ":"} for c in cells[1])
    head, body = cells[0], cells[2:] if separator else cells[1:]
    return ("<table><thead><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr></thead><tbody>"
            + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body)
            + "</tbody></table>")


def _image(alt: str, path: Path) -> str:
    if not path.is_file():
        return f"<p><em>{html.escape(alt)}: {html.escape(path.name)} is missing</em></p>"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"></figure>'


def _inline(text: str) -> str:
    escaped = html.escape(text)
    escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", escaped)
