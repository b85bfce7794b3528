"""The course's "time to execute on CPU only": a single-threaded compiled loop (the C++ loop's analogue)."""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=False)
def add_loop(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    for i in range(out.size):
        out[i] = x[i] + y[i]


def host_vectors(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two float32 vectors of random values (not constants, so a kernel that skips elements is caught)."""
    rng = np.random.default_rng(seed)
    return rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
