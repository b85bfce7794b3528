"""The host's memory pace, timed beside a host figure that streams memory, so a slower host is told apart from
slower code.

The lent GPU hosts of one CPU model differ in memory bandwidth: on 2026-11-28 two fresh H200 hosts read the
vector add's 100 M-element loop at 103-108 and 111-121 ms, and the committed baseline's three hosts at 93-99
ms, so an A/A nightly on a fresh host read that loop `regressed` (+18%) and three re-runs on the same host
held it. libc's memmove of the same bytes, from the figure's own input into a buffer of its size, moved with
the host: the loop over it read 2.43-2.51 on both fresh hosts. The reference is libc's, not numpy's or
numba's, so an upgrade that slows the code under test leaves it where it was.
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np

from perfkit.measure.cores import Call


def copy_call(source: np.ndarray, target: np.ndarray) -> Call:
    """One memmove of ``source``'s bytes into ``target`` (contiguous arrays of as many bytes)."""
    if source.nbytes != target.nbytes or not (source.flags.c_contiguous and target.flags.c_contiguous):
        raise ValueError("a host copy moves between contiguous arrays of as many bytes")
    return functools.partial(ctypes.memmove, target.ctypes.data, source.ctypes.data, source.nbytes)


def over_copy(figure: tuple[float, ...], copy: tuple[float, ...]) -> tuple[float, ...]:
    """Each core's figure over its copy (two sweeps of the same cores, in the same order)."""
    if len(figure) != len(copy):
        raise ValueError(f"{len(figure)} cores timed the figure and {len(copy)} the copy")
    return tuple(f / c for f, c in zip(figure, copy))
