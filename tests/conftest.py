"""Stored result files for the comparison and baseline tests, and helpers to derive variants of them."""
from __future__ import annotations

import copy
import functools
import importlib.util
import json
import os
from datetime import date, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

# Loaded before any pytester run: an inline run unloads the modules first imported inside it, and importing
# numpy's C extensions again then fails ("cannot load module more than once per process").
import scipy.stats  # noqa: F401

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def _verdicts_ignore_the_host_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin tests judge real timings on whatever machine runs them, busy or not; the busy rule has
    tests of its own (test_host_load, test_compare)."""
    monkeypatch.setenv("PERFKIT_IGNORE_HOST_LOAD", "1")

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parent.parent


@pytest.fixture
def cpu_results() -> dict[str, Any]:
    """A real quick-profile CPU run of benches/ (tests/data/cpu-quick.json)."""
    return json.loads((DATA / "cpu-quick.json").read_text())


@pytest.fixture
def h200_results() -> dict[str, Any]:
    """The committed H200 baseline, measured on the lent GPU."""
    return json.loads((ROOT / "baselines" / "nvidia-h200-x1.json").read_text())


def slowed(results: dict[str, Any], fullname: str, factor: float) -> dict[str, Any]:
    """A copy of ``results`` where one benchmark's every time sample is multiplied by ``factor``."""
    out = copy.deepcopy(results)
    _scale(next(b for b in out["benchmarks"] if b["fullname"] == fullname), factor)
    return out


def all_slowed(results: dict[str, Any], factor: float, when: str) -> dict[str, Any]:
    """A copy of ``results`` run at ``when`` (its datetime) with every benchmark's time samples multiplied by
    ``factor``: another kept run of the same machine."""
    out = copy.deepcopy(results)
    for bench in out["benchmarks"]:
        _scale(bench, factor)
    out["datetime"] = when
    return out


def _scale(bench: dict[str, Any], factor: float) -> None:
    stats = bench["stats"]
    stats["data"] = [x * factor for x in stats["data"]]
    for key in ("min", "max", "mean", "median", "q1", "q3", "iqr", "stddev", "total"):
        stats[key] *= factor


def one_run(baseline: dict[str, Any]) -> dict[str, Any]:
    """A baseline's newest entries as one run would have written them (no stored runs or spread)."""
    run = copy.deepcopy(baseline)
    for key in ("runs", "noise", "run_dates"):
        run["machine_info"]["perfkit"].pop(key, None)
    return run


def typed(results: Any, source: str = "test") -> Any:
    """A result file's JSON as perfkit reads it (perfkit.resultfile.load.parse); a ResultSet as it is."""
    from perfkit.resultfile import load
    from perfkit.resultfile.model import ResultSet

    return results if isinstance(results, ResultSet) else load.parse(results, source)


def judged(baseline: Any, current: Any, policy: Any = None, noise: Any = None) -> Any:
    """The judge's verdict on two result sets (JSON or typed); ``noise``: a baseline whose stored spread
    stands in (default: the baseline's own), as perfkit.verdict.noise.Noise.of gives it."""
    from perfkit.verdict.judge import Policy, judge
    from perfkit.verdict.noise import Noise

    base = typed(baseline)
    return judge(
        base, typed(current), Noise.of(typed(noise) if noise is not None else base), policy or Policy()
    )


def words(verdicts: Any) -> Any:
    """Verdicts as their words: a dict's keys or values, or one verdict."""
    if isinstance(verdicts, dict):
        return {getattr(k, "value", k): getattr(v, "value", v) for k, v in verdicts.items()}
    return verdicts.value


def three_runs(results: dict[str, Any], spread: float = 0.004) -> Any:
    """A baseline of three runs: ``results`` and two copies with every time moved by ±``spread``."""
    from perfkit.store.baselines import from_runs

    copies = [copy.deepcopy(results)]
    for factor in (1 + spread, 1 - spread):
        out = copy.deepcopy(results)
        for bench in out["benchmarks"]:
            out = slowed(out, bench["fullname"], factor)
        copies.append(out)
    return from_runs([typed(c) for c in copies])


# The simulator tests need NUMBA_ENABLE_CUDASIM=1 before numba is imported; test_vector_add.py
# runs them in a process of their own.
collect_ignore = [] if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" else ["cudasim"]


@pytest.fixture(scope="session")
def postgres_server() -> Any:
    """A real PostgreSQL server for the session (tests/postgres.py); skipped only where no PostgreSQL is
    installed (CI installs Debian's package)."""
    from tests import postgres

    if postgres.binaries() is None:
        pytest.skip("PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql/*/bin): "
                    "`apt-get install postgresql` runs these tests against a real server")
    with postgres.server() as running:
        yield running


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A fresh, empty history database's URL: a SQLite file, and a database on a real PostgreSQL server."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'history.db'}"
        return
    with request.getfixturevalue("postgres_server").database() as url:
        yield url


#: The benchmarks the injected H200 run makes 30% slower.
INJECTED = ("benches/test_ceilings.py::test_copy_bandwidth",
            "benches/test_layers.py::test_layer[conv-forward]",
            "benches/test_vgg_swap.py::test_vgg16[gpu-normal-forward]")


@pytest.fixture(scope="session")
def injected_reports(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The committed H200 baseline against one of its runs with ``INJECTED`` 30% slower, the batch sweep not
    run and a newer driver, as an injected nightly: ``comparison``, its report in ``plain`` (no kept runs)
    and in ``kept`` (five kept runs, each 2% slower than the last)."""
    from types import SimpleNamespace

    from perfkit.render import report
    from perfkit.store import storage_folder

    baseline = json.loads((ROOT / "baselines" / "nvidia-h200-x1.json").read_text())
    current = one_run(baseline)
    for name in INJECTED:
        current = slowed(current, name, 1.3)
    current["benchmarks"] = [b for b in current["benchmarks"] if "test_batch_sweep" not in b["fullname"]]
    current["machine_info"]["perfkit"]["fingerprint"]["driver"] = "999.1"
    comparison = judged(baseline, current)
    kept = storage_folder.History(
        tuple(typed(all_slowed(current, 1 + 0.02 * i, f"2026-01-{i + 1:02d}T02:00:00")) for i in range(5))
    )
    folder = tmp_path_factory.mktemp("injected")
    for name, runs in (("plain", None), ("kept", kept)):
        report.write_report(typed(current), folder / name, comparison, "baselines/nvidia-h200-x1.json", runs)
    return SimpleNamespace(comparison=comparison, plain=folder / "plain", kept=folder / "kept")


@functools.cache
def bench_module(stem: str) -> ModuleType:
    """``benches/<stem>.py`` as a module of its own (benches/ is no package, and pytest imports a bench file
    under another name when it collects it), loaded once."""
    spec = importlib.util.spec_from_file_location(f"bench_{stem}", ROOT / "benches" / f"{stem}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def night(i: int, first: str = "2026-10-01") -> str:
    """The date ``i`` days after ``first``: runs numbered past a month's end stay dates perfkit reads."""
    return (date.fromisoformat(first) + timedelta(days=i)).isoformat()
