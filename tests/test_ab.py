"""perfkit ab and perfkit bisect: the paired test, the ABBA order, refusals, and runs of a small synthetic
git repository made here (a CPU loop whose size grows 10x at a known commit: on a shared 2-core runner the
median time of identical code moves up to 1.8x between fresh processes, so a 3x step is not told apart from
a neighbour in three pairs)."""
from __future__ import annotations

import copy
import itertools
import json
import math
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import pytest
import scipy.stats

from perfkit import bytecode, stopping
from perfkit.ab import bisect
from perfkit.ab import report as ab_report
from perfkit.ab import run as ab
from perfkit.cli import EXIT_REGRESSION, main
from perfkit.errors import BuildError, UsageError
from perfkit.resultfile import load
from perfkit.resultfile.model import ResultSet
from perfkit.store import baselines
from perfkit.verdict.judge import Verdict
from perfkit.verdict.paired_test import MAX_ROUNDS, PairedRow, verdicts
from tests.conftest import ROOT, all_slowed, slowed, typed
from tests.gitrepo import BENCH, EXTRA, commit, git, make_repo


def _pairs(shift: float, count: int, seed: int = 0) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        base = 1e-3 * math.exp(rng.gauss(0, 0.05))  # the machine drifts between rounds: both sides move
        out.append((base * math.exp(rng.gauss(0, 0.01)), base * math.exp(shift + rng.gauss(0, 0.01))))
    return out


T = TypeVar("T")
B = ("b", "time")
#: One CPU run of every family (quick profile): capacities, shares reached, FLOP counting without a gate.
FAMILIES = ROOT / "tests" / "data" / "cpu-quick-families.json"


def _timed(by_name: dict[str, T]) -> dict[tuple[str, str], T]:
    return {(name, "time"): value for name, value in by_name.items()}


def test_the_paired_test_decides_a_known_shift_and_leaves_identical_sides_unchanged():
    rows = verdicts(_timed({"slower": _pairs(math.log(1.2), 6), "faster": _pairs(math.log(0.8), 6, 1),
                            "same": [(1e-3 * (1 + i / 10),) * 2 for i in range(6)]}),
                    _timed({"slower": 0.05, "faster": 0.05, "same": 0.05}), 0.05, rounds=6, final=True)
    by = {r.benchmark: r for r in rows}
    assert by["slower"].verdict is Verdict.REGRESSED and by["slower"].change == pytest.approx(0.2, abs=0.02)
    assert by["faster"].verdict is Verdict.IMPROVED and by["slower"].settled and by["faster"].settled
    assert by["same"].verdict is Verdict.UNCHANGED and by["same"].change == 0 and by["same"].settled
    assert by["same"].mde is None and by["same"].note == "the two sides were equal in every pair"  # no spread
    assert all(r.pairs == 6 for r in rows) and by["slower"].mde and by["faster"].mde


def test_drift_between_rounds_cancels_in_the_pairs_and_too_few_pairs_stay_unknown():
    # the rounds drift by 5% SD, the pairs by 1%: a 10% change is decided, though each side alone is noisy
    decided = verdicts(_timed({"b": _pairs(math.log(1.1), 5, 2)}), {B: 0.05}, 0.05, rounds=5, final=True)[0]
    assert decided.verdict is Verdict.REGRESSED
    one = verdicts(_timed({"b": _pairs(math.log(1.1), 1)}), {B: 0.05}, 0.05, rounds=5)[0]
    assert one.verdict is Verdict.UNKNOWN and not one.settled and "needs 2 pairs" in one.note
    noisy = verdicts({B: [(1.0, 1.3), (1.0, 0.95)]}, {B: 0.05}, 0.05, rounds=5)[0]  # beyond 5%, 1 df
    assert noisy.verdict is Verdict.UNKNOWN and "more pairs settle it" in noisy.note and not noisy.settled
    # the last of two rounds: the look spends all of alpha; inside 5%, its interval is not: no evidence
    loose = verdicts({B: [(1.0, 1.04), (1.0, 0.99)]}, {B: 0.05}, 0.05, rounds=2, final=True)[0]
    assert loose.verdict is Verdict.UNKNOWN and not loose.settled
    shift, half = (math.log(1.04) + math.log(0.99)) / 2, (math.log(1.04) - math.log(0.99)) / 2  # mean, its SE
    reach = scipy.stats.t.ppf(1 - 0.05 / 2, 1) * half
    said = ("inside the minimum effect (-4.8% to +5.0%), not settled: its interval runs from {:+.1%} to "
            "{:+.1%}; at most about 17 rounds would settle it (--rounds 17), if its change and spread hold")
    assert loose.note == said.format(math.expm1(shift - reach), math.expm1(shift + reach))
    assert loose.note == said.format(-0.258, 0.388)
    settled = verdicts({B: [(1.0, 1.01), (1.0, 1.011)]}, {B: 0.05}, 0.05, rounds=2, final=True)[0]
    assert settled.verdict is Verdict.UNCHANGED and settled.settled
    assert re.fullmatch(r"its interval [-+][\d.]+% to [-+][\d.]+% lies inside the minimum effect "
                        r"\(-4\.8% to \+5\.0%\)", settled.note)


def test_one_figure_not_significant_is_said_in_the_singular():
    (row,) = verdicts({B: [(1.0, 1.5), (1.0, 0.9), (1.0, 1.4)]}, {B: 0.05}, 0.05, rounds=3, final=True)
    assert row.verdict is Verdict.UNKNOWN and "after correcting for 1 figure and the looks (p=" in row.note


def test_a_figure_higher_the_better_regresses_when_it_falls():
    largest = {("shrank", "largest_layers"): [(157.0, 141.0), (158.0, 141.0), (157.0, 140.0)],
               ("grew", "largest_layers"): [(141.0, 157.0), (141.0, 158.0), (140.0, 157.0)]}
    rows = {r.benchmark: r for r in verdicts(largest, dict.fromkeys(largest, 0.05), 0.05, set(largest),
                                             rounds=3, final=True)}
    assert rows["shrank"].verdict is Verdict.REGRESSED
    assert rows["shrank"].change == pytest.approx(math.exp(statistics.fmean(
        math.log(h / b) for b, h in largest[("shrank", "largest_layers")])) - 1)
    assert rows["grew"].verdict is Verdict.IMPROVED and rows["grew"].figure == "largest_layers"
    [time] = verdicts({B: [(1.0, 1.2), (1.0, 1.21), (1.0, 1.19)]}, {B: 0.05}, 0.05, rounds=3, final=True)
    assert time.verdict is Verdict.REGRESSED  # the same rise of a time


def test_the_order_is_abba_from_a_seeded_coin():
    plan = ab.orders(7, 6)
    assert plan == ab.orders(7, 6) and all(a == b[::-1] for a, b in itertools.pairwise(plan))
    assert {ab.orders(seed, 1)[0] for seed in range(20)} == {"AB", "BA"}


def _one_line_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one error line, the last on stderr (progress lines before it, such as where results go)."""
    assert main(list(argv)) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in lines if line.startswith("perfkit: error: ")]
    assert errors == lines[-1:] and all(line.startswith("perfkit: ") for line in lines), lines
    return errors[0]


def test_a_bad_ref_and_a_shallow_clone_are_one_sentence(tmp_path, monkeypatch, capsys):
    repo = make_repo(tmp_path / "repo")
    commit(repo, 100, "one")
    commit(repo, 200, "two")
    monkeypatch.chdir(repo)
    assert "'nope' names no commit" in _one_line_error(capsys, "ab", "nope")
    assert "'nope' names no commit" in _one_line_error(capsys, "bisect", "HEAD~1", "nope", "-k", "test_sum")
    assert "--rounds must be at least 2" in _one_line_error(capsys, "bisect", "HEAD~1", "HEAD", "-k", "x",
                                                             "--rounds", "1")
    assert "HEAD and main are the same commit" in _one_line_error(capsys, "bisect", "HEAD", "main", "-k", "x")
    head = git(repo, "rev-parse", "HEAD")
    with pytest.raises(UsageError, match=f"{head} was both good and bad$"):  # git said why on stdout
        ab.git(repo, "bisect", "start", "--no-checkout", head, head)
    assert "is a file" in _one_line_error(capsys, "ab", "HEAD", "--out", str(repo / "conftest.py"))
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "ab.json").write_text("{}")  # reused, it kept the earlier pair files beside the new ab.json
    assert (f"--out {earlier} already holds ab.json of an earlier run; give a new folder, or remove that one"
            in _one_line_error(capsys, "ab", "HEAD~1", "HEAD", "--out", str(earlier)))
    (earlier / "steps").mkdir()
    assert "already holds steps of an earlier run" in _one_line_error(
        capsys, "bisect", "HEAD~1", "HEAD", "-k", "test_sum", "--out", str(earlier))
    assert (earlier / "ab.json").read_text() == "{}"
    for path in (str(repo / "benches"), "../repo/benches"):
        assert f"--benches {path}: give bench paths relative to the repository's top folder" in \
            _one_line_error(capsys, "ab", "HEAD~1", "HEAD", "--benches", path)
        assert "relative to the repository's top folder" in _one_line_error(
            capsys, "bisect", "HEAD~1", "HEAD", "-k", "test_sum", "--benches", path)
    # a file neither side holds read "selects no benchmark in benches/nope.py on either side"
    assert ("--benches benches/nope.py: no such file or folder in HEAD~1 or HEAD; give a bench path" in
            _one_line_error(capsys, "ab", "HEAD~1", "HEAD", "--benches", "benches/nope.py"))
    assert "no such file or folder in HEAD~1 or the working tree" in _one_line_error(
        capsys, "ab", "HEAD~1", "--benches", "benches/nope.py::test_x")
    assert "--benches benches/nope.py: no such file or folder in HEAD~1 or HEAD" in _one_line_error(
        capsys, "bisect", "HEAD~1", "HEAD", "-k", "test_sum", "--benches", "benches/nope.py")
    assert not (repo / ".git" / "BISECT_START").exists()  # refused before git bisect started
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(tmp_path / "shallow")],
                   check=True)
    monkeypatch.chdir(tmp_path / "shallow")
    assert "is a shallow clone" in _one_line_error(capsys, "ab", "HEAD")
    monkeypatch.chdir(tmp_path)
    assert "not inside a git repository" in _one_line_error(capsys, "ab", "HEAD")


def test_rounds_past_the_bound_are_refused_before_any_checkout(tmp_path, monkeypatch, capsys):
    """A trillion rounds once built a plan of 22 GB and was killed by the out-of-memory killer."""
    repo = make_repo(tmp_path / "repo")
    commit(repo, 100, "one")
    commit(repo, 200, "two")
    monkeypatch.chdir(repo)
    for command in (["ab", "HEAD~1", "HEAD", "-k", "nonexistent"], ["bisect", "HEAD~1", "HEAD", "-k", "x"]):
        err = _one_line_error(capsys, *command, "--rounds", "1000000000000")
        assert f"--rounds must be at most {MAX_ROUNDS}" in err and "not 1000000000000" in err
    assert git(repo, "worktree", "list").count("\n") == 0


#: An A/B killed (SIGKILL: no cleanup runs) while its checkout exists.
KILLED = """import os, signal, sys
from pathlib import Path
from perfkit.ab import run as ab
with ab.worktree(Path(sys.argv[1]), sys.argv[2]):
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_checkouts_left_by_a_killed_ab_are_removed_by_the_next_and_a_live_ones_kept(tmp_path, monkeypatch,
                                                                                     capsys):
    repo = make_repo(tmp_path / "repo")
    first = commit(repo, 100, "one")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    env = {**os.environ, "TMPDIR": str(tmp),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", KILLED, str(repo), first], env=env, check=False)
        assert done.returncode == -signal.SIGKILL
    assert git(repo, "worktree", "list").count("\n") == 2 and len(list(tmp.iterdir())) == 2
    monkeypatch.chdir(repo)
    with ab.worktree(repo, first) as mine:  # a run beside it, still going
        assert "'nope' names no commit" in _one_line_error(capsys, "ab", "nope")
        assert git(repo, "worktree", "list").count("\n") == 1 and list(tmp.iterdir()) == [mine.parent]
    assert git(repo, "worktree", "list").count("\n") == 0 and list(tmp.iterdir()) == []


@pytest.mark.parametrize("head, removed", [("HEAD", "the checkouts"), (None, "the checkout")])
def test_a_run_stopped_while_checking_out_names_no_file_it_did_not_write(tmp_path, monkeypatch, head,
                                                                         removed):
    """The working tree as the head side makes one checkout, of the base; two refs make two."""
    repo = make_repo(tmp_path / "repo")
    commit(repo, 100, "one")
    commit(repo, 200, "two")

    def stopped(*_: object) -> None:
        raise stopping.Interrupted(signal.SIGTERM)

    monkeypatch.setattr(ab, "worktree", stopped)
    with pytest.raises(stopping.Stopped) as caught:
        ab.ab(repo, "HEAD~1", head, tmp_path / "out", rounds=2)
    out = tmp_path / "out"
    said = f"stopped before the first of 2 pairs, nothing written to {out} and {removed} removed"
    assert caught.value.kept == said
    out.mkdir()
    (out / "ab.json").write_text("{}")
    assert ab.kept(out, 0, 2) == f"0 finished pair(s) of 2 kept in {out} (ab.json)"


@pytest.mark.slow
def test_a_side_that_does_not_build_is_one_sentence(tmp_path, monkeypatch, capsys):
    repo = make_repo(tmp_path / "repo")
    commit(repo, 100, "fine")
    (repo / "benches" / "test_loop.py").write_text("def test_sum(benchmark:\n")
    git(repo, "commit", "-q", "-am", "broken")
    monkeypatch.chdir(repo)
    err = _one_line_error(capsys, "ab", "HEAD~1", "HEAD", "--out", str(tmp_path / "out"), "--rounds", "2")
    assert "head HEAD" in err and "does not build" in err
    assert git(repo, "worktree", "list").count("\n") == 0  # the checkouts were removed
    with pytest.raises(BuildError):
        ab.ab(repo, "HEAD", "HEAD~1", tmp_path / "out2", rounds=2)


@pytest.mark.slow
def test_a_side_whose_benchmark_fails_names_the_test_and_its_message_and_keeps_the_log(tmp_path, monkeypatch,
                                                                                       capsys):
    """It read "does not build: its benchmark run exited 1 ( | Wrote benchmark data in ...)": no test, no
    reason, no log kept."""
    repo = make_repo(tmp_path / "repo")
    commit(repo, 100, "fine")
    (repo / "benches" / "test_loop.py").write_text(
        "def test_sum(benchmark):\n    benchmark(sum, range(10))\n    assert False, 'the sum is wrong'\n")
    git(repo, "commit", "-q", "-am", "wrong")
    monkeypatch.chdir(repo)
    err = _one_line_error(capsys, "ab", "HEAD~1", "HEAD", "--out", str(tmp_path / "out"), "--rounds", "2")
    assert "head HEAD" in err and "fails its benchmarks" in err and "does not build" not in err
    assert "FAILED benches/test_loop.py::test_sum - AssertionError: the sum is wrong" in err
    log = Path(err.rsplit("its whole output: ", 1)[1].strip())
    assert log.parent == tmp_path / "out" and "assert False, 'the sum is wrong'" in log.read_text()


@pytest.mark.slow
def test_ab_of_the_working_tree_writes_nothing_there_and_reports_new_ones(tmp_path, monkeypatch, capsys):
    repo = make_repo(tmp_path / "repo")
    commit(repo, 100_000, "base")
    (repo / "benches" / "test_loop.py").write_text(BENCH.format(n=1_000_000) + EXTRA)  # uncommitted
    monkeypatch.chdir(repo)
    out = tmp_path / "out"
    assert main(["ab", "HEAD", "--rounds", "2", "--seed", "3", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "paired t-test" in text and "working tree (uncommitted changes)" in text
    assert re.search(r"^benches/test_loop.py::test_extra +new +head only$", text, re.MULTILINE), text
    report = ab_report.read(out / "ab.json")
    assert list(report.orders) == ab.orders(3, 2) and report.new == ("benches/test_loop.py::test_extra",)
    [row] = report.benchmarks
    assert row.pairs == 2 and row.change is not None and row.change > 2.0  # 10x the work
    assert len(load.load(out / "head.json").runs()["benches/test_loop.py::test_sum"]["time"]) == 2
    assert main(["compare", str(out / "base.json"), str(out / "head.json")]) == 0
    assert main(["report", str(out / "head.json"), "--baseline", str(out / "base.json"),
                 "--out", str(tmp_path / "report")]) == 0  # the A/B's table comes first, then the verdicts
    page = (tmp_path / "report" / "report.md").read_text()
    assert page.index("## A/B: base HEAD") < page.index("test_sum") < page.index("## Fingerprint")
    (out / "ab.json").write_text("{}")
    assert main(["report", str(out / "head.json"), "--out", str(tmp_path / "report")]) == 2
    assert "not an A/B result of `perfkit ab`" in capsys.readouterr().err
    assert git(repo, "status", "--porcelain", "--ignored") == "M benches/test_loop.py"  # its own edit only
    assert git(repo, "worktree", "list").count("\n") == 0
    only_head = ab.ab(repo, "HEAD", None, tmp_path / "out2", expr="test_extra", rounds=3)
    assert only_head.new == ("benches/test_loop.py::test_extra",) and only_head.benchmarks == ()
    assert len(only_head.orders) == 1  # nothing to pair: one round says what is new


@pytest.mark.slow
def test_a_run_stopped_midway_keeps_its_finished_pairs_and_removes_its_checkout(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo")
    commit(repo, 1000, "one")
    commit(repo, 1000, "two", extra=True)
    real, calls = ab.run_side, []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) > 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(ab, "run_side", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ab.ab(repo, "HEAD~1", "HEAD", tmp_path / "out", expr="test_sum", rounds=4, seed=0)
    report = ab_report.read(tmp_path / "out" / "ab.json")
    assert len(report.orders) == 1 and report.benchmarks[0].pairs == 1
    assert git(repo, "worktree", "list").count("\n") == 0  # only the repository itself


def test_a_settled_benchmark_is_not_run_again_while_a_noisy_one_takes_the_rounds(tmp_path, monkeypatch):
    """Every family of one stored CPU run, the same on both sides but one benchmark whose head moves +30%,
    -5%, +30%, ... (never decided): from the third pair on only that one runs, by its node id."""
    repo = make_repo(tmp_path / "repo")
    commit(repo, 1000, "one")
    raw = json.loads(FAMILIES.read_text())
    noisy = "benches/test_layers.py::test_layer[relu-forward]"
    calls: list[tuple[str, tuple[str, ...]]] = []

    def canned(side: ab.Side, benches: Sequence[str], expr: str | None, out: Path) -> ResultSet:
        calls.append((side.label, tuple(benches)))
        heads = sum(label == "head" for label, _ in calls)
        run = slowed(raw, noisy, (0.95, 1.3)[heads % 2]) if side.label == "head" else copy.deepcopy(raw)
        if any("::" in name for name in benches):
            run["benchmarks"] = [b for b in run["benchmarks"] if b["fullname"] in benches]
        return load.typed(run, f"{side.label} run {len(calls)}")

    monkeypatch.setattr(ab, "run_side", canned)
    said: list[str] = []
    report = ab.ab(repo, "HEAD", "HEAD", tmp_path / "out", rounds=4, seed=0, say=said.append)
    head = git(repo, "rev-parse", "HEAD")[:10]
    plan = (f"A/B: base HEAD ({head}) against head HEAD ({head}), up to 4 pairs of fresh processes, one of "
            "each side")
    same = "both sides are one commit: an A/A, which measures the noise alone (any flag is a false alarm)"
    assert said[:2] == [plan, same]  # said before the first pair, not after
    assert [benches for _, benches in calls[:2]] == [("benches",)] * 2
    assert len(calls[2][1]) > 20 and noisy in calls[2][1]  # the second pair: every benchmark both sides ran
    assert [benches for _, benches in calls[4:]] == [(noisy,)] * 4
    pairs = {(row.benchmark, row.figure): row.pairs for row in report.benchmarks}
    assert pairs[(noisy, "time")] == 4 and set(pairs.values()) == {2, 4}
    assert [(row.verdict, row.settled) for row in report.benchmarks
            if row.benchmark == noisy and row.figure == "time"] == [(Verdict.UNKNOWN, False)]
    assert len(load.load(tmp_path / "out" / "head.json").runs()[noisy]["time"]) == 4
    assert noisy in ab_report.render(report)


@pytest.mark.slow
def test_benchmark_names_are_node_ids_of_the_checkout_even_where_pytest_ini_sits_deeper(tmp_path):
    """A repository whose pytest.ini sits in perf/ (and a decoy benches/ at the top): the names one run
    gives are the node ids that the next pairs run alone, relative to the checkout, not to perf/."""
    repo = make_repo(tmp_path / "repo")
    (repo / "perf" / "benches").mkdir(parents=True)
    (repo / "perf" / "pytest.ini").write_text("[pytest]\n")
    (repo / "perf" / "conftest.py").write_text('pytest_plugins = ["perfkit.plugin"]\n')
    (repo / "perf" / "benches" / "test_loop.py").write_text(BENCH.format(n=1000) + EXTRA)
    (repo / "benches" / "test_loop.py").write_text(BENCH.format(n=10))
    side = ab.Side("base", "HEAD", "0" * 40, repo)
    first = ab.run_side(side, ["perf/benches"], None, tmp_path / "1.json")
    assert first is not None
    names = sorted(b.fullname for b in first.benchmarks)
    assert names == ["perf/benches/test_loop.py::test_extra", "perf/benches/test_loop.py::test_sum"]
    again = ab.run_side(side, names[1:], None, tmp_path / "2.json")
    assert again is not None and [b.fullname for b in again.benchmarks] == names[1:]


def _canned(pairs: dict[str, list[tuple[float, float]]]) -> ab_report.AbReport:
    """The report perfkit ab writes for these (base, head) times per pair."""
    side = ab.Side("base", "main", "0" * 40, Path("."))
    rows = verdicts(_timed(pairs), _timed(dict.fromkeys(pairs, 0.05)), 0.05, rounds=10)
    return ab._report(side, side, 1, ["AB", "BA"] * 3, 10, ["benches"], ab.DEFAULT_POLICY, rows, {},
                      {"base": [], "head": []}, [])


def test_the_ab_pairs_every_figure_the_nightly_judge_gates_on():
    """Stored runs: the H100's (the vector add on its kernel's own time, whose whole-program time moved 13%
    between two runs of the same code; a GEMM on its SM cycles; a layer on its time and peak memory) and one
    CPU run of every family (a capacity's largest stack, higher the better; FLOP counting not judged)."""
    h100 = load.load(ROOT / "baselines" / "nvidia-h100-80gb-hbm3-x1.json")
    figures: dict[str, set[str]] = {}
    for one in ab.gated(h100, h100, ab.DEFAULT_POLICY).pairs:
        figures.setdefault(one.key[0], set()).add(one.key[1])
    assert figures == {b.fullname: b.gating_figures() for b in h100.benchmarks if b.gating_figures()}
    assert figures["benches/test_vector_add.py::test_gpu_explicit[K100-grid]"] == {"kernel_s"}
    assert figures["benches/test_ceilings.py::test_matmul_flops[bf16]"] == {"sm_mcycles"}
    assert figures["benches/test_layers.py::test_layer[relu-forward]"] == {"time", "peak_allocated_mib"}
    cpu = ab.gated(load.load(FAMILIES), load.load(FAMILIES), ab.DEFAULT_POLICY)
    largest = {one.key: one for one in cpu.pairs}[
        ("benches/test_capacity.py::test_layer_stack_capacity[nocap-fc]", "largest_layers")]
    assert largest.higher_better and largest.values == (157.0, 157.0)
    assert [name.split("::")[1] for name in cpu.ungated] == [
        f"test_flop_count[{m}]" for m in ("alexnet", "googlenet", "resnet18", "resnet50", "vgg16", "vgg19")]
    assert not cpu.lone


def test_a_gating_figure_one_side_lacks_is_an_unknown_row_not_dropped():
    """HEAD gates the ReLU layer on a kernel time BASE never recorded: that figure is unknown (more pairs will
    not tell), the time both sides have is still paired."""
    raw = json.loads(FAMILIES.read_text())
    relu = next(b for b in raw["benchmarks"] if b["fullname"].endswith("test_layer[relu-forward]"))
    relu["extra_info"]["gate"] = "kernel_s"
    relu["extra_info"]["metrics"]["kernel_s"] = {"value": 1e-4, "unit": "s", "better": "lower"}
    head = load.typed(raw, "a head gating ReLU on its kernel")
    gated = ab.gated(load.load(FAMILIES), head, ab.DEFAULT_POLICY)
    [(key, row)] = gated.lone.items()
    assert key == (relu["fullname"], "kernel_s") and row.verdict is Verdict.UNKNOWN and row.settled
    assert row.note == "a gating figure only head has: not compared"
    assert (relu["fullname"], "time") in {one.key for one in gated.pairs}


def test_fail_exits_1_only_on_a_regression_and_markdown_gives_the_same_table(monkeypatch, capsys):
    def returns(report: ab_report.AbReport) -> None:
        monkeypatch.setattr(ab, "ab", lambda *args, **kwargs: report)

    returns(_canned({"slower": _pairs(math.log(1.2), 6), "same": _pairs(0.0, 6, 1)}))
    assert main(["ab", "main", "--fail", "--format", "markdown"]) == EXIT_REGRESSION
    captured = capsys.readouterr()
    assert captured.err == "perfkit: 1 benchmark(s) regressed: slower\n"
    assert captured.out.startswith("## A/B: base main (0000000000) against head main")
    assert "| slower | time | regressed | +18.7% | 5% | 6.0% | 6 |" in captured.out
    assert "| same | time | unchanged |" in captured.out
    [looks] = [line for line in captured.out.splitlines() if line.startswith("looks: alpha spent over the")]
    assert "O'Brien-Fleming" in looks and "each figure over its own pairs, out of a budget of 10 rounds" in \
        looks
    assert "interval at its look's level lies inside its minimum effect, else unknown" in looks
    assert looks.endswith("MDE: the change found with 80% power at that level")
    older = _canned({"same": _pairs(0.0, 6)}).to_json()  # an ab.json of perfkit before 2026-11-26
    del older["version"], older["not_judged"], older["benchmarks"][0]["figure"]
    del older["spending"], older["interval"]  # before 2026-12: the full alpha at every look
    old_table = ab_report.render(ab_report.AbReport.from_json(older), "markdown")
    assert "| same | time | unchanged |" in old_table
    assert "looks: the test taken at the full alpha after every pair (alpha not spent)" in old_table
    assert main(["ab", "main"]) == 0  # without --fail a regression is reported, not an error
    assert "regressed" in capsys.readouterr().out
    returns(_canned({"same": _pairs(0.0, 6), "faster": _pairs(math.log(0.8), 6, 1)}))
    assert main(["ab", "main", "--fail"]) == 0
    returns(_canned({"noisy": [(1.0, 1.3), (1.0, 0.95)]}))
    assert main(["ab", "main", "--fail"]) == 0 and "unknown" in capsys.readouterr().out  # never fails
    with pytest.raises(SystemExit) as refused:
        main(["ab", "main", "--touched", "--benches", "benches/test_loop.py"])
    assert refused.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


LOOP = "benches/test_vector_add.py::test_cpu_loop[K1]"


def _busy_ab(tmp_path: Path, other_cpus: float) -> tuple[ab_report.AbReport, Path]:
    """Three pairs of the CPU loop, HEAD 21.5% slower than BASE in each, every run recorded while other
    processes kept ``other_cpus`` of the 2 CPUs busy, looked at as perfkit ab looks at them and written
    where it writes them (ab.json, base.json, head.json)."""
    raw = json.loads(FAMILIES.read_text())
    raw["benchmarks"] = [b for b in raw["benchmarks"] if b["fullname"] == LOOP]
    raw["benchmarks"][0]["extra_info"]["host_load"] = {"other_cpus": other_cpus, "cpus": 2, "version": 1}
    kept: dict[str, list[ResultSet]] = {"base": [], "head": []}
    tally, policy = ab.Tally(), ab.DEFAULT_POLICY
    rows: list[PairedRow] = []
    for i, factor in enumerate((1.0, 1.01, 0.99)):  # the machine drifts between rounds: both sides move
        for minute, (label, slower) in enumerate((("base", 1.0), ("head", 1.215 + 0.003 * i))):
            when = f"2026-12-0{i + 1}T10:0{minute}:00+00:00"
            kept[label].append(typed(all_slowed(raw, factor * slower, when)))
        this = ab.gated(kept["base"][-1], kept["head"][-1], policy)
        tally, rows = ab.look(tally, this, i + 1, 3, policy.alpha)
    out = tmp_path / "ab"
    out.mkdir()
    for label, runs in kept.items():
        baselines.write_atomically(out / f"{label}.json", baselines.from_runs(runs))
    base, head = ab.Side("base", "HEAD~3", "0" * 40, tmp_path), ab.Side("head", "HEAD", "1" * 40, tmp_path)
    report = ab._report(base, head, 3, ab.orders(3, 3), 3, ["benches"], policy, rows, tally.pairs, kept,
                        sorted(tally.ungated))
    (out / "ab.json").write_text(json.dumps(report.to_json()))
    return report, out


def test_a_slowdown_paired_on_a_busy_host_is_unknown_in_the_judges_words_and_the_report_agrees(tmp_path,
                                                                                                monkeypatch):
    """Unchanged code A/B'd while other processes kept 1.6 of 2 CPUs busy read regressed +21.5% (3 pairs),
    where the nightly judge, reading the same base.json and head.json, said unknown; perfkit report printed
    both on one page. The A/B holds the slowdown back by the judge's rule, in its words."""
    report, out = _busy_ab(tmp_path, 1.6)
    [row] = report.benchmarks
    said = ("other processes kept 1.6 of its 2 CPUs busy while it ran: not judged; run it again on a "
            "quiet machine, or with PERFKIT_IGNORE_HOST_LOAD=1 where you accept that sharing")
    assert row.verdict is Verdict.UNKNOWN and row.note == said and row.p_value is None
    assert row.mde is None  # no slowdown of any size is flagged from these pairs, as the judge says
    assert row.change == pytest.approx(0.218, abs=0.002) and not row.settled
    monkeypatch.chdir(tmp_path)  # no baselines folder or kept runs lend their noise
    assert main(["report", str(out / "head.json"), "--baseline", str(out / "base.json"), "--out",
                 str(tmp_path / "report")]) == 0
    [judged] = [r for r in json.loads((tmp_path / "report" / "verdicts.json").read_text())["rows"]
                if r["benchmark"] == LOOP and r["gating"]]
    assert judged["verdict"] == "unknown" and judged["note"] == said and judged["mde"] is None
    page = (tmp_path / "report" / "report.md").read_text()
    cells = re.findall(r"^\| (?:[^|]*\| )*?(regressed|unknown|unchanged|improved) \|", page, re.MULTILINE)
    assert cells == ["unknown"] * 3  # the A/B's row, the judge's row to read, its family's table


def test_the_same_slowdown_paired_on_a_quiet_host_regresses(tmp_path):
    report, _ = _busy_ab(tmp_path, 0.1)
    [row] = report.benchmarks
    assert row.verdict is Verdict.REGRESSED and row.settled and row.note == ""


GATED = '''import os
import time
from pathlib import Path

SLOW_S = {slow_s}


def test_sum(benchmark):
    if Path(os.environ["PERFKIT_TEST_ARMED"]).exists():  # the runs are counted from when this exists
        runs = Path(os.environ["PERFKIT_TEST_RUNS"])  # one line per benchmark run: its process id
        with runs.open("a") as f:
            f.write(f"{{os.getpid()}}\\n")
        if len(runs.read_text().splitlines()) > 2:  # one pair done: the next run waits to be stopped
            time.sleep(300)
    benchmark.pedantic(lambda: time.sleep(SLOW_S) or sum(range(1000)), rounds=3, iterations=1)
'''


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("command", [["ab", "HEAD~1", "HEAD"], ["bisect", "HEAD~2", "HEAD", "-k", "sum"]],
                         ids=["ab", "bisect"])
@pytest.mark.slow
def test_sigterm_midway_keeps_the_finished_pair_and_leaves_no_checkout_process_or_bisect(tmp_path, command):
    """What a CI runner does to a job past its time limit: SIGTERM while the second pair's first benchmark
    run is under way (bisect: of the step's A/B, after BAD's own against GOOD). The finished pair stays, the
    run under way is stopped, the checkouts and their temporary folders are removed, git bisect is reset,
    and one sentence says so (exit 143, as a shell reports SIGTERM)."""
    repo = make_repo(tmp_path / "repo")
    for i in range(3):  # the last 10 ms a round slower: bisect's BAD regressed, so its steps begin
        bench = GATED.format(slow_s=0.01 if i == 2 else 0.0) + f"# version {i}\n"
        (repo / "benches" / "test_loop.py").write_text(bench)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"v{i}")
    head = git(repo, "rev-parse", "HEAD")
    runs, out, tmp = tmp_path / "runs", tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    armed = tmp_path if command[0] == "ab" else out / "steps" / bisect.HUNT
    env = {**os.environ, "PERFKIT_TEST_RUNS": str(runs), "PERFKIT_TEST_ARMED": str(armed), "TMPDIR": str(tmp),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    argv = [sys.executable, "-m", "perfkit.cli", *command, "--rounds", "5", "--out", str(out)]
    process = subprocess.Popen(argv, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.monotonic() + 240
    while not runs.exists() or len(runs.read_text().splitlines()) < 3:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("perfkit: stopped by SIGTERM: ") and "Traceback" not in stderr, stderr
    assert not _alive(int(runs.read_text().split()[-1]))  # the benchmark run under way was stopped too
    assert git(repo, "worktree", "list").count("\n") == 0 and list(tmp.iterdir()) == []
    hunted = out / "steps" / head / "ab.json"  # bisect's BAD against GOOD, finished before the steps
    [kept] = [out / "ab.json"] if command[0] == "ab" else set(out.glob("steps/*/ab.json")) - {hunted}
    report = ab_report.read(kept)
    assert len(report.orders) == 1 and report.benchmarks[0].pairs == 1
    assert len(load.load(kept.parent / "head.json").runs()["benches/test_loop.py::test_sum"]["time"]) == 1
    if command[0] == "ab":
        assert f"1 finished pair(s) of 5 kept in {out}" in last and "1 of 5 pairs run" in stdout
    else:
        assert "git bisect is reset" in last
        assert not (repo / ".git" / "BISECT_START").exists() and git(repo, "rev-parse", "HEAD") == head


@pytest.mark.slow
def test_bisect_finds_the_commit_that_made_the_loop_10x_longer(tmp_path, monkeypatch, capsys):
    repo = make_repo(tmp_path / "repo")
    commits = [commit(repo, 100_000 if i < 4 else 1_000_000, f"c{i}") for i in range(8)]
    monkeypatch.chdir(repo)
    start = time.monotonic()
    # eight rounds: a step settles in three pairs on a quiet runner, and a runner loaded three times over
    # (2026-11-28) left one unchanged step's interval at -36% to +319% after five, skipped beside the change
    assert main(["bisect", commits[0], commits[-1], "-k", "test_sum", "--rounds", "8",
                 "--out", str(tmp_path / "out")]) == 0
    took = time.monotonic() - start
    said = capsys.readouterr()
    text = said.out
    assert f"first bad commit: {commits[4]} c4" in text and "regressed" in text, text
    # its progress as it comes: the hunt's pairs, what git bisect has left, each step's pairs and answer
    assert f"perfkit: {commits[-1]} against {commits[0]}: pair 1/8" in said.err, said.err
    assert "perfkit: Bisecting: " in said.err and f"perfkit: {commits[4][:10]} c4: pair 1/8" in said.err
    assert f"perfkit: {commits[3][:10]} c3: good" in said.err, said.err
    assert f"perfkit: {commits[4][:10]} c4: bad (a hunted figure regressed)" in said.err, said.err
    # the hunt said, and every step judged at its minimum effect: half the 10x in logs, not the bench's 90%
    [[benchmark, figure, floor]] = json.loads((tmp_path / "out" / "steps" / bisect.HUNT).read_text())
    assert f"perfkit: hunting {benchmark} {figure}, +" in said.err and floor > 1.0, (floor, said.err)
    step = ab_report.read(tmp_path / "out" / "steps" / commits[3] / "ab.json")
    assert [(row.benchmark, row.minimum) for row in step.benchmarks] == [(benchmark, floor)]
    # the answer says what moved: the benchmark profiled once more at GOOD and at the first bad commit
    steps = tmp_path / "out" / "steps" / commits[4]
    assert "Why they moved" in text and (steps / "base-explain.json").exists(), text
    (why,) = ab_report.read(steps / "ab.json").explained
    assert why.benchmark == "benches/test_loop.py::test_sum" and why.reading in text, why.reading
    assert not (repo / ".git" / "BISECT_START").exists() and git(repo, "rev-parse", "HEAD") == commits[-1]
    assert took < 600, took


def test_a_checkout_leaves_no_bytecode_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Each side's pytest keeps its bytecode in perfkit.bytecode's folder at the checkout's path; a bisect
    makes a checkout per step, so each is forgotten with its checkout."""
    repo = make_repo(tmp_path / "repo")
    first = commit(repo, 1, "v1")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    with ab.worktree(repo, first) as checkout:
        kept = bytecode.cache_folder() / checkout.relative_to("/") / "__pycache__"
        kept.mkdir(parents=True)
        (kept / "test_bench.cpython-312.pyc").write_bytes(b"")
    assert not (bytecode.cache_folder() / checkout.relative_to("/")).exists()


def test_the_report_reads_back_as_written_and_refuses_a_newer_version(tmp_path):
    report = _canned({"slower": _pairs(math.log(1.2), 6), "same": _pairs(0.0, 6, 1)})
    path = tmp_path / "ab.json"
    path.write_text(json.dumps(report.to_json()))
    assert ab_report.read(path) == report and report.to_json()["version"] == ab_report.VERSION
    assert report.regressed() == ["slower"]
    path.write_text(json.dumps({**report.to_json(), "version": ab_report.VERSION + 1}))
    with pytest.raises(UsageError, match="newer than this perfkit reads"):
        ab_report.read(path)
    path.write_text(json.dumps({"orders": []}))
    with pytest.raises(UsageError, match="not an A/B result of `perfkit ab`"):
        ab_report.read(path)
