"""``perfkit ab --explain`` and bisect's answer on a small git repository made here: a torch workload whose
head adds thirty multiplies, profiled once more on each side after the pairs and named by its operators (on
a CPU the explanation compares aten operators; on a GPU, kernels: tests/test_explain_gpu_runs.py)."""
from __future__ import annotations

import json

import pytest

from perfkit.ab import report as ab_report
from perfkit.ab import run as ab
from perfkit.cli import main
from tests.gitrepo import git, make_repo

TORCH_BENCH = '''import torch

torch.set_num_threads(1)  # two threads wait on each other's core while a neighbour holds one: 31x read 1.2x
X = torch.ones(1_000_000)


def test_ops(benchmark, perfkit_metrics):
    perfkit_metrics.tolerance(0.9)  # a shared 2-core runner: only the 30x step is worth a verdict here

    def work():
        X.add_(1.0)
{extra}
    benchmark.pedantic(work, rounds=9, iterations=1, warmup_rounds=1)
'''
MULTIPLIES = "        for _ in range(30):\n            X.mul_(1.0)\n"


def _commit(repo, extra: str, message: str) -> str:
    (repo / "benches" / "test_ops.py").write_text(TORCH_BENCH.format(extra=extra))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.mark.slow
def test_ab_explain_names_the_operator_the_head_added_and_keeps_it_in_ab_json(tmp_path, monkeypatch, capsys):
    repo = make_repo(tmp_path / "repo")
    base = _commit(repo, "", "base")
    head = _commit(repo, MULTIPLIES, "thirty multiplies")
    monkeypatch.chdir(repo)
    out = tmp_path / "out"
    assert main(["ab", base, head, "--rounds", "3", "--seed", "1", "--explain", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    report = ab_report.read(out / "ab.json")
    assert report.flagged() == [("benches/test_ops.py::test_ops", "regressed")]
    (why,) = report.explained
    assert why.explanation is not None and "aten::mul_" in why.reading, why.reading
    assert "Why they moved" in text and "aten::mul_" in text
    for side in ("base", "head"):  # the profiled runs are kept beside the pairs, never judged among them
        profiled = json.loads((out / f"{side}-explain.json").read_text())["benchmarks"]
        assert [b["name"] for b in profiled] == ["test_ops"] and "kernel_summary" in profiled[0]["extra_info"]
    assert len(report.orders) <= 3 and git(repo, "worktree", "list").count("\n") == 0


def test_an_ab_that_flags_nothing_profiles_nothing_and_a_side_that_cannot_profile_says_so(tmp_path,
                                                                                          monkeypatch):
    from perfkit.ab import explain
    from perfkit.errors import BuildError
    from tests.test_ab import _canned

    side = ab.Side("base", "a", "0" * 40, tmp_path / "nowhere")
    calm = _canned({"benches/test_x.py::test_x": [(1.0, 1.0)] * 6})
    assert calm.flagged() == [] and explain.explained(calm, side, side, tmp_path) is calm
    assert not list(tmp_path.iterdir())  # nothing run, nothing written

    slower = _canned({"benches/test_x.py::test_x": [(1.0, 2.0), (1.1, 2.1), (0.9, 1.9)] * 2})
    assert slower.flagged() == [("benches/test_x.py::test_x", "regressed")]

    def old_checkout(side, *_):  # a checkout older than --perfkit-explain: pytest refuses the option
        raise BuildError(f"{side.label} a (0000000000) does not build: its benchmark run exited 4")

    monkeypatch.setattr(explain, "run_side", old_checkout)
    (why,) = explain.explained(slower, side, side, tmp_path).explained
    assert why.explanation is None and why.reading.startswith("the base side could not be profiled")
    assert ab_report.read(tmp_path / "ab.json").explained == (why,)  # kept, and the verdicts stand
