"""The report's self-contained HTML page opens in a real browser: headless Chromium (Debian's package; CI
installs it) loads it offline, every plot decodes and nothing errors."""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

import pytest

from perfkit.results import report
from tests.conftest import typed

#: Injected into a copy of the page: records load errors and, once loaded, whether every image decoded.
CHECK = """<script>
window.perfkitErrors = [];
window.addEventListener("error",
  e => window.perfkitErrors.push(String(e.message || (e.target && e.target.alt))), true);
window.addEventListener("load", () => {
  const bad = [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.alt);
  document.body.setAttribute("data-check", JSON.stringify({images: document.images.length, bad,
                                                           errors: window.perfkitErrors}));
});
</script>"""


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if found is None:
        pytest.skip(
            "headless Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)"
        )
    return found


def _render(text: str, tmp_path) -> dict:
    """What headless Chromium saw of the page ``text``: how many images, which did not decode, the errors."""
    chromium = _chromium()
    checked = tmp_path / "checked.html"
    checked.write_text(text.replace("</head>", CHECK + "</head>", 1))
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=10000",
            "--dump-dom",
            checked.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    found = re.search(r'data-check="([^"]*)"', done.stdout)
    assert found, f"Chromium rendered nothing (exit {done.returncode}): {done.stderr[-2000:]}"
    return json.loads(html.unescape(found.group(1)))


def test_the_html_report_renders_offline_with_every_plot(tmp_path, h200_results):
    text = report.write_report(typed(h200_results), tmp_path / "report").with_suffix(".html").read_text()
    assert "http://" not in text and "https://" not in text and 'src="data:image/png;base64,' in text
    pngs = len(list((tmp_path / "report").glob("*.png")))
    assert _render(text, tmp_path) == {"images": pngs, "bad": [], "errors": []} and pngs >= 7
    assert "<table>" in text and "<h2 " in text


def test_the_browser_check_sees_a_plot_that_does_not_decode(tmp_path):
    page = '<html><head></head><body><img alt="broken" src="data:image/png;base64,AAAA"></body></html>'
    assert _render(page, tmp_path)["bad"] == ["broken"]


def test_markdown_and_html_are_rendered_from_the_same_sections(tmp_path):
    from perfkit.results import document

    trend = document.Spark((1.0, 2.0, 3.0), "time over 3 runs", "s-1")
    doc = document.Document(
        "r",
        (
            document.Section(
                "s",
                (
                    document.Table.of(["a", "b"], [["-", "-"], ["x | y", "1"]]),
                    document.Text("`code` and **bold**, [a link](#s) to `test_x[a-b]`"),
                ),
            ),
            document.Section("s", (
                document.Columns((document.Table.of(["t"], [[trend], ["[test_x[a-b]](#s)"]]),),
                                 (document.Text("right"),)),
                document.Collapsed("3 unchanged", (document.Table.of(["v"], [["unchanged"]]),)),
            )),
        ),
    )
    page = document.html_page(doc)
    assert page.count("<tr>") == 8 and "<td>x | y</td>" in page and "<td>-</td>" in page
    assert '<code>code</code> and <strong>bold</strong>, <a href="#s">a link</a> to' in page
    assert '<h2 id="s">s</h2>' in page and '<h2 id="s-1">s</h2>' in page  # numbered as GitHub numbers them
    columns = '<div class="columns"><div><table><thead><tr><th>t</th></tr></thead><tbody>'
    assert f'{columns}<tr><td><a href="#s-1"><svg class="spark"' in page
    assert '<td><a href="#s">test_x[a-b]</a></td>' in page
    assert '<details><summary>3 unchanged</summary><table>' in page and "right</p></div></div>" in page
    markdown = document.markdown(doc)
    assert "| x \\| y | 1 |" in markdown and markdown.startswith("# r\n\n## s\n")
    assert "| [▁▅█](#s-1) |" in markdown and "| [test_x[a-b]](#s) |" in markdown
    assert "<details><summary>3 unchanged</summary>\n\n| v |\n|---|\n| unchanged |\n\n</details>" in markdown
    assert markdown.index("| t |") < markdown.index("right")  # the left column, then the right
