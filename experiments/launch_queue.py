"""How many launches the host queues behind a held stream before it blocks, with CUDA's launch queue at its
default length and scaled (CUDA_SCALE_LAUNCH_QUEUES, read when the driver starts: one process each).
A step timed on the GPU alone (perfkit.measure.timing.time_queued) must fit in it:

    python experiments/launch_queue.py            # default, 2x, 4x
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

#: The hold: long enough for every launch below to be queued many times over (about 1 s on a Hopper).
HOLD_CYCLES = 2_000_000_000
LAUNCHES = 16_384
#: A launch that takes longer than this to return waited for room in the queue.
BLOCKED_S = 0.01


def probe() -> None:
    import torch

    tiny = torch.zeros(1, device="cuda")
    tiny.add_(1.0)
    torch.cuda.synchronize()
    torch.cuda._sleep(HOLD_CYCLES)
    returned = []
    for _ in range(LAUNCHES):
        before = time.perf_counter()
        tiny.add_(1.0)
        returned.append(time.perf_counter() - before)
    torch.cuda.synchronize()
    blocked = next((i for i, s in enumerate(returned) if s > BLOCKED_S), None)
    setting = os.environ.get("CUDA_SCALE_LAUNCH_QUEUES", "default")
    print(f"queue {setting}: " + (f"all {LAUNCHES} launches queued" if blocked is None else
                                  f"launch {blocked + 1} waited {returned[blocked] * 1e3:.0f} ms for room"))


def main() -> None:
    if sys.argv[1:] == ["--probe"]:
        probe()
        return
    for setting in (None, "2x", "4x"):
        env = dict(os.environ)
        env.pop("CUDA_SCALE_LAUNCH_QUEUES", None)
        if setting:
            env["CUDA_SCALE_LAUNCH_QUEUES"] = setting
        subprocess.run([sys.executable, __file__, "--probe"], env=env, check=True)


if __name__ == "__main__":
    from script_line import run

    run(__doc__, lambda _: main(), most=1, gpu=True)
