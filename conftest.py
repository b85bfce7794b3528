"""Loads the perfkit pytest plugin for benches/ and tests/ (also when perfkit is not pip-installed)."""
pytest_plugins = ["perfkit.plugin"]
