"""``python -m perfkit.workloads.make_flop_cache [RESULTS.json ...]``: count the FLOP tables the committed
baselines' benchmarks need and write perfkit.workloads.flop_cache's file (after a change to the counting code
or the models, or with a new torch). A module of its own: run as a script, flop_cache would be ``__main__``, a
module apart from the one perfkit.workloads.benchwork reads its tables through.
"""
from __future__ import annotations

import sys

from perfkit.workloads import flop_cache

if __name__ == "__main__":
    sys.exit(flop_cache.main())
