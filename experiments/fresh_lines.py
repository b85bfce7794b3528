"""The command line the experiments that time in fresh processes share: ``one`` prints one process's JSON
line, ``run N OUT.jsonl`` appends N fresh processes' lines to OUT.jsonl, ``summary OUT.jsonl`` reads them.
Imported by the experiments beside it (run as scripts, their folder is on the path)."""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any


def main(script: str, one_process: Callable[[], dict[str, Any]],
         summary: Callable[[list[dict[str, Any]]], None], argv: list[str]) -> None:
    """Dispatch ``argv`` (the script's arguments) for ``script`` (its ``__file__``)."""
    if argv[0] == "one":
        print(json.dumps(one_process()))
    elif argv[0] == "run":
        with open(argv[2], "a") as out:
            for _ in range(int(argv[1])):
                done = subprocess.run([sys.executable, script, "one"], check=True, capture_output=True,
                                      text=True)
                out.write(done.stdout.strip().splitlines()[-1] + "\n")
                out.flush()
    else:
        with open(argv[1]) as lines:
            summary([json.loads(line) for line in lines])
