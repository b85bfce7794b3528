"""Small git repositories made in a test's folder, whose benchmarks run under this checkout's perfkit:
perfkit ab, perfkit bisect and the pull-request workflow's steps run on them."""
from __future__ import annotations

import subprocess
from pathlib import Path

BENCH = '''N = {n}


def test_sum(benchmark, perfkit_metrics):
    perfkit_metrics.tolerance(0.9)  # a shared 2-core runner: only the 10x step is worth a verdict here
    benchmark.pedantic(sum, args=(range(N),), rounds=9, iterations=1, warmup_rounds=1)
'''
EXTRA = '''

def test_extra(benchmark):
    benchmark.pedantic(sum, args=(range(1000),), rounds=3, iterations=1)
'''


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


def commit(repo: Path, n: int, message: str, extra: bool = False) -> str:
    """Commit benches/test_loop.py summing ``n`` numbers (``extra``: with a second, fixed benchmark)."""
    (repo / "benches" / "test_loop.py").write_text(BENCH.format(n=n) + (EXTRA if extra else ""))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def make_repo(path: Path) -> Path:
    """An empty repository at ``path`` whose benches/ load the perfkit plugin."""
    path.mkdir()
    (path / "benches").mkdir()
    (path / "conftest.py").write_text('pytest_plugins = ["perfkit.plugin"]\n')
    git(path, "init", "-q", "-b", "main")
    return path
