"""GPU kernels written in numba.cuda (importing numba.cuda needs numba-cuda: the ``cuda`` extra), and the
sizes of their work, which need no numba: ``out = x + y`` on float32 reads two and writes one element."""
from __future__ import annotations

import math
from typing import Any

from perfkit.errors import UsageError

#: Bytes a vector add moves per element: x and y read, out written, four bytes each.
BYTES_PER_ELEMENT = 12
#: The smallest change worth a verdict for a launch on managed memory, where the driver's page work is part
#: of the time: in four fresh H200 processes the warm K1 grid spread 30%, the tuned kernel 15%, and one block
#: took 9% longer in one of them; over eight H200 runs on three machines the warm K100 grid read 401-480 us
#: and the tuned kernel 358-413 us; a first touch spread 6-12%.
MANAGED_TOLERANCE = 0.15


def elements(k_millions: Any) -> int:
    """K million as an element count; K must be a positive number."""
    try:
        k = float(k_millions)
    except (TypeError, ValueError):
        raise UsageError(f"K must be a number of millions of elements, not {k_millions!r}") from None
    if not math.isfinite(k) or k <= 0:
        raise UsageError(f"K must be a positive number of millions of elements, not {k_millions!r}")
    n = round(k * 1_000_000)
    if n < 1:
        raise UsageError(f"K={k_millions} million is less than one element")
    return n
