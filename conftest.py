"""Loads the perfkit pytest plugin for benches/ and tests/ (also when perfkit is not pip-installed)."""
from perfkit import bytecode

# before the plugin imports torch: where the environment writes no bytecode, this process's compilation of
# torch is kept for every child process of the run (perfkit.bytecode)
bytecode.share_cache()
pytest_plugins = ["perfkit.plugin"]
