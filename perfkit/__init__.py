"""perfkit: a pytest-benchmark performance regression suite for deep-learning systems."""
from __future__ import annotations

__version__ = "0.1.0"

#: Version of the perfkit part of a result file (``machine_info["perfkit"]`` and
#: ``extra_info["metrics"]``). Bump it when that contract changes, with the step that brings older files
#: forward (perfkit.resultfile.migrations). 2: figures renamed to what they hold, one unit per figure.
#: 3: time to accuracy gates on the share of its runs that reached the target, not their count.
#: 4: each entry records the method version of the figures measured by a method after the first
#: (``extra_info["methods"]``, perfkit.resultfile.figures.METHODS); older entries are dated against each
#: method.
SCHEMA_VERSION = 4
