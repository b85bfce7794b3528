"""The docs stay true: their measured numbers come from the committed baselines (perfkit.docnumbers), their
links resolve, and the worked example of a new benchmark runs as written."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from perfkit import SCHEMA_VERSION, docnumbers
from perfkit.resultfile.model import ResultSet
from perfkit.store.baselines import from_runs
from tests.conftest import ROOT, typed


@pytest.fixture(scope="module")
def baselines():
    return docnumbers.committed()


def test_every_numbers_block_of_the_docs_is_what_the_committed_baselines_give(baselines):
    quoted: set[str] = set()
    for path in docnumbers.doc_files():
        text = path.read_text(encoding="utf-8")
        quoted |= {match["name"] for match in docnumbers.BLOCK.finditer(text)}
        assert docnumbers.rewritten(text, baselines) == text, (
            f"{path.name} quotes numbers the committed baselines no longer give: "
            "run python -m perfkit.docnumbers")
    assert quoted == set(docnumbers.BLOCKS)  # every block is quoted somewhere


def test_a_stale_number_in_a_block_is_found(baselines):
    text = "<!-- numbers: ceilings -->\n| H200 | 4.26 | 51.2 |\n<!-- /numbers -->\n"
    fresh = docnumbers.rewritten(text, baselines)
    assert fresh != text and "51.2" not in fresh
    assert docnumbers.rewritten(fresh, baselines) == fresh


def test_the_baselines_table_counts_a_gating_figure_added_after_some_runs_as_not_judged():
    # the H200's time-to-accuracy entries held 3 runs of their time on 2026-11-29, but their gating figure
    # (train_to_target_s, added since the first run) 1-2: a table of runs alone called them judged
    def run(trained: bool) -> dict:
        metrics = {"train_to_target_s": {"value": 9.0, "unit": "s", "better": "lower", "gate": True}}
        return {"fullname": "b", "name": "b", "group": None, "stats": {"data": [1.0], "median": 1.0},
                "extra_info": {"metrics": metrics if trained else {}}}

    def baseline(*trained: bool) -> ResultSet:
        info = {"schema_version": SCHEMA_VERSION, "hardware_id": "cpu-test", "fingerprint": {},
                "ceilings": {}}
        runs = [{"benchmarks": [run(t)], "machine_info": {"perfkit": info}} for t in trained]
        return from_runs([typed(r) for r in runs])

    assert docnumbers.not_judged(baseline(False, True, True)) == 1
    assert docnumbers.not_judged(baseline(True, True, True)) == 0


def test_an_unknown_block_names_the_known_ones(baselines):
    with pytest.raises(KeyError, match="known: baselines, ceilings, vector-add, layers"):
        docnumbers.rewritten("<!-- numbers: gemm -->\nx\n<!-- /numbers -->\n", baselines)


def test_every_relative_link_of_the_docs_points_at_a_file_that_exists():
    for path in docnumbers.doc_files():
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", path.read_text()):
            assert (path.parent / target).exists(), f"{path.name} links to {target}, which does not exist"


def _worked_example(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    code = re.search(r"## Adding a benchmark.*?```python\n(.*?)```", text, re.DOTALL)
    assert code, f"{path.name} lost its worked example of a new benchmark"
    return code.group(1)


def test_the_worked_example_of_a_new_benchmark_runs_and_records_its_rate(pytester):
    """The README's example, the same as the docs' (one example, shown twice), runs as written."""
    example = _worked_example(ROOT / "README.md")
    assert example == _worked_example(ROOT / "docs" / "writing.md")
    pytester.makepyfile(test_softmax=example)
    result = pytester.runpytest("-p", "perfkit.plugin", "--perfkit-device=cpu", "--perfkit-profile=quick",
                                "--benchmark-json=r.json")
    result.assert_outcomes(passed=2)
    benches = json.loads((pytester.path / "r.json").read_text())["benchmarks"]
    assert all("bandwidth_gbps" in b["extra_info"]["metrics"] for b in benches)


# A measured number in the prose of the docs carries its date, or lives in docs/findings.md under a dated
# heading. A number followed by one of these units is taken for a measurement:
_MEASURED = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:GB/s|TB/s|TFLOP/s|%|ms|µs|us|s|W|J|MiB|GiB|GB)(?![\w/])")
_DATE = re.compile(r"20\d\d-\d\d-\d\d")
_TO_FINDINGS = re.compile(r"\]\((?:docs/)?findings\.md[#)]")
_SENTENCE = re.compile(r".+?(?:[.!?](?=\s+[A-Z*`(\[\"])|\Z)", re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`]*`")
_ITEM = re.compile(r"\s*(?:[-*]|\d+\.)\s")

# Numbers with a unit that are not measurements, each in the words around it (the same number measured
# elsewhere is still caught). Keep it short: a measurement is moved to docs/findings.md or dated instead.
NOT_MEASURED = (
    "3% GPU-bound, 5% otherwise",  # the judge's minimum effects (ab.md quotes them)
    "launches' 15% minimum effect",  # the tolerance the first managed launches declare
    "see a 5% change (MDE ≤ 5%)",  # the change the report's verdict line counts figures able to see
    "equivalence test at 5%",  # alpha
    "false-alarm rate 5%",  # alpha
    "±2 points at 5%",  # alpha, and the Monte-Carlo error of 400 simulated nights (arithmetic)
    "80% power",  # the power the MDE is printed at
    "over the whole night at 5%",  # alpha (the README's verdict section)
    "flagged at least 80% of the time",  # the power the MDE is printed at
    "prior would give less than a 0.1% chance",  # the robust prior fit's cut-off
    "GitHub takes 1 MiB a step",  # GitHub's limit on a job summary
    "given 15 s to end before SIGKILL",  # the grace period ab and bisect give a stopped run
    "at most one every 20 s",  # how often a long benchmark's progress line is printed
    "over a 2 s loop",  # the power benchmarks' window (perfkit/measure/power.py)
    "the 50 ms rounds",  # timing.MIN_ROUND_S
    "1.0, 1.0 and 3.0 ms against 1.6 ms is +10.9%",  # a worked example of the geometric mean (arithmetic)
    "printed as −4.0%",  # the same example's arithmetic mean
    "a 1%-noise copy could not show a 50% slowdown",  # arithmetic from the t quantile before it
    "synthetic noise of 8%",  # a parameter of tests/test_noise.py
    "40 GPU figures at 1%, 27 host figures at 8%",  # parameters of tests/test_noise.py
    "host-bound benchmarks 12% slower",  # a scenario of tests/test_host_shift.py
    "SD 0.2–1.5%",  # the simulation's synthetic spreads (perfkit/simulate.py)
    "(2–18%, as much between machines; a quarter with a 15% tolerance",  # the same simulation's parameters
    "these 3 benchmarks got 8% slower",  # an illustration of what a verdict says, not a run
    "(10%, or 1.5 times a wider minimum effect), up to 50%",  # sharp_goal and machine_spread.MOST_WIDENED
    "would need more than 50%",  # machine_spread.MOST_WIDENED
    "one run there can see, up to 50%",  # machine_spread.MOST_WIDENED
)


def _prose(text: str) -> list[list[tuple[int, str]]]:
    """The paragraphs (and list items) of a markdown page as (line number, line) lists, without fenced or
    indented code, the generated numbers blocks, table rows and HTML comments."""
    paragraphs: list[list[tuple[int, str]]] = []
    paragraph: list[tuple[int, str]] = []
    fenced = block = code = False
    blank = True
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        ends = fenced or block or not stripped or stripped.startswith(("|", "#", "<!--", "```"))
        if ends or _ITEM.match(line) or (line.startswith("    ") and (blank or code) and not paragraph):
            if paragraph:
                paragraphs.append(paragraph)
            paragraph = []
        if stripped.startswith("```"):
            fenced = not fenced
        elif stripped.startswith("<!-- numbers:"):
            block = True
        elif stripped == "<!-- /numbers -->":
            block = False
        elif fenced or block:
            pass
        elif not stripped:
            code = False
        elif line.startswith("    ") and (blank or code) and not paragraph:
            code = True
        elif stripped.startswith("#") or not stripped.startswith(("|", "<!--")):
            paragraph.append((number, line))
            if stripped.startswith("#"):
                paragraphs.append(paragraph)
                paragraph = []
        blank = not stripped
    if paragraph:
        paragraphs.append(paragraph)
    return paragraphs


def _allowed(text: str) -> list[tuple[int, int]]:
    spans = []
    for phrase in NOT_MEASURED:
        pattern = r"\s+".join(re.escape(word) for word in phrase.split())
        spans += [(match.start(), match.end()) for match in re.finditer(pattern, text)]
    return spans


def undated_measurements(text: str) -> list[tuple[int, str, str]]:
    """(line, number, sentence) of each number with a unit whose line and sentence carry neither a date nor a
    link to findings.md, outside code, tables, numbers blocks and NOT_MEASURED."""
    found = []
    for paragraph in _prose(text):
        joined = "\n".join(line for _, line in paragraph)
        starts = [sum(len(line) + 1 for _, line in paragraph[:i]) for i in range(len(paragraph))]
        prose = _CODE_SPAN.sub(lambda span: " " * len(span.group()), joined)
        sentences = [match.span() for match in _SENTENCE.finditer(prose)]
        allowed = _allowed(prose)
        for match in _MEASURED.finditer(prose):
            if any(a <= match.start() and match.end() <= b for a, b in allowed):
                continue
            row = max(i for i, start in enumerate(starts) if start <= match.start())
            a, b = next(span for span in sentences if span[0] <= match.start() < span[1])
            line, sentence = paragraph[row][1], joined[a:b]
            if any(pattern.search(part) for pattern in (_DATE, _TO_FINDINGS) for part in (line, sentence)):
                continue
            found.append((paragraph[row][0], match.group(), " ".join(sentence.split())))
    return found


def test_every_measured_number_in_the_docs_is_dated_or_kept_in_the_findings():
    """A timing, spread, share or rate seen on some machine goes stale unless it says when: the prose of the
    README and the docs quotes one only with its date or a link to the dated findings page."""
    undated = [f"{path.relative_to(ROOT)}:{line}: {number} in {sentence!r}"
               for path in docnumbers.doc_files() if path.name != "findings.md"
               for line, number, sentence in undated_measurements(path.read_text(encoding="utf-8"))]
    assert not undated, ("measured numbers without a date: move it to docs/findings.md under its date, or "
                         "date it (a policy constant goes in NOT_MEASURED, with why):\n" + "\n".join(undated))


def test_an_undated_measurement_is_found_and_a_dated_one_passes():
    page = ("The copy took 4.2 ms on an H200.\n"
            "On 2026-11-27 the copy took 4.2 ms. The GEMM ran at\n"
            "780 TFLOP/s ([findings](findings.md#x)); the minimum effects are 3% GPU-bound, 5% otherwise.\n"
            "\n"
            "    pytest took 9 s\n"
            "\n"
            "```\n"
            "took 3 s\n"
            "```\n"
            "| H200 | 4.25 TB/s |\n"
            "<!-- numbers: ceilings -->\n"
            "4.25 TB/s\n"
            "<!-- /numbers -->\n"
            "- a list item whose `--rounds 10 s` is code, then 12% slower")
    assert [(line, number) for line, number, _ in undated_measurements(page)] == [(1, "4.2 ms"), (14, "12%")]


def _slug(heading: str) -> str:
    """The anchor mkdocs (Python-Markdown's toc) and GitHub give a heading."""
    text = re.sub(r"[^\w\s-]", "", _CODE_SPAN.sub(lambda span: span.group()[1:-1], heading)).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def test_every_link_to_a_heading_of_the_docs_finds_it():
    for path in docnumbers.doc_files():
        for target, anchor in re.findall(r"\]\(([^)#:]+\.md)#([^)]+)\)", path.read_text(encoding="utf-8")):
            page = (path.parent / target).read_text(encoding="utf-8")
            anchors = {_slug(line.lstrip("#")) for line in page.split("\n") if re.match(r"#+ ", line)}
            assert anchor in anchors, f"{path.name} links to {target}#{anchor}: {target} has no such heading"
