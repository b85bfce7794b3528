"""The command line every experiment script here shares before its work: ``-h``/``--help`` or a count of
arguments the script does not read prints its docstring (its usage); a script that needs a CUDA GPU says so in
a sentence where none is visible; a perfkit error (a missing or corrupt baseline) is its sentence. A developer
who runs one to see what it does gets its usage, not a stack trace."""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from perfkit.errors import PerfkitError
from perfkit.measure.hardware import gpu_count, no_gpu_driver


def run(doc: str | None, main: Callable[[list[str]], object], least: int = 0, most: int | None = None,
        gpu: bool = False) -> None:
    """Call ``main`` with the script's arguments, after the checks above; ``least``/``most``: how many
    arguments it reads; ``gpu``: whether it needs a CUDA GPU (not where its arguments say ``--cpu``)."""
    args = sys.argv[1:]
    name = Path(sys.argv[0]).name
    if {"-h", "--help"} & set(args) or len(args) < least or (most is not None and len(args) > most):
        raise SystemExit(doc)
    if gpu and "--cpu" not in args and (no_gpu_driver() or gpu_count() == 0):
        raise SystemExit(f"{name}: needs a CUDA GPU and none is visible here; run it on a GPU machine")
    try:
        main(args)
    except PerfkitError as err:
        raise SystemExit(f"{name}: {err}") from None
