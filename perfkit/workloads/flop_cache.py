"""The FLOP tables of the networks the committed baselines run, counted once and committed
(``flop_cache.json.gz`` beside this module: compact JSON, each row a list), so that a comparison across
hardware reads them instead of importing torch and counting eight networks on the meta device (seconds each
time ``perfkit compare`` ran).

The file is made by the project's own counting code (perfkit.workloads.flops: FlopCounterMode and PALEO's
formulas), never by hand: ``python -m perfkit.workloads.make_flop_cache`` counts every network the
benchmarks of ``baselines/*.json`` need and writes it. Its tables hold for the torch and torchvision it was
counted with (operator counts and model definitions change between releases) and for :data:`FORMAT` of the
counting code: with any other version installed it is not read, and each table is counted afresh, as before
the cache.
"""
from __future__ import annotations

import dataclasses
import functools
import gzip
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from perfkit.workloads.flop_types import FlopTable, LayerRow

CACHE = Path(__file__).with_name("flop_cache.json.gz")
#: A row's values in the file, in this order (a name per value would make it five times larger).
ROW_FIELDS = tuple(f.name for f in dataclasses.fields(LayerRow))
#: The counting code's version: raise it whenever perfkit.workloads.flops, the registered models or the layer
#: stack change what a table holds, and make the file again.
FORMAT = 1
#: The committed baselines, whose benchmarks' networks the cache holds.
BASELINES = Path(__file__).resolve().parents[2] / "baselines"
ABOUT = ("FLOP tables at batch 1 of the networks the committed baselines run, counted by "
         "perfkit.workloads.flops; made by `python -m perfkit.workloads.make_flop_cache`, never by hand; "
         "read only where the versions below are installed")
#: The name a layer stack's table goes by (perfkit.workloads.benchwork's LAYER_STACK).
LAYER_STACK = "layer stack"


@dataclass
class _Memo:
    """The tables this process has read or counted, by key; ``afresh`` (inside :func:`counting_afresh`):
    the committed file is not read, every table is counted."""

    tables: dict[str, FlopTable] = field(default_factory=dict)
    afresh: bool = False


_MEMO = _Memo()


def versions() -> dict[str, Any]:
    """What the tables depend on, read from the installed packages' metadata (importing torch takes
    seconds): the counting code's :data:`FORMAT`, torch's and torchvision's versions."""
    def installed(package: str) -> str | None:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return None

    return {"format": FORMAT, "torch": installed("torch"), "torchvision": installed("torchvision")}


def key(model: str, image: Sequence[int], stack: tuple[int, int] | None) -> str:
    """One table's key: the model (or the layer stack's convolutions and fully-connected layers) and one
    image's shape, channels first; tables are counted at batch 1 and scaled."""
    name = f"{LAYER_STACK} {stack[0]} conv + {stack[1]} fc" if stack is not None else model
    return f"{name} @ {'x'.join(map(str, image))}"


@functools.cache
def _committed() -> dict[str, dict[str, Any]]:
    """The committed tables, packed, by key; none where the file is missing, unreadable, or was counted with
    other versions than those installed (then every table is counted afresh)."""
    try:
        raw = json.loads(gzip.decompress(CACHE.read_bytes()))
    except (OSError, ValueError, EOFError):
        return {}
    if not isinstance(raw, dict) or raw.get("versions") != versions():
        return {}
    if raw.get("fields") != list(ROW_FIELDS):  # written when a row had other fields
        return {}
    tables = raw.get("tables")
    return tables if isinstance(tables, dict) else {}


def lookup(model: str, image: Sequence[int], stack: tuple[int, int] | None) -> FlopTable | None:
    """The committed table of a network at batch 1, or None where the cache does not hold it (or holds it for
    other versions)."""
    found = _committed().get(key(model, image, stack))
    return unpacked(found) if found is not None else None


def packed(table: FlopTable) -> dict[str, Any]:
    """A table as the file holds it: its fields, each row a list of :data:`ROW_FIELDS`' values."""
    return {"model": table.model, "input_shape": list(table.input_shape), "params": table.params,
            "forward_backward_counted": table.forward_backward_counted,
            "rows": [[getattr(row, name) for name in ROW_FIELDS] for row in table.rows]}


def unpacked(raw: dict[str, Any]) -> FlopTable:
    """The table :func:`packed` gave, equal to the one counted."""
    rows = [LayerRow(*values) for values in raw["rows"]]
    return FlopTable(raw["model"], tuple(raw["input_shape"]), raw["params"], rows,
                     raw["forward_backward_counted"])


def count(model: str, image: Sequence[int], stack: tuple[int, int] | None) -> FlopTable:
    """A network's FLOP table at batch 1, counted now (imports torch: seconds; a ResNet-50 takes more)."""
    from perfkit.workloads import flops, layer_stack

    shape = (1, *image)
    if stack is not None:
        return flops.table_of(layer_stack.build(*stack, shape, device="meta"), shape, LAYER_STACK)
    return flops.flop_table(model, shape)


def table(model: str, image: Sequence[int], stack: tuple[int, int] | None) -> FlopTable:
    """A network's FLOP table at batch 1: the committed one, else counted; each once per process."""
    name = key(model, image, stack)
    if name not in _MEMO.tables:
        found = None if _MEMO.afresh else lookup(model, image, stack)
        _MEMO.tables[name] = found if found is not None else count(model, image, stack)
    return _MEMO.tables[name]


@contextmanager
def counting_afresh() -> Iterator[dict[str, FlopTable]]:
    """Inside it every table is counted, not read from the file; it yields the tables counted, by key (what
    :func:`make` writes). The tables read or counted before are forgotten on the way in and out."""
    _MEMO.tables.clear()
    _MEMO.afresh = True
    try:
        yield _MEMO.tables
    finally:
        _MEMO.afresh = False
        _MEMO.tables = {}


def make(paths: Sequence[Path]) -> dict[str, Any]:
    """The cache's content: every table the benchmarks of the result files ``paths`` need for their work
    (perfkit.workloads.benchwork, as a comparison across hardware asks for it), counted now."""
    from perfkit.resultfile import load
    from perfkit.workloads import benchwork

    with counting_afresh() as counted:
        for path in paths:
            results = load.load(path)
            for bench in results.benchmarks:
                benchwork.work_of(bench, results)
        tables = {name: packed(counted[name]) for name in sorted(counted)}
    return {"about": ABOUT, "versions": versions(), "fields": list(ROW_FIELDS), "tables": tables}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m perfkit.workloads.make_flop_cache [RESULTS.json ...]`` (perfkit.workloads.make_flop_cache):
    write the cache for these files
    (default: the committed baselines)."""
    given = [Path(a) for a in (sys.argv[1:] if argv is None else argv)]
    paths = given or sorted(BASELINES.glob("*.json"))
    content = make(paths)
    text = json.dumps(content, separators=(",", ":")) + "\n"
    CACHE.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))  # no date inside: same tables, same file
    print(f"wrote {CACHE}: {len(content['tables'])} table(s) for {len(paths)} file(s), {content['versions']}")
    return 0

