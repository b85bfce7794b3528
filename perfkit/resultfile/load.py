"""The one loader of result files: read -> migrate -> validate -> derive, for every entry point.

The run's end-of-run verdict, ``perfkit compare``, ``report``, ``history`` and ``baseline save`` all read
through here, so the same file gives every one of them the same figures. Every failure is one
BaselineError line that says what to do.
"""
from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfkit.errors import BaselineError
from perfkit.resultfile import derived, metrics, migrations, partial
from perfkit.resultfile.ceilings import Ceilings
from perfkit.resultfile.model import BenchmarkEntry, PerfkitInfo, ResultSet


def read_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The parsed JSON of a result file, or of a run cut short (``RESULTS.json.partial``)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        unfinished = partial.path_for(path)
        if unfinished.exists():
            raise BaselineError(
                f"{path}: no such file: that run did not finish; {unfinished} holds the benchmarks it "
                "finished: pass that file instead"
            ) from None
        raise BaselineError(
            f"{path}: no such file; give the path of an existing result file (`pytest benches/ "
            "--benchmark-json=FILE` writes one) or baseline (baselines/<hardware-id>.json)"
        ) from None
    except UnicodeDecodeError:
        raise BaselineError(f"{path}: not a text file (not UTF-8), so not a result file or baseline perfkit "
                            "wrote; check the path") from None
    except OSError as exc:
        raise BaselineError(f"{path}: cannot be read ({exc.strerror})") from None
    if path.name.endswith(partial.SUFFIX):
        return partial.parse(text, str(path))
    unfinished = partial.path_for(path)
    if not text.strip() and unfinished.exists():  # pytest-benchmark 5.2 creates the file when the run starts
        raise BaselineError(f"{path}: empty: that run did not finish; {unfinished} holds the benchmarks it "
                            "finished: pass that file instead")
    try:
        parsed = json.loads(text.removeprefix("\ufeff"))  # a byte-order mark an editor wrote is no error
    except json.JSONDecodeError as exc:
        raise BaselineError(
            f"{path}: not valid JSON ({exc.msg} line {exc.lineno}, column {exc.colno}: {_how_broken(exc)}); "
            "re-run the benchmarks that wrote it, or, where it is a committed baseline, restore it from git"
        ) from None
    if not isinstance(parsed, dict):
        raise BaselineError(f"{path}: not a pytest-benchmark JSON (no 'benchmarks' list)")
    return parsed



def _how_broken(exc: json.JSONDecodeError) -> str:
    """Where a file stopped being JSON says how: cut short where no more than one unfinished token follows
    (a run killed while writing), not JSON at all where it broke at its first character or after a lone
    value (a note, a log), else edited."""
    text, rest = exc.doc, exc.doc[exc.pos:].strip()
    if not text.strip():
        return "empty"
    lead = text.lstrip()
    if exc.pos == len(text) - len(lead) or (exc.msg == "Extra data" and lead[:1] not in ("{", "[")):
        return "not JSON at all"
    if exc.msg.startswith("Unterminated string") or re.fullmatch(r'[\w.+\-"\\]*', rest):
        return "cut short"
    return "edited"

def typed(raw: Mapping[str, Any], source: str, fresh: bool = False) -> ResultSet:
    """Migrate and validate a parsed result file (a copy: ``raw`` is left alone), without deriving; ``fresh``:
    ``raw`` was parsed for this call alone and nothing else holds it, so it is migrated in place, not copied
    (a deep copy took a quarter of a second for two baselines)."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("benchmarks"), list):
        raise BaselineError(f"{source}: not a pytest-benchmark JSON (no 'benchmarks' list)")
    machine = raw.get("machine_info") or {}
    if not isinstance(machine, Mapping) or not isinstance(machine.get("perfkit"), Mapping):
        raise BaselineError(
            f"{source}: has no perfkit section in machine_info; it was not written by a perfkit run"
        )
    when = raw.get("datetime")
    if when and (not isinstance(when, str) or metrics.moment(when) is None):
        raise BaselineError(f"{source}: its datetime {when!r} is no ISO 8601 date and time (pytest-benchmark "
                            "writes one such as 2026-12-06T19:30:00+00:00); the file was edited: restore it, "
                            "or re-run the benchmarks that wrote it")
    current = migrations.migrate(dict(raw) if fresh else copy.deepcopy(dict(raw)), source)
    entries = tuple(BenchmarkEntry.from_json(bench, source) for bench in current["benchmarks"])
    _refuse_repeats(entries, source)
    return ResultSet(entries, PerfkitInfo.from_json(current["machine_info"]["perfkit"], source),
                     str(current.get("datetime") or ""), source, bool(current.get("partial")), current)


def _refuse_repeats(entries: tuple[BenchmarkEntry, ...], source: str) -> None:
    """A run measures each benchmark once: a second entry of one id (files pasted together by hand) would
    silently stand for the whole benchmark."""
    seen: set[str] = set()
    for bench in entries:
        if bench.fullname in seen:
            raise BaselineError(f"{source}: holds {bench.fullname} twice; keep one entry, or give each run "
                                "its own file (`perfkit baseline save r1.json r2.json` keeps several runs)")
        seen.add(bench.fullname)


def parse(raw: Mapping[str, Any], source: str, lender: ResultSet | None = None,
          fresh: bool = False) -> ResultSet:
    """A parsed result file as perfkit reads it: migrated, validated, and with its cross-benchmark figures
    derived; ``lender``, a result set of the same machine (the baseline it is judged against: same hardware
    id, no :meth:`~perfkit.resultfile.model.PerfkitInfo.machine_change`), lends the ceilings it did not
    measure. ``fresh``: as for :func:`typed`."""
    results = typed(raw, source, fresh)
    if not results.benchmarks:  # pytest-benchmark writes no file for a run that finished none
        raise BaselineError(f"{source}: holds no benchmarks, so there is nothing to compare, report or "
                            "store; give the file of a run that finished at least one")
    same = (lender is not None and lender.hardware_id == results.hardware_id
            and not lender.info.machine_change(results.info))
    return derived.derive(results, Ceilings.of(lender) if same and lender is not None else None)


def load(path: str | os.PathLike[str], lender: ResultSet | None = None) -> ResultSet:
    """Read a result or baseline file (see :func:`parse`)."""
    return parse(read_json(path), str(path), lender, fresh=True)
