"""Benchmark names given as globs: brackets are literal everywhere a user names benchmarks."""
from __future__ import annotations

from perfkit.resultfile import inject
from perfkit.resultfile.model import name_matches
from perfkit.verdict.trends import matches

CONV = "benches/test_layers.py::test_layer[conv-forward]"


def test_a_parametrized_id_names_its_benchmark_and_no_set_of_characters():
    assert name_matches(CONV, "*test_layer[conv-forward]")
    assert not name_matches("benches/test_layers.py::test_layer[c]", "*test_layer[conv-forward]")
    assert name_matches(CONV, "*test_layer[conv-*]") and name_matches(CONV, "*[conv-forward?")
    assert matches(CONV, "layer[conv") and matches(CONV, "*layer[conv-forward]")


def test_a_slowdown_written_into_a_bracketed_id_scales_that_benchmark():
    """The rule users write from a verdict's table (an id with its brackets) matched nothing before: the
    slowdown was silently not written."""
    entry = {"fullname": CONV, "stats": {"median": 1.0, "data": [1.0]}, "extra_info": {}}
    other = {"fullname": "benches/test_layers.py::test_layer[relu-forward]", "stats": {"median": 1.0}}
    for bench in (entry, other):
        inject.apply(bench, {inject.ENV: "*test_layer[conv-forward]=1.10"})
    assert entry["stats"]["median"] == 1.10 and entry["extra_info"]["injected_slowdown"] == 1.10
    assert other["stats"]["median"] == 1.0
