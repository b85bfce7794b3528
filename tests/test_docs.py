"""The docs stay true: their measured numbers come from the committed baselines (perfkit.docnumbers), their
links resolve, and the worked example of a new benchmark runs as written."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from perfkit import docnumbers
from tests.conftest import ROOT


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
    assert example == _worked_example(ROOT / "docs" / "usage.md")
    pytester.makepyfile(test_softmax=example)
    result = pytester.runpytest("-p", "perfkit.plugin", "--perfkit-device=cpu", "--perfkit-profile=quick",
                                "--benchmark-json=r.json")
    result.assert_outcomes(passed=2)
    benches = json.loads((pytester.path / "r.json").read_text())["benchmarks"]
    assert all("bandwidth_gbps" in b["extra_info"]["metrics"] for b in benches)
