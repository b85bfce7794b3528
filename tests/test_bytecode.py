"""The processes of a run share one bytecode cache where the environment says not to write bytecode."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from perfkit import bytecode

REPOSITORY = Path(__file__).resolve().parents[1]


def test_children_keep_their_bytecode_in_one_private_folder_where_the_environment_writes_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    source = tmp_path / "src"
    source.mkdir()
    (source / "some_module.py").write_text("VALUE = 3\n")
    environ = {"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin", "PYTHONPATH": str(source)}
    folder = bytecode.share_cache(environ)
    assert folder is not None and folder.parent == tmp_path / "tmp"
    assert "PYTHONDONTWRITEBYTECODE" not in environ
    assert environ["PYTHONPYCACHEPREFIX"] == str(folder) and stat.S_IMODE(folder.stat().st_mode) == 0o700
    subprocess.run([sys.executable, "-c", "import some_module"], env=environ, check=True)
    assert list(folder.rglob("some_module*.pyc"))
    assert not (source / "__pycache__").exists()  # nothing beside the sources


def test_a_bytecode_folder_others_can_write_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    planted = tmp_path / f"perfkit-pycache-{os.getuid()}"
    planted.mkdir()
    planted.chmod(0o777)
    environ = {"PYTHONDONTWRITEBYTECODE": "1"}
    assert bytecode.share_cache(environ) is None and environ == {"PYTHONDONTWRITEBYTECODE": "1"}


def test_an_environment_that_writes_bytecode_or_names_its_own_folder_is_left_alone():
    for environ in ({}, {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/somewhere"}):
        before = dict(environ)
        assert bytecode.share_cache(environ) is None
        assert environ == before


def test_the_process_that_shares_the_folder_writes_what_it_imports_there_and_a_child_with_dash_b_reads_it(
        tmp_path: Path):
    """The conftest shares the folder before the plugin imports torch, so pytest's own compilation of torch
    is what every worker and fresh process reads (a multiprocessing child inherits ``-B``: it only reads)."""
    (tmp_path / "tmp").mkdir()
    source = tmp_path / "src"
    source.mkdir()
    (source / "some_module.py").write_text("VALUE = 3\n")
    environ = {"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin", "TMPDIR": str(tmp_path / "tmp"),
               "PYTHONPATH": os.pathsep.join((str(REPOSITORY), str(source)))}
    share_then_import = "from perfkit import bytecode; bytecode.share_cache(); import some_module"
    subprocess.run([sys.executable, "-c", share_then_import], env=environ, check=True)
    folder = tmp_path / "tmp" / f"perfkit-pycache-{os.getuid()}"
    written = list(folder.rglob("some_module*.pyc"))
    assert len(written) == 1 and not (source / "__pycache__").exists()
    child = {**environ, "PYTHONPYCACHEPREFIX": str(folder)}
    del child["PYTHONDONTWRITEBYTECODE"]
    loaded = subprocess.run([sys.executable, "-B", "-v", "-c", "import some_module"], env=child, check=True,
                            capture_output=True, text=True).stderr
    assert f"code object from '{written[0]}'" in loaded


def test_bytecode_kept_for_a_deleted_folder_is_forgotten_and_no_other(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    checkout, other = tmp_path / "ab" / "checkout", tmp_path / "ab" / "other"
    for sources in (checkout, other):
        kept = bytecode.cache_folder() / sources.relative_to("/") / "perfkit" / "__pycache__"
        kept.mkdir(parents=True)
        (kept / "model.cpython-312.pyc").write_bytes(b"")
    bytecode.forget(checkout)
    assert not (bytecode.cache_folder() / checkout.relative_to("/")).exists()
    assert (bytecode.cache_folder() / other.relative_to("/")).is_dir()
    bytecode.forget(tmp_path / "never-imported")  # nothing kept: nothing to do
