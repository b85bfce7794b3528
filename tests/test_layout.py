"""The architecture's rules, checked: the reading side (resultfile/, verdict/, store/, render/) loads nothing
of the measuring side and each of its packages imports only what its job allows, measure/ imports no workload,
the layout page names every module, `perfkit compare` starts fast, one baselines folder.

Imports are checked in fresh interpreters (this test process has long imported torch) and in the source (an
import inside a function runs only when it is called, where importing the modules would not see it).
"""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from perfkit.store.baselines import BaselineStore
from tests.conftest import DATA, ROOT

#: The reading side, which reads and judges result files on any machine, one package per job.
READING = ("perfkit.resultfile", "perfkit.verdict", "perfkit.store", "perfkit.render")

#: What the reading side must never load: the measuring side and its heavy dependencies.
FORBIDDEN = ("torch", "numba", "pynvml", "perfkit.measure", "perfkit.workloads", "perfkit.parallel")

#: What each package of the reading side must not import either: the result file stands below judging it,
#: the judging below keeping and showing runs (floats in, verdicts out, no I/O); SQLAlchemy only where the
#: database is.
NOT_IMPORTED = {
    "perfkit.resultfile": ("perfkit.verdict", "perfkit.store", "perfkit.render", "perfkit.ab"),
    "perfkit.verdict": ("perfkit.store", "perfkit.render", "sqlalchemy", "perfkit.ab"),
    "perfkit.store": ("perfkit.ab",),
    "perfkit.render": ("sqlalchemy", "perfkit.ab"),
}

_FORBIDDEN_LOADED = f"""
import sys
def forbidden_loaded():
    return sorted(m for m in sys.modules if any(m == f or m.startswith(f + ".") for f in {FORBIDDEN!r}))
"""

IMPORT_PACKAGE = """
import importlib, json, pkgutil, sys
package = importlib.import_module(sys.argv[1])
names = sorted(f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__))
for name in names:
    importlib.import_module(name)
print(json.dumps({"modules": names, "loaded": sorted(sys.modules)}))
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


def _under(name: str, roots: Sequence[str]) -> bool:
    return any(name == root or name.startswith(root + ".") for root in roots)


def _roots(modules: list[str], roots: Sequence[str] = FORBIDDEN) -> list[str]:
    """The ``roots`` that were loaded, without their hundreds of submodules."""
    return sorted({next(r for r in roots if _under(m, [r])) for m in modules if _under(m, roots)})


@pytest.mark.parametrize("package", READING)
def test_the_reading_side_loads_nothing_its_package_may_not_import(package):
    """Every module of ``package`` imported in a fresh interpreter, with what it imports at its top."""
    banned = (*FORBIDDEN, *NOT_IMPORTED[package])
    done = _python("-c", IMPORT_PACKAGE, package)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert len(seen["modules"]) >= 4
    loaded = [m for m in seen["loaded"] if _under(m, banned)]
    assert _roots(loaded, banned) == [], (
        f"importing {seen['modules']} loaded {_roots(loaded, banned)}: "
        f"{[m for m in loaded if m.startswith('perfkit.')]}")


def _imported(path: Path) -> set[str]:
    """Every module ``path`` imports, at its top or inside a function (``from a import b`` as ``a.b`` too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return names


def _reaching(package: str, banned: Sequence[str]) -> dict[str, list[str]]:
    """Per source file of ``package``, the modules under ``banned`` it imports anywhere in its source."""
    reaching = {}
    for path in sorted((ROOT / package.replace(".", "/")).rglob("*.py")):
        if found := sorted(n for n in _imported(path) if _under(n, banned)):
            reaching[str(path.relative_to(ROOT))] = found
    return reaching


@pytest.mark.parametrize("package", READING)
def test_each_package_of_the_reading_side_imports_only_what_its_job_allows(package):
    """Read from the source, so that an import inside a function (SQLAlchemy where a database is named, the
    history's files where they are read) counts as one at the top does."""
    assert _reaching(package, (*FORBIDDEN, *NOT_IMPORTED[package])) == {}


def test_the_ab_package_stands_above_the_reading_side_and_loads_no_measuring_side():
    """perfkit ab and bisect run the benchmarks in the checkouts' own processes and judge their files: their
    process loads no torch, numba or NVML, in a fresh interpreter and in the source; the reading side never
    reaches up to them (NOT_IMPORTED)."""
    done = _python("-c", IMPORT_PACKAGE, "perfkit.ab")
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert {"perfkit.ab.run", "perfkit.ab.report", "perfkit.ab.bisect"} <= set(seen["modules"])
    assert _roots([m for m in seen["loaded"] if _under(m, FORBIDDEN)]) == []
    assert _reaching("perfkit.ab", FORBIDDEN) == {}


def test_the_measuring_side_imports_no_workload():
    """How (measure/) is given what (workloads/), never reaches up for it: read from the source, as the
    imports this rule replaced ran inside functions, where importing the modules would not see them."""
    assert _reaching("perfkit.measure", ("perfkit.workloads",)) == {}


def _layout_entries() -> dict[str, str]:
    """Each entry of perfkit/ in the layout page's tree (``plugin.py``, ``verdict/``) and its text."""
    tree = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8").split("```")[1]
    inside = tree.split("\nperfkit/\n")[1]
    entries: dict[str, str] = {}
    for line in inside.splitlines():
        if not line.startswith(" "):
            break
        if found := re.match(r"  (\S+)\s+(.*)", line):
            name = found[1]
            entries[name] = found[2]
        else:
            entries[name] += " " + line.strip()
    return entries


def test_the_layout_page_names_what_perfkit_holds_and_every_module_of_the_reading_side():
    entries = _layout_entries()
    assert [e for e in entries if not (ROOT / "perfkit" / e).exists()] == []
    unnamed = {package: [m.stem for m in sorted((ROOT / package.replace(".", "/")).glob("[!_]*.py"))
                         if not re.search(rf"\b{m.stem}\b", entries.get(package.split(".")[1] + "/", ""))]
               for package in READING}
    assert unnamed == {package: [] for package in READING}


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


#: A module past this many lines holds more than one job; a function past that many says why in its docstring.
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 600, 60
LONG_REASON = "Long on purpose:"


def test_no_module_over_600_lines_and_no_long_function_without_its_reason():
    over, long = [], []
    for path in sorted((ROOT / "perfkit").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(ROOT))
        if text.count("\n") > MAX_MODULE_LINES:
            over.append(f"{where} ({text.count(chr(10))} lines)")
        for node in ast.walk(ast.parse(text)):
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None
                    and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
                    and LONG_REASON not in (ast.get_docstring(node) or "")):
                long.append(f"{where}:{node.lineno} {node.name}")
    assert over == [], f"split by job: {over}"
    assert long == [], f"split, or say why in the docstring ({LONG_REASON!r}): {long}"
