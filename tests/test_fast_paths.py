"""The read-only commands stay quick, checked by structure, not by the clock (a timed test fails on a busy CI
host): the commands that only read result files never import torch (seconds), a comparison across hardware
reads the committed FLOP tables instead of building models, and those tables are what the counting code
counts today. The shortcuts that keep SciPy's statistics module out give its numbers exactly."""
from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys

import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from perfkit.ab import bisect
from perfkit.ab import run as ab
from perfkit.errors import UsageError
from perfkit.measure import hardware
from perfkit.render.history_svg import history_svg
from perfkit.resultfile import load
from perfkit.resultfile.figures import TIME
from perfkit.resultfile.payloads import Scaling
from perfkit.store import baseline_runs
from perfkit.verdict import changepoints, stats, trends
from perfkit.workloads import benchwork, flop_cache
from tests.conftest import ROOT
from tests.gitrepo import commit, git, make_repo

H200 = str(ROOT / "baselines" / "nvidia-h200-x1.json")
H100 = str(ROOT / "baselines" / "nvidia-h100-80gb-hbm3-x1.json")
STALE = ("the committed FLOP cache was counted with other versions than those installed; make it again with "
         "`python -m perfkit.workloads.make_flop_cache`")
#: Run in a fresh interpreter: one command in-process, then what it imported, as the last line.
PROBE = """
import contextlib, io, json, sys
from perfkit import cli
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        status = cli.main(sys.argv[1:])
    except SystemExit as exc:  # argparse's usage errors
        status = exc.code
heavy = sorted(m for m in ("torch", "torchvision", "matplotlib", "sqlalchemy", "scipy.stats")
               if m in sys.modules)
print(json.dumps({"status": status, "heavy": heavy}))
"""


def _cache_current() -> bool:
    return bool(flop_cache._committed())


def _imported_by(*args: str) -> dict[str, object]:
    """What ``perfkit ARGS`` imported of the heavy packages, in a fresh interpreter running this checkout."""
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("args", [
    ["--help"],
    ["hw", "--id", "--device", "cpu"],
    ["predict"],  # its usage error
    ["predict", "resnet18"],
    ["compare", H200, H200],
    ["memory", "resnet19", "--batch", "2"],  # an unknown model is said before torch is imported
    ["flops", "resnet19"],
    ["predict", "resnet19", "--gpu", "h200"],
])
def test_read_only_commands_import_no_torch(args):
    found = _imported_by(*args)
    assert found["heavy"] == [], f"perfkit {' '.join(args)} imported {found['heavy']}"


@pytest.mark.skipif(not hardware.no_gpu_driver(), reason="a GPU driver is present: hw --id asks torch")
def test_hw_id_of_a_machine_without_a_gpu_imports_no_torch():
    found = _imported_by("hw", "--id")
    assert found == {"status": 0, "heavy": []}


@pytest.mark.skipif(not hardware.no_gpu_driver(), reason="a GPU driver is present: the id here asks torch")
def test_baseline_list_of_a_machine_without_a_gpu_imports_no_torch():
    found = _imported_by("baseline", "list")  # the committed baselines/
    assert found == {"status": 0, "heavy": []}


def test_hw_id_without_torch_is_the_fingerprints_id():
    assert hardware.hardware_id_here("cpu") == hardware.fingerprint("cpu").hardware_id


@pytest.mark.skipif(not _cache_current(), reason=STALE)
def test_a_comparison_across_hardware_builds_no_model():
    found = _imported_by("compare", H200, H100)
    assert found == {"status": 0, "heavy": []}


@pytest.mark.skipif(not _cache_current(), reason=STALE)
def test_the_cache_holds_every_table_the_committed_baselines_need(monkeypatch):
    def refuse(*network):
        raise AssertionError(f"counted {network}: the committed FLOP cache lacks it; {STALE}")

    monkeypatch.setattr(flop_cache, "count", refuse)
    monkeypatch.setattr(flop_cache, "_MEMO", flop_cache._Memo())
    for path in sorted((ROOT / "baselines").glob("*.json")):
        results = load.load(path)
        for bench in results.benchmarks:
            benchwork.work_of(bench, results)


@pytest.mark.parametrize("network", [("tiny-cnn", (3, 32, 32), None), ("resnet18", (3, 32, 32), None),
                                     (benchwork.LAYER_STACK, (8, 28, 28), (19, 19))])
def test_the_committed_tables_are_what_the_counting_code_counts(network):
    cached = flop_cache.lookup(*network)
    if not _cache_current():  # counted with other versions: never read, so never stale
        assert cached is None
        return
    assert cached is not None, f"{flop_cache.key(*network)} is not in the cache"
    assert cached == flop_cache.count(*network)


def test_a_table_packed_and_unpacked_is_the_table():
    table = flop_cache.count("tiny-cnn", (3, 32, 32), None)
    assert flop_cache.unpacked(json.loads(json.dumps(flop_cache.packed(table)))) == table


@settings(max_examples=300, deadline=None)
@given(q=st.sampled_from([0.25, 0.5, 0.75]), d=st.floats(0.05, 200), d0=st.floats(1e-3, 1e12),
       x=st.one_of(st.floats(0, 50), st.sampled_from([0.0, -1.0, math.inf, math.nan])))
def test_the_f_and_chi2_functions_give_scipy_stats_numbers(q, d, d0, x):
    def same(a: float, b: float) -> bool:
        return a == b or (math.isnan(a) and math.isnan(b))

    assert same(stats.f_quantile(q, d, d0), float(scipy.stats.f.ppf(q, d, d0)))
    assert same(stats.f_upper_tail(x, d, d0), float(scipy.stats.f.sf(x, d, d0)))
    assert same(stats.chi2_upper_tail(x * d, d), float(scipy.stats.chi2.sf(x * d, d)))


@pytest.mark.filterwarnings("ignore:invalid value encountered in sqrt:RuntimeWarning")  # scipy's own interval
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-50, 50).map(lambda i: i / 7), st.floats(-5, 5)), min_size=2,
                max_size=30))
def test_theil_sen_gives_scipys_slope(points):
    xs, ys = [x for x, _ in points], [y for _, y in points]
    if len(set(xs)) < 2:
        return
    assert stats.theil_sen_slope(ys, xs) == float(scipy.stats.theilslopes(ys, xs)[0])


@pytest.mark.slow
def test_ab_says_a_selection_of_nothing_before_any_checkout(tmp_path, monkeypatch):
    """``ab -k nonexistent`` took 36 s (two checkouts, two benchmark runs) to say nothing matched."""
    repo = make_repo(tmp_path / "repo")
    commit(repo, 100, "one")
    (repo / "README.md").write_text("words\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "words only")

    def refuse(*_: object) -> None:
        raise AssertionError("a checkout was made")

    monkeypatch.setattr(ab, "worktree", refuse)
    with pytest.raises(UsageError, match="-k 'nonexistent' selects no benchmark in benches on either side"):
        ab.ab(repo, "HEAD~1", "HEAD", tmp_path / "out", expr="nonexistent", rounds=2)
    with pytest.raises(UsageError, match="selects no benchmark"):
        ab.ab(repo, "HEAD~1", None, tmp_path / "out", expr="nonexistent", rounds=2)  # the working tree as B
    with pytest.raises(UsageError, match="selects no benchmark in benches at HEAD~1 or at HEAD"):
        bisect.bisect(repo, "HEAD~1", "HEAD", "nonexistent", 2, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (repo / ".git" / "BISECT_START").exists()


@pytest.mark.slow
def test_ab_tells_a_selection_of_nothing_from_each_sides_collection_and_keeps_it(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo")
    commit(repo, 100, "one", extra=True)
    commit(repo, 200, "two")
    assert ab.selects_nothing(repo, ["HEAD"], ["benches"], "nonexistent")
    assert not ab.selects_nothing(repo, ["HEAD"], ["benches"], "sum")  # it selects test_sum
    assert ab.selects_nothing(repo, ["HEAD"], ["benches"], "extra")  # only the base has test_extra
    assert not ab.selects_nothing(repo, ["HEAD~1", "HEAD"], ["benches"], "extra")
    with pytest.raises(UsageError, match="not an expression pytest reads"):
        ab.selects_nothing(repo, ["HEAD"], ["benches"], "sum and (")
    (repo / "benches" / "test_new.py").write_text("def test_new():\n    pass\n")
    assert not ab.selects_nothing(repo, [None], ["benches"], "new")  # the working tree's untracked bench
    assert ab.selects_nothing(repo, ["HEAD"], ["benches"], "new")  # not in the commit

    def refuse(*_: object) -> None:
        raise AssertionError("collected again")

    monkeypatch.setattr(ab.stopping, "run_all", refuse)
    assert ab.selects_nothing(repo, ["HEAD~1", "HEAD"], ["benches"], "nonexistent")  # kept, any -k
    assert not ab.selects_nothing(repo, ["HEAD~1", "HEAD"], ["benches"], "loop and extra")
    monkeypatch.undo()
    for kept in (repo / ".git" / "perfkit" / "collected").glob("*.json"):
        kept.write_text("[1, 2")  # damaged: collected again, never a side left out
    assert not ab.selects_nothing(repo, ["HEAD~1", "HEAD"], ["benches"], "extra")
    (repo / "benches" / "test_new.py").unlink()
    assert ab._tree_holds(repo, "HEAD", ["benches/test_loop.py::test_sum"])
    (repo / "benches" / "test_loop.py").write_text("def test_sum():\n    pass\n")
    assert not ab._tree_holds(repo, "HEAD", ["benches/test_loop.py::test_sum"])  # a node id names its file
    (repo / "benches" / "test_loop.py").write_text("def test_sum(:\n")  # a side that does not collect
    git(repo, "commit", "-qam", "broken")
    assert not ab.selects_nothing(repo, ["HEAD"], ["benches"], "nonexistent")  # the pairs say why


def _committed_trends() -> list[trends.Trend]:
    """The time trends of a committed baseline's runs (the four-H200 box's: a few dozen benchmarks)."""
    runs = baseline_runs.unpack(load.load(ROOT / "baselines" / "nvidia-h200-x4.json"))
    return trends.trends([load.parse(doc, f"run {i}") for i, doc in enumerate(runs.runs, 1)])


def test_the_committed_trends_charts_are_text_drawn_alike_every_time_each_run_a_point():
    """The dashboard's charts are inline SVG (no process pool, no PNG files): the same trend gives the same
    bytes, so a site is the same from any database, and each stored run is a point of its chart."""
    trends = _committed_trends()
    assert len(trends) >= 10
    for trend in trends:
        svg = history_svg(trend, TIME)
        assert svg == history_svg(trend, TIME) and svg.count("<circle") == len(trend.points)


def test_a_series_change_points_are_found_once():
    values = [1.0] * 10 + [1.5] * 10
    first = changepoints.change_points(values)
    hits = changepoints._change_points.cache_info().hits
    assert changepoints.change_points(values) == first and [p.index for p in first] == [10]
    assert changepoints._change_points.cache_info().hits == hits + 1


def test_a_record_is_read_once_per_entry():
    results = load.load(ROOT / "baselines" / "nvidia-h200-x4.json")
    entry = next(b for b in results.benchmarks if b.record(Scaling) is not None)
    assert entry.record(Scaling) is entry.record(Scaling)
    assert dataclasses.replace(entry, median=1.0)._records == {}  # a copy reads its own
