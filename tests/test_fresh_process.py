"""Child processes of a run share one bytecode cache where the environment says not to write bytecode."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from perfkit.measure import fresh_process


def test_children_keep_their_bytecode_in_one_folder_where_the_environment_writes_none(tmp_path: Path):
    module = tmp_path / "some_module.py"
    module.write_text("VALUE = 3\n")
    environ = {"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin", "PYTHONPATH": str(tmp_path)}
    folder = fresh_process.share_bytecode_cache(environ)
    assert folder is not None and "PYTHONDONTWRITEBYTECODE" not in environ
    environ["PYTHONPYCACHEPREFIX"] = str(tmp_path / "cache")  # the test's own folder, not the shared one
    subprocess.run([sys.executable, "-c", "import some_module"], env=environ, check=True)
    assert list((tmp_path / "cache").rglob("some_module*.pyc"))
    assert not (tmp_path / "__pycache__").exists()  # nothing beside the sources


def test_an_environment_that_writes_bytecode_or_names_its_own_folder_is_left_alone():
    for environ in ({}, {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/somewhere"}):
        before = dict(environ)
        assert fresh_process.share_bytecode_cache(environ) is None
        assert environ == before
