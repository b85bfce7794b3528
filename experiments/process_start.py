"""Where a fresh Python process's first GPU work spends its seconds (part 7 of issue 44): a one-GPU nightly
starts three fresh processes besides pytest's own (capacity's search and timing, timer fidelity's graph
replay; DDP's workers beside two or more GPUs), and a fresh machine's first ResNet-18 step in a new process
took 9.6-12.7 s warm or cold (experiments/cold_libraries.py, 2026-12-05). Each trial is a new interpreter that
reports the wall time at the end of each stage, from just before the parent started it:

    python experiments/process_start.py [TRIALS]

Stages: interpreter up; ``import torch``; ``import torchvision``; CUDA context; a cuBLAS GEMM; a cuDNN
convolution forward; its backward; a ResNet-18 forward and backward at batch 32; ``numba.cuda`` imported and
one kernel compiled and run.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
start = float(sys.argv[1]); marks = {"interpreter": time.time() - start}
def mark(name):
    torch.cuda.synchronize() if "torch" in globals() and torch.cuda.is_initialized() else None
    marks[name] = time.time() - start
import torch; mark("import torch")
import torchvision; mark("import torchvision")
torch.cuda.init(); torch.empty(1, device="cuda"); mark("cuda context")
a = torch.randn(1024, 1024, device="cuda"); (a @ a).sum().item(); mark("cublas gemm")
conv = torch.nn.Conv2d(3, 64, 3).cuda(); x = torch.randn(8, 3, 64, 64, device="cuda", requires_grad=True)
y = conv(x); mark("cudnn conv forward")
y.sum().backward(); mark("cudnn conv backward")
model = torchvision.models.resnet18().cuda()
model(torch.randn(32, 3, 224, 224, device="cuda")).sum().backward(); mark("resnet18 step")
from numba import cuda
@cuda.jit
def add(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + y[i]
import numpy as np
v = cuda.to_device(np.ones(1024, dtype=np.float32)); o = cuda.device_array(1024, dtype=np.float32)
add[4, 256](v, v, o); cuda.synchronize(); mark("numba kernel")
print(json.dumps(marks))
"""


def trial() -> dict[str, float]:
    start = time.time()
    done = subprocess.run([sys.executable, "-c", CHILD, repr(start)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    marks = json.loads(done.stdout.strip().splitlines()[-1])
    marks["exit"] = time.time() - start
    return marks


def main(trials: int) -> None:
    for number in range(trials):
        marks = trial()
        before = 0.0
        steps = []
        for stage, at in marks.items():
            steps.append(f"{stage} +{at - before:.2f}")
            before = at
        print(f"trial {number}: {marks['exit']:.2f} s: " + ", ".join(steps), flush=True)


if __name__ == "__main__":
    from script_line import run

    run(__doc__, lambda args: main(int(args[0]) if args else 3), most=1, gpu=True)
