"""The architecture's rules, checked: the reading side (resultfile/, verdict/, store/, render/) is pure data,
measure/ imports no workload, `perfkit compare` starts fast, one baselines folder.

Imports are checked in fresh interpreters: this test process has long imported torch.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
import time
from pathlib import Path

from perfkit.store.baselines import BaselineStore
from tests.conftest import DATA, ROOT

#: The reading side, which reads and judges result files on any machine, one package per job.
READING = ("perfkit.resultfile", "perfkit.verdict", "perfkit.store", "perfkit.render")

#: What the reading side must never load: the measuring side and its heavy dependencies.
FORBIDDEN = ("torch", "numba", "pynvml", "perfkit.measure", "perfkit.workloads", "perfkit.parallel")

_FORBIDDEN_LOADED = f"""
import sys
def forbidden_loaded():
    return sorted(m for m in sys.modules if any(m == f or m.startswith(f + ".") for f in {FORBIDDEN!r}))
"""

IMPORT_ALL_READING = _FORBIDDEN_LOADED + f"""
import importlib, json, pkgutil
names = []
for package in map(importlib.import_module, {READING!r}):
    names += sorted(f"{{package.__name__}}.{{m.name}}" for m in pkgutil.iter_modules(package.__path__))
for name in names:
    importlib.import_module(name)
print(json.dumps({{"modules": names, "forbidden": forbidden_loaded()}}))
"""

COMPARE_THEN_LIST = _FORBIDDEN_LOADED + """
import contextlib, io, json
from perfkit.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "forbidden": forbidden_loaded()}))
"""

START_UP_LIMIT_S = 1.0


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def _roots(modules: list[str]) -> list[str]:
    """The forbidden packages that were loaded, without their hundreds of submodules."""
    return sorted({next(f for f in FORBIDDEN if m == f or m.startswith(f + ".")) for m in modules})


def test_the_reading_side_imports_nothing_of_torch_numba_nvml_or_the_measuring_side():
    done = _python("-c", IMPORT_ALL_READING)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    one_each = {"perfkit.resultfile.load", "perfkit.verdict.judge", "perfkit.store.database",
                "perfkit.render.report"}
    assert one_each <= set(seen["modules"])
    assert _roots(seen["forbidden"]) == [], (
        f"importing {seen['modules']} loaded {_roots(seen['forbidden'])}: "
        f"{[m for m in seen['forbidden'] if m.startswith('perfkit.')]}")


def _imported(path: Path) -> set[str]:
    """Every module ``path`` imports, at its top or inside a function (``from a import b`` as ``a.b`` too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return names


def test_the_measuring_side_imports_no_workload():
    """How (measure/) is given what (workloads/), never reaches up for it: read from the source, as the
    imports this rule replaced ran inside functions, where importing the modules would not see them."""
    reaching = {}
    for path in sorted((ROOT / "perfkit" / "measure").rglob("*.py")):
        if found := sorted(n for n in _imported(path) if f"{n}.".startswith("perfkit.workloads.")):
            reaching[str(path.relative_to(ROOT))] = found
    assert reaching == {}


def test_perfkit_compare_of_two_files_does_not_import_torch():
    quick = str(DATA / "cpu-quick.json")
    done = _python("-c", COMPARE_THEN_LIST, "compare", quick, quick)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["code"] == 0
    assert _roots(seen["forbidden"]) == [], (
        f"perfkit compare loaded {_roots(seen['forbidden'])}: "
        f"{[m for m in seen['forbidden'] if m.startswith('perfkit.')]}")


def test_perfkit_compare_finishes_within_a_second_of_process_start():
    quick = str(DATA / "cpu-quick.json")
    walls = []
    for _ in range(3):  # the best of three: a busy CI machine should not fail a start-up check
        start = time.perf_counter()
        done = _python("-m", "perfkit.cli", "compare", quick, quick)
        walls.append(time.perf_counter() - start)
        assert done.returncode == 0, done.stderr
        if walls[-1] < START_UP_LIMIT_S:
            break
    assert min(walls) < START_UP_LIMIT_S, f"perfkit compare took {', '.join(f'{w:.2f}' for w in walls)} s"


def test_the_baselines_folder_is_found_from_a_subfolder_of_the_project(tmp_path):
    project = tmp_path / "project"
    deep = project / "benches" / "family" / "deeper"
    deep.mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\n")
    assert BaselineStore.find(deep).directory == project.resolve() / "baselines"
    assert BaselineStore.find(project).directory == project.resolve() / "baselines"


def test_an_existing_baselines_folder_marks_the_root_and_the_nearest_root_wins(tmp_path):
    outer = tmp_path / "outer"
    inner = outer / "vendored" / "inner"
    (outer / "baselines").mkdir(parents=True)
    (inner / "sub").mkdir(parents=True)
    assert BaselineStore.find(outer / "vendored").directory == outer.resolve() / "baselines"
    (inner / "pyproject.toml").write_text("[project]\nname = 'inner'\n")
    assert BaselineStore.find(inner / "sub").directory == inner.resolve() / "baselines"


def test_the_plugin_and_the_cli_find_this_repositorys_baselines():
    assert BaselineStore.find(ROOT / "perfkit" / "store").directory == ROOT.resolve() / "baselines"
