"""Where runs are kept: the baselines folder, pytest-benchmark's storage folder and the history database."""
