"""A result file or baseline edited by hand or damaged anywhere: every field, given a value of another type,
is read or refused in one sentence that names the file, never a stack trace (perfkit compare both ways)."""
from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from perfkit.cli import main
from tests.conftest import ROOT

#: The committed CPU baseline: entries with figures, records and context, and stored runs, noise and origins.
BASELINE = ROOT / "baselines" / "cpu-amd-epyc-2cpu-quick.json"
WRONG = ("text", [], 7, None, {}, [1, "a"])


def _one_benchmark() -> dict[str, Any]:
    """The baseline cut to one benchmark, its stored runs with them, so each case loads in milliseconds."""
    raw = json.loads(BASELINE.read_text())
    raw["benchmarks"] = [b for b in raw["benchmarks"] if "test_layer[" in b["fullname"]][:1]
    names = {b["fullname"] for b in raw["benchmarks"]}
    info = raw["machine_info"]["perfkit"]
    for section, held in list(info.items()):
        if isinstance(held, dict) and names & set(held):
            info[section] = {k: v for k, v in held.items() if k in names}
    return raw


def _places(node: Any, at: tuple[Any, ...] = (), depth: int = 6) -> Iterator[tuple[Any, ...]]:
    """The path of every value in ``node`` down to ``depth`` (a list's first two items)."""
    items = node.items() if isinstance(node, dict) else enumerate(node[:2]) if isinstance(node, list) else ()
    for key, value in items:
        yield (*at, key)
        if depth > 1:
            yield from _places(value, (*at, key), depth - 1)


def _with(raw: dict[str, Any], place: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(raw)
    node = out
    for key in place[:-1]:
        node = node[key]
    node[place[-1]] = value
    return out


def test_every_field_of_the_wrong_type_is_read_or_one_sentence(tmp_path: Path, capsys) -> None:
    raw = _one_benchmark()
    whole, damaged = tmp_path / "whole.json", tmp_path / "damaged.json"
    whole.write_text(json.dumps(raw))
    places = list(_places(raw))
    assert len(places) > 150  # the entries' stats, figures, records and context, and the stored runs
    refused = named = 0
    for place in places:
        for wrong in WRONG:
            damaged.write_text(json.dumps(_with(raw, place, wrong)))
            for argv in (["compare", str(whole), str(damaged)], ["compare", str(damaged), str(whole)]):
                status = main(argv)  # any exception fails the test with its traceback
                err = capsys.readouterr().err
                if status == 2:
                    refused += 1
                    assert err.startswith("perfkit: error: ") and err.count("\n") == 1, (place, wrong, err)
                    named += "damaged.json: " in err
    assert refused > 100 and named > 0.9 * refused  # the check reached the refusals; damage names its file
