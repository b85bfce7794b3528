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
from collections.abc import Callable
from multiprocessing.connection import Connection
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
