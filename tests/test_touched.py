"""Which bench files a change touches (perfkit ab --touched, the pull-request workflow's selection)."""
from __future__ import annotations

import signal

import pytest

from perfkit import stopping
from perfkit.ab import run
from perfkit.ab.run import changed_files
from perfkit.ab.touched import benches_touched
from tests.gitrepo import git, make_repo


@pytest.mark.parametrize("changed, benches", [
    (["benches/test_layers.py"], ["benches/test_layers.py"]),
    (["benches/test_ppp.py", "README.md", "benches/test_flops.py"], ["benches/test_flops.py",
                                                                    "benches/test_ppp.py"]),
    (["benches/test_ppp.py", "perfkit/workloads/layers.py"], ["benches"]),  # core code: every family
    (["perfkit/measure/timing.py"], ["benches"]),
    (["benches/conftest.py"], ["benches"]),  # under benches/ but no family's own file
    (["benches/helpers/test_util.py"], ["benches"]),
    (["conftest.py"], ["benches"]),
    (["pytest.ini"], ["benches"]),
    (["pyproject.toml"], ["benches"]),
    (["README.md", "tests/test_ab.py", "baselines/nvidia-h200-x1.json", ".github/workflows/pr-gpu.yml",
      ".ci/run"], []),  # no benchmark runs these
    (["tests/benches/test_x.py", "docs/perfkit/x.md"], []),  # look-alikes elsewhere
    ([], []),
])
def test_changed_files_map_to_their_families_or_to_all_or_to_none(changed, benches):
    assert benches_touched(changed) == benches


def test_changed_files_are_those_between_the_two_sides_a_rename_under_both_names(tmp_path):
    repo = make_repo(tmp_path / "repo")
    (repo / "benches" / "test_a.py").write_text("A = 1\n")
    (repo / "README.md").write_text("readme\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "mv", "benches/test_a.py", "benches/test_b.py")
    git(repo, "commit", "-q", "-m", "rename")
    assert sorted(changed_files(repo, base, git(repo, "rev-parse", "HEAD"))) == ["benches/test_a.py",
                                                                                "benches/test_b.py"]
    (repo / "README.md").write_text("edited\n")  # the working tree: edits and untracked files count
    (repo / "benches" / "test_new.py").write_text("")
    assert changed_files(repo, "HEAD", None) == ["README.md", "benches/test_new.py"]
    assert benches_touched(changed_files(repo, "HEAD", None)) == ["benches/test_new.py"]


def test_a_change_that_touches_no_bench_makes_no_checkout(tmp_path, monkeypatch):
    """Nothing runs, so nothing is checked out: a documentation-only pull request's A/B wrote its empty
    report after making (and removing) a checkout of the base, seconds of git on a large repository."""
    repo = make_repo(tmp_path / "repo")
    (repo / "README.md").write_text("readme\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    (repo / "README.md").write_text("edited\n")
    git(repo, "commit", "-q", "-am", "docs only")

    def no_checkout(*_: object) -> None:
        raise AssertionError("a checkout was made for a change that touches no bench")

    monkeypatch.setattr(run, "worktree", no_checkout)
    said: list[str] = []
    report = run.ab(repo, "HEAD~1", "HEAD", tmp_path / "out", touched=True, say=said.append)
    assert not report.benches
    assert "the change touches no bench file" in said
    assert (tmp_path / "out" / "ab.json").is_file()  # the empty report the PR summary reads


def test_an_a_b_of_a_change_that_touches_no_bench_stopped_speaks_of_no_checkout(tmp_path, monkeypatch):
    """None was made, so a stop says none was removed."""
    repo = make_repo(tmp_path / "repo")
    (repo / "README.md").write_text("readme\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")

    def stopped(*_: object) -> None:
        raise stopping.Interrupted(signal.SIGTERM)

    monkeypatch.setattr(run.baselines, "write_json_atomically", stopped)
    with pytest.raises(stopping.Stopped) as caught:
        run.ab(repo, "HEAD", "HEAD", tmp_path / "out", touched=True, say=lambda _: None)
    assert caught.value.kept == f"stopped before the first of 10 pairs, nothing written to {tmp_path / 'out'}"
