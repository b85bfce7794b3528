"""Run one measurement in a freshly spawned Python process and hand its result back.

Why: some process state changes in ways no memory check sees, and then changes what later measurements
in the same process time. The capacity searches hit one for real: when a convolution's cuDNN plan runs
out of memory for its workspace, PyTorch falls back to a leaner plan and caches it for that shape for the
rest of the process (``try_plans`` in aten/src/ATen/native/cudnn/Conv_v8.cpp). On an H200 the course's
110 + 110 layer stack then ran its forward in 60.3 ms instead of 36.6 ms, in every later test of the run.
A spawned process starts with empty caches, and whatever it leaves ends with it.
"""
from __future__ import annotations

import multiprocessing
import os
import stat
import tempfile
from collections.abc import Callable, MutableMapping
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TypeVar

from perfkit.errors import MeasurementError

T = TypeVar("T")


def run(measure: Callable[..., T], *args: Any, label: str | None = None) -> T:
    """``measure(*args)`` in a spawned process (``measure`` a module-level function, its arguments picklable).

    An exception it raises is raised here, as itself; a process that dies (killed, a crash in a library)
    becomes a :class:`~perfkit.errors.MeasurementError` that says so, naming ``label`` (default: the
    function). Whatever interrupts the wait here (``--perfkit-timeout``, Ctrl-C) kills the process first.
    """
    context = multiprocessing.get_context("spawn")  # fork would copy this process's CUDA state
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_answer, args=(send, measure, args), daemon=True)
    child.start()
    send.close()
    try:
        ok, value = receive.recv()
    except EOFError:
        raise MeasurementError(
            f"the fresh process running {label or measure.__name__} died before it answered "
            "(killed, or a crash inside a library; its output is in the test's stderr)"
        ) from None
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receive.close()
    if ok:
        return value
    raise value


def _answer(send: Connection, measure: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """The child's side: the result, or the exception, sent back whole."""
    try:
        answer: tuple[bool, Any] = (True, measure(*args))
    except Exception as exc:  # noqa: BLE001 - every failure is the parent's to raise
        answer = (False, exc)
    try:
        send.send(answer)
    except Exception as exc:  # noqa: BLE001 - an answer that does not pickle still says what happened
        send.send((False, MeasurementError(f"{measure.__name__} answered with something that cannot cross "
                                           f"processes: {exc}")))
    send.close()


def share_bytecode_cache(environ: MutableMapping[str, str] = os.environ) -> Path | None:
    """Let the run's child processes (torchrun workers, fresh processes) keep Python's bytecode in one
    folder under the temporary directory, where ``PYTHONDONTWRITEBYTECODE`` would have each of them compile
    torch again: on the lent H100 image that is 7.5 s of every child (its 1,900 modules ship without
    bytecode), a tenth of the nightly. torchrun's workers write it; processes spawned by multiprocessing
    inherit this one's ``-B`` and only read it. Nothing is written beside the sources. The folder, or None
    where the environment already writes bytecode or names its own ``PYTHONPYCACHEPREFIX``, or where the
    folder is not this user's alone."""
    if not environ.get("PYTHONDONTWRITEBYTECODE") or environ.get("PYTHONPYCACHEPREFIX"):
        return None
    folder = Path(tempfile.gettempdir()) / f"perfkit-pycache-{os.getuid()}"
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
    return folder
