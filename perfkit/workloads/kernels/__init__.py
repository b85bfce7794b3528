"""GPU kernels written in numba.cuda (importing numba.cuda needs numba-cuda: the ``cuda`` extra)."""
