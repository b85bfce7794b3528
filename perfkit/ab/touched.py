"""Which bench files a change touches (``perfkit ab --touched``; the pull-request workflow A/Bs only those,
since each family runs twice a round on the GPU runner).

A family is one file ``benches/test_<family>.py``: a change to it touches that family. A change to what
every family runs through (perfkit/, a file under benches/ that is no family's, the pytest and package
configuration) can move any benchmark, so it touches them all. Anything else (the README, tests/,
baselines/, CI files) touches none: no benchmark runs it.
"""
from __future__ import annotations

from collections.abc import Iterable

BENCHES = "benches"
#: Top-level files and folders (a trailing "/") every benchmark runs through.
SHARED = ("perfkit/", f"{BENCHES}/", "conftest.py", "pytest.ini", "pyproject.toml")


def _is_family(path: str) -> bool:
    folder, _, name = path.rpartition("/")
    return folder == BENCHES and name.startswith("test_") and name.endswith(".py")


def _is_shared(path: str) -> bool:
    return any(path.startswith(shared) if shared.endswith("/") else path == shared for shared in SHARED)


def benches_touched(changed: Iterable[str]) -> list[str]:
    """The bench paths to run for ``changed`` (paths relative to the repository's top, "/" between
    folders): ``[BENCHES]`` when a shared file changed, else the family files that changed, sorted."""
    families = set()
    for path in changed:
        if _is_family(path):
            families.add(path)
        elif _is_shared(path):
            return [BENCHES]
    return sorted(families)
