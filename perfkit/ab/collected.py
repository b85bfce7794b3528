"""The benchmarks a checkout collects and the names ``-k`` matches them by, kept per commit and machine.

``perfkit ab`` refuses a ``-k`` that selects nothing before it runs anything. Telling that takes a pytest
collection of each side: seconds, nearly all of them importing torch. What a collection found is kept in
the repository's git folder, keyed by every file that decides it (the bench paths, conftest files, pytest's
configuration, perfkit itself, as ``git ls-tree`` names them) and by what the machine adds (this boot, the
visible GPUs, the Python and pytest): asking again, with any ``-k``, reads that file and matches with
pytest's own expression parser and keyword matcher, the code ``pytest -k`` runs.

The collection runs pytest with a plugin given as code (:data:`DUMP`), not as a perfkit module: a side's
checkout imports its own perfkit, which an older commit may not have this module in.
"""
from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from perfkit.errors import UsageError

#: What decides which benchmarks a checkout collects, besides its bench paths: conftest files, pytest's
#: configuration and perfkit itself (its plugin, the workloads the benches parametrize over).
CONFIG_FILES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "setup.cfg",
                "tox.ini")
#: The environment a collection reads: pytest's added options (a profile), perfkit's own variables (a data
#: root turns synthetic ids into CIFAR-10's).
ENVIRONMENT = ("PYTEST_ADDOPTS", "CUDA_VISIBLE_DEVICES")
ENVIRONMENT_PREFIX = "PERFKIT_"
#: The same as git pathspecs, for ``git diff`` and ``git ls-files``.
COLLECTION_PATHS = (":(glob)**/conftest.py", *CONFIG_FILES, "perfkit")
#: Where the collection's plugin writes what it found.
OUT_ENV = "PERFKIT_COLLECTED_OUT"
#: ``python -c`` code: pytest with a plugin that writes each collected item's node id and ``-k`` names
#: (before any ``-k`` or ``-m`` deselects it) to the file named by :data:`OUT_ENV`.
DUMP = f"""
import json, os, sys
import pytest
from _pytest.mark import KeywordMatcher

class Dump:
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items):
        found = [[item.nodeid, sorted(KeywordMatcher.from_item(item)._names)] for item in items]
        with open(os.environ[{OUT_ENV!r}], "w") as out:
            json.dump(found, out)

sys.exit(pytest.main(sys.argv[1:], plugins=[Dump()]))
"""

Collected = list[tuple[str, list[str]]]


def decides_collection(path: str, benches: Sequence[str]) -> bool:
    """Whether the file at ``path`` (relative to the checkout's top) can change what ``benches`` collect."""
    name = path.rsplit("/", 1)[-1]
    return (name == "conftest.py" or path in CONFIG_FILES or path.startswith("perfkit/")
            or any(path == bench or path.startswith(bench.rstrip("/") + "/") for bench in benches))


def key(repo: Path, commit: str, benches: Sequence[str]) -> str:
    """The cache key of ``benches``' collection at ``commit`` on this machine."""
    listing = subprocess.run(["git", "ls-tree", "-r", "--full-tree", commit], cwd=repo, capture_output=True,
                             text=True, check=True).stdout
    paths = [bench.split("::")[0] for bench in benches]
    files = [line for line in listing.splitlines() if decides_collection(line.split("\t", 1)[-1], paths)]
    digest = hashlib.sha256()
    for part in (*files, *benches, *_machine(), DUMP):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:32]


def _machine() -> tuple[str, ...]:
    """What the machine adds to a collection: the profile and GPU-sized parameters follow its devices, which
    do not change within one boot of it; the environment a collection reads; the interpreter, pytest, and the
    perfkit installed (a checkout without its own perfkit folder collects with that one)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    try:
        installed = metadata.version("perfkit")
    except metadata.PackageNotFoundError:  # a source tree on the path, not installed
        installed = ""
    variables = sorted(f"{name}={value}" for name, value in os.environ.items()
                       if name in ENVIRONMENT or name.startswith(ENVIRONMENT_PREFIX))
    return (socket.gethostname(), boot, *variables, sys.executable, sys.version, metadata.version("pytest"),
            installed, str(Path(__file__).parent))


def cache_file(repo: Path, cache_key: str) -> Path:
    """Where the collection of ``cache_key`` is kept: the repository's git folder, shared by its worktrees."""
    common = subprocess.run(["git", "rev-parse", "--git-common-dir"], cwd=repo, capture_output=True,
                            text=True, check=True).stdout.strip()
    return (repo / common).resolve() / "perfkit" / "collected" / f"{cache_key}.json"


def read(path: Path) -> Collected | None:
    """The collection kept at ``path``; None where none is (or it cannot be read: it is made again)."""
    try:
        raw: Any = json.loads(path.read_text())
        return [(str(nodeid), [str(name) for name in names]) for nodeid, names in raw]
    except (OSError, ValueError, TypeError):
        return None


def keep(path: Path, found: Collected) -> None:
    """Keep ``found`` at ``path``, whole or not at all (an A/B beside this one may read it meanwhile); where
    it cannot be written (a read-only git folder) it is collected again next time."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(found))
        partial.replace(path)
    except OSError:
        partial.unlink(missing_ok=True)


def command(benches: Sequence[str], root: Path) -> list[str]:
    """The pytest collection at checkout ``root`` (with its own perfkit plugin, every benchmark weekly or
    not) whose plugin writes what it found to the file named in the environment's :data:`OUT_ENV`."""
    return [sys.executable, "-c", DUMP, *benches, "--collect-only", "-q", "-p", "perfkit.plugin", "-p",
            "no:cacheprovider", f"--rootdir={root}", "--perfkit-baseline=none", "-m", "weekly or not weekly"]


def selects_any(collected: Collected, expr: str) -> bool:
    """Whether ``-k expr`` selects any of ``collected``, told by pytest's own parser and matcher; True where
    this pytest's private API differs (the pairs tell then, as they did before this check)."""
    try:
        from _pytest.mark import KeywordMatcher
        from _pytest.mark.expression import Expression
    except ImportError:
        return True
    try:
        compiled = Expression.compile(expr)
        return any(compiled.evaluate(KeywordMatcher(frozenset(names))) for _, names in collected)
    except Exception as exc:  # noqa: BLE001 - pytest 9's SyntaxError, 8's ParseError, its UsageError
        said = getattr(exc, "msg", None) or getattr(exc, "message", None) or str(exc)
        raise UsageError(f"-k {expr!r} is not an expression pytest reads: {said}") from None
