"""perfkit: a pytest-benchmark performance regression suite for deep-learning systems."""
from __future__ import annotations

__version__ = "0.1.0"

#: Version of the perfkit part of a result file (``machine_info["perfkit"]`` and
#: ``extra_info["metrics"]``). Bump it when that contract changes incompatibly.
SCHEMA_VERSION = 1
