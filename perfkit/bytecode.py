"""One private bytecode folder for a run where the environment says not to write bytecode.

On the lent H100 image ``PYTHONDONTWRITEBYTECODE=1`` is set and torch's 1,900 modules ship without bytecode,
so every Python process of a run (pytest, each torchrun worker, each fresh process of a capacity search)
compiled torch from source: 3.5-7.5 s a process. Sharing one folder (``PYTHONPYCACHEPREFIX``) lets the first
process that compiles a module leave it for the rest. Imported without torch, so that the repository's
conftest can share the folder before the plugin imports torch: then pytest's own compilation of torch is the
one every child reads.
"""
from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from collections.abc import MutableMapping
from pathlib import Path


def share_cache(environ: MutableMapping[str, str] = os.environ) -> Path | None:
    """Keep Python's bytecode in one folder under the temporary directory, for this process (the modules it
    imports from now on) and its children, where ``PYTHONDONTWRITEBYTECODE`` would have each of them compile
    torch again. Processes spawned by multiprocessing inherit this one's ``-B`` and only read the folder.
    Nothing is written beside the sources. The folder, or None where the environment already writes bytecode
    or names its own ``PYTHONPYCACHEPREFIX``, or where the folder is not this user's alone (then nothing
    changes)."""
    if not environ.get("PYTHONDONTWRITEBYTECODE") or environ.get("PYTHONPYCACHEPREFIX"):
        return None
    folder = cache_folder()
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        owned = folder.lstat()
    except OSError:
        return None
    # bytecode is code: a folder another user made or can write (or a link) could hand the children theirs
    if not stat.S_ISDIR(owned.st_mode) or owned.st_uid != os.getuid() or owned.st_mode & 0o022:
        return None
    del environ["PYTHONDONTWRITEBYTECODE"]
    environ["PYTHONPYCACHEPREFIX"] = str(folder)
    if environ is os.environ:  # this process: importlib reads both at every import
        sys.pycache_prefix = str(folder)
        sys.dont_write_bytecode = False
    return folder


def cache_folder() -> Path:
    """The run's bytecode folder: this user's, under the temporary directory."""
    return Path(tempfile.gettempdir()) / f"perfkit-pycache-{os.getuid()}"


def forget(sources: Path) -> None:
    """Remove the bytecode kept for the modules under ``sources``, a folder about to be deleted (an A/B's
    checkout): Python keeps it under the folder at the sources' own path, which no later run imports again."""
    for path in {sources.absolute(), sources.resolve()}:
        shutil.rmtree(cache_folder() / path.relative_to(path.anchor), ignore_errors=True)
