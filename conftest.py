"""Loads the perfkit pytest plugin for benches/ and tests/ (also when perfkit is not pip-installed), and
marks every benchmark ``slow``: ``pytest -m "not slow"`` is the library's inner loop, the benchmarks the main
job."""
import pytest

from perfkit import bytecode

# before the plugin imports torch: where the environment writes no bytecode, this process's compilation of
# torch is kept for every child process of the run (perfkit.bytecode)
bytecode.share_cache()
pytest_plugins = ["perfkit.plugin"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith("benches/"):
            item.add_marker(pytest.mark.slow)
