"""Nothing lost when a run dies: each finished benchmark is appended to ``RESULTS.json.partial`` at once.

pytest-benchmark writes its JSON only when the session ends, so a run stopped at a time limit, killed
or crashed used to leave nothing. Beside the ``--benchmark-json`` path perfkit keeps a JSON-lines file:
the first line holds the run's ``machine_info`` and ``commit_info``, each further line one finished
benchmark entry exactly as the final JSON will hold it; every line is flushed and fsynced as it is
written. The file is removed once the final JSON is written. ``load`` turns it back into a result
set (a half-written last line, from a kill mid-write, is dropped; perfkit.resultfile.load reads the file),
which ``perfkit compare`` and ``report`` read like any result file.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfkit.errors import BaselineError, UsageError

if TYPE_CHECKING:
    from perfkit.resultfile.model import ResultSet

SUFFIX = ".partial"
#: The key of a parsed partial file that says a half-written last line was dropped.
TORN = "partial_torn"


def path_for(json_path: str | os.PathLike[str]) -> Path:
    """``results.json`` -> ``results.json.partial``."""
    return Path(f"{os.fspath(json_path)}{SUFFIX}")


class PartialFile:
    """Appends finished benchmarks to the partial file of one run (created at the first one)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._started = False

    @classmethod
    def beside(cls, json_path: Path) -> PartialFile:
        """The partial file of a run that writes ``json_path``, whose folder is made now: pytest-benchmark
        opens that path only when the session ends, so a folder that did not exist failed every benchmark's
        teardown there and lost the whole run; a folder given as the path is refused before the run."""
        if json_path.is_dir():
            raise UsageError(f"--benchmark-json={json_path} is a folder; give the path of a file in it, e.g. "
                             f"--benchmark-json={json_path / 'results.json'}")
        try:
            json_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--benchmark-json={json_path}: its folder cannot be made ({exc.strerror}); "
                             "give a path in a folder you can write to") from None
        return cls(path_for(json_path))

    def append(self, bench: Mapping[str, Any], header: Callable[[], Mapping[str, Any]]) -> None:
        """Write ``bench`` as one line; the first call truncates the file and writes ``header()`` before it
        (machine and commit info: read once, when the first benchmark finishes)."""
        mode = "a" if self._started else "w"
        with open(self.path, mode, encoding="utf-8") as fh:
            if not self._started:
                fh.write(json.dumps({"perfkit_partial": 1, **header()}) + "\n")
            fh.write(json.dumps(bench) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self._started = True

    def remove_if_complete(self) -> None:
        """Remove the partial file once the final JSON beside it is written (pytest-benchmark 5.2 creates it
        empty when the run starts)."""
        final = Path(os.fspath(self.path).removesuffix(SUFFIX))
        if final.exists() and final.stat().st_size:
            self.path.unlink(missing_ok=True)


def parse(text: str, source: str) -> dict[str, Any]:
    """The result set a partial file's ``text`` holds: its header's machine and commit info and every
    complete line."""
    lines = text.splitlines()
    try:
        header = json.loads(lines[0]) if lines else {}
    except json.JSONDecodeError:
        header = {}
    if not isinstance(header, dict) or header.get("perfkit_partial") != 1:
        raise BaselineError(f"{source}: not a perfkit partial results file (no header line)")
    benchmarks = []
    torn = False
    for line in lines[1:]:
        try:
            benchmarks.append(json.loads(line))
        except json.JSONDecodeError:
            torn = True  # the line being written when the run was killed
            break
    return {"machine_info": header.get("machine_info", {}), "commit_info": header.get("commit_info", {}),
            "datetime": header.get("datetime", ""), "benchmarks": benchmarks, "partial": True, TORN: torn}


def said(results: ResultSet) -> str | None:
    """The line that says ``results`` is a run cut short, and whether a half-written last line was dropped;
    None for a finished run."""
    if not results.partial:
        return None
    torn = "; its half-written last line, from when the run was stopped, is left out" \
        if results.raw.get(TORN) else ""
    return (f"{results.source}: a run cut short (a partial results file): only the "
            f"{len(results.benchmarks)} benchmark(s) it finished{torn}")


def where_results(path: Path) -> str:
    """Where this run's results are, naming only files that exist: the final JSON, else the partial file of
    a run cut short (killed, interrupted), else nothing (no benchmark finished)."""
    unfinished = path_for(path)
    if path.exists() and path.stat().st_size:
        return f"perfkit: results in {path}"
    if unfinished.exists():
        return (f"perfkit: the run was cut short; the benchmarks it finished are in {unfinished} "
                "(perfkit compare and report read it)")
    return f"perfkit: no benchmark finished, so nothing was written to {path}"
