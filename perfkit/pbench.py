"""The single adapter to pytest-benchmark's internals; nothing else in perfkit touches them.

pytest-benchmark (pinned to the major version in pyproject.toml) has public hooks for the JSON,
but no public way to change the default timer, to read a fixture's round times, to take times
measured in another process, to build the run's JSON when ``--benchmark-json`` was not given, or
to read each benchmark as soon as it finishes (for the partial results file).
Those live here, each pinned by a test, so an upgrade that changes them fails in one place.
"""
from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from pytest_benchmark.timers import default_timer
from pytest_benchmark.utils import NameWrapper, safe_dumps


def use_timer(config: pytest.Config, dotted_name: str) -> None:
    """Make ``dotted_name`` the timer of every benchmark unless ``--benchmark-timer`` chose another.

    Must run in a ``pytest_configure`` that precedes pytest-benchmark's (which is ``trylast``):
    its session reads the option once, when it is made. A ``--benchmark-timer`` equal to
    pytest-benchmark's default cannot be told from no option, and is replaced too.
    """
    if config.getoption("benchmark_timer", None) == str(NameWrapper(default_timer)):
        config.option.benchmark_timer = dotted_name


#: The columns of pytest-benchmark's table in perfkit's runs: what a reader compares (its default ten made
#: lines of almost 300 characters, with an operations-per-second column meaningless for a training run).
READABLE_COLUMNS = ["min", "median", "iqr", "rounds"]


def readable_table(config: pytest.Config) -> None:
    """pytest-benchmark's table, unless the user chose its columns or grouping: one table per benchmark
    function, so each is scaled to its own unit (one table for the whole suite printed a 17 s training run as
    ``17,654,289.0970 (>1000.0)`` microseconds beside an 8 us kernel), with :data:`READABLE_COLUMNS`. Like
    :func:`use_timer`, it must run before pytest-benchmark's ``pytest_configure`` reads the options; an
    explicit ``--benchmark-group-by=group`` cannot be told from the default."""
    if config.getoption("benchmark_columns", None) is None:
        config.option.benchmark_columns = list(READABLE_COLUMNS)
    if config.getoption("benchmark_group_by", None) == "group":
        config.option.benchmark_group_by = "func"


def run_json(config: pytest.Config) -> dict[str, Any] | None:
    """This run as the pytest-benchmark JSON (raw samples kept), whether or not --benchmark-json was given.

    Built through the same hooks, in the same order, as pytest-benchmark's ``handle_saving``
    (commit info, ``generate_json``, then ``update_json``), so every plugin's additions, perfkit's
    derived figures included, are in it. None when no benchmark ran (or pytest-benchmark is off).
    """
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return None
    commit_info = config.hook.pytest_benchmark_generate_commit_info(config=config)
    config.hook.pytest_benchmark_update_commit_info(config=config, commit_info=commit_info)
    output = config.hook.pytest_benchmark_generate_json(
        config=config,
        benchmarks=session.benchmarks,
        include_data=True,
        machine_info=session.get_machine_info(),
        commit_info=commit_info,
    )
    config.hook.pytest_benchmark_update_json(config=config, benchmarks=session.benchmarks, output_json=output)
    return plain(output)


def plain(output: dict[str, Any]) -> dict[str, Any]:
    """``output`` as its JSON file will hold it (what JSON cannot hold made plain, as pytest-benchmark
    writes it)."""
    result: dict[str, Any] = json.loads(safe_dumps(output))
    return result


_TAKEN = pytest.StashKey[int]()


def json_path(config: pytest.Config) -> Path | None:
    """The ``--benchmark-json`` path, or None (pytest-benchmark 5.2 hands an open file, 5.3 a path)."""
    option = config.getoption("benchmark_json", None)
    if not option:
        return None
    if isinstance(option, (str, os.PathLike)):  # a Path has a .name too: the file's base name, not its path
        return Path(option)
    return Path(option.name)


def storage_path(config: pytest.Config) -> Path | None:
    """The folder of ``--benchmark-storage`` (pytest-benchmark's ``file://`` form or a path); None for another
    kind of storage."""
    option = str(config.getoption("benchmark_storage", None) or "")
    if option.startswith("file://"):
        return Path(option[len("file://"):])
    return None if not option or "://" in option else Path(option)


def take_finished(config: pytest.Config) -> list[dict[str, Any]]:
    """Benchmark entries finished since the last call, as the final JSON will hold them (raw samples kept).

    pytest-benchmark adds an entry when its timing starts; called after a test's teardown, every entry
    added so far is complete. Entries of failed tests are left out, as in the final JSON.
    """
    session = getattr(config, "_benchmarksession", None)
    if session is None:
        return []
    start = config.stash.get(_TAKEN, 0)
    config.stash[_TAKEN] = len(session.benchmarks)
    return [json.loads(safe_dumps(bench.as_dict(include_data=True)))
            for bench in session.benchmarks[start:] if bench and not bench.has_error]


def leave_out(benchmark: Any) -> None:
    """Keep a failed test's timing out of the JSON: pytest-benchmark leaves out only an entry whose timed
    call raised, and a benchmark whose answer is checked after its timing (a wrong sum, a loss that did not
    fall) failed with its time still in the results, to be judged and saved into a baseline."""
    benchmark.has_error = True


def run_header(config: pytest.Config) -> dict[str, Any]:
    """The run's machine and commit info, as the final JSON will hold them."""
    session = config._benchmarksession  # type: ignore[attr-defined]
    commit_info = config.hook.pytest_benchmark_generate_commit_info(config=config)
    return json.loads(safe_dumps({"machine_info": session.get_machine_info(), "commit_info": commit_info,
                                  "datetime": datetime.now(timezone.utc).isoformat()}))


def round_times(benchmark: Any) -> tuple[float, ...]:
    """Per-iteration seconds of each round pytest-benchmark timed; empty when benchmarks are disabled."""
    stats = getattr(benchmark, "stats", None)
    return tuple(stats.stats.data) if stats is not None else ()


def inject_samples(benchmark: Any, seconds: Sequence[float]) -> None:
    """Make times measured elsewhere (another process, a worker rank) the benchmark's own stats.

    pytest-benchmark times only code that runs in the pytest process; this feeds each sample
    through the fixture's stats as its pedantic mode does, so the JSON, ``--benchmark-compare``
    and perfkit's comparison treat them like any other timing.
    """
    if getattr(benchmark, "disabled", False) or not seconds:
        return
    benchmark._mode = "perfkit.pbench.inject_samples(...)"
    stats = benchmark._make_stats(1)
    for second in seconds:
        stats.update(float(second))


_WORK = "_perfkit_work"
#: The most calls of a benchmark's work a kernel summary profiles (:func:`profiled_calls`).
PROFILED_CALLS = 100


def keep_work(benchmark: Any) -> None:
    """Remember what ``benchmark`` times, so one more call of it can run after its timed rounds
    (:func:`forget_work`): the function given to ``benchmark(...)`` with its arguments, or ``pedantic``'s
    target with the arguments its ``setup`` makes (and its ``teardown`` after). pytest-benchmark's own
    ``--benchmark-cprofile`` makes such a call at the same place, with no hook for another profiler, so its
    two entry points are wrapped on this fixture alone."""
    raw, pedantic = benchmark._raw, benchmark._raw_pedantic

    def kept_raw(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        setattr(benchmark, _WORK, KeptWork(lambda: function(*args, **kwargs), False))
        return raw(function, *args, **kwargs)

    def kept_pedantic(target: Callable[..., Any], args: Sequence[Any] = (),
                      kwargs: dict[str, Any] | None = None, setup: Callable[[], Any] | None = None,
                      teardown: Callable[..., Any] | None = None, **rest: Any) -> Any:
        def once() -> None:
            made = setup() if setup is not None else None
            call_args, call_kwargs = made if made else (tuple(args), dict(kwargs or {}))
            target(*call_args, **call_kwargs)
            if teardown is not None:
                teardown(*call_args, **call_kwargs)

        setattr(benchmark, _WORK, KeptWork(once, setup is not None or teardown is not None))
        return pedantic(target, args=args, kwargs=kwargs, setup=setup, teardown=teardown, **rest)

    benchmark._raw, benchmark._raw_pedantic = kept_raw, kept_pedantic


class KeptWork(NamedTuple):
    """One call of what a benchmark timed; ``set_up``: each call runs pedantic's setup or teardown too (one
    that can take longer than the work: the vector add's 800 MB of host writes)."""

    call: Callable[[], None]
    set_up: bool


def profiled_calls(benchmark: Any, work: KeptWork, round_s: float, most: int = PROFILED_CALLS) -> int:
    """How many calls of ``work`` a kernel summary profiles: as many as filled one of its timed rounds
    (``round_s``) at the pace the rounds measured, at most ``most``; one where each call runs a setup. A
    single call's host time is mostly the profiler's own (2.4 ms around a 74 us ReLU on an H200,
    2026-11-27), which hid a launch-bound slowdown of +294% as host dispatch +15%."""
    times = round_times(benchmark)
    per_call = statistics.median(times) if times else 0.0
    if work.set_up or per_call <= 0:
        return 1
    return max(1, min(most, round(round_s / per_call)))


def forget_work(benchmark: Any) -> KeptWork | None:
    """What ``benchmark`` timed in this process (:func:`keep_work`), taken off the fixture, whose own methods
    come back: pytest-benchmark keeps every fixture to the session's end, and a call kept on it would keep
    the benchmark's model and data alive through every later one. None where it timed nothing here (its
    samples were fed in, or benchmarks are disabled)."""
    work: KeptWork | None = benchmark.__dict__.pop(_WORK, None)
    benchmark.__dict__.pop("_raw", None)
    benchmark.__dict__.pop("_raw_pedantic", None)
    if getattr(benchmark, "disabled", False) or not round_times(benchmark):
        return None
    return work
