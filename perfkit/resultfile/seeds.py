"""Figures the course's reports published, shown beside perfkit's own for comparison (never used as
baselines).

Each is quoted from the seed document named beside it, with the hardware it ran on.
"""
from __future__ import annotations

#: Seed 000, Task 1, GTX 1080 Ti (10.91 GiB): (num_conv, num_fc) -> forward ms, or None where it ran out of
#: memory.
LAYER_STACK_1080TI: dict[tuple[int, int], float | None] = {(61, 62): 109.2, (62, 61): 109.9, (62, 62): None}
#: Seed 000, Task 1: the split across two GTX 1080 Ti: device -> (num_conv, num_fc, forward ms).
LAYER_SPLIT_1080TI: dict[str, tuple[int, int, float]] = {"GPU0": (84, 0, 110.2), "GPU1": (54, 62, 109.9)}
#: Seed 003, Q1, V100, data resident ("w/o data-loading"): batch -> epoch seconds; 8192 ran out of memory.
BATCH_EPOCH_V100: dict[int, float] = {32: 14.2, 128: 4.0, 512: 2.4, 2048: 0.83}
BATCH_OOM_V100 = 8192
#: Seed 003, Q1: its epochs were CIFAR-10's training split ("Files already downloaded and verified").
SEED_003_IMAGES = 50_000
#: Seed 003, Q4.1, CIFAR-10, five epochs at the same learning rate, batch 128 on one V100 and 2048 on
#: four: (GPUs, global batch) -> (loss, train accuracy), its table's "Avg Loss" and "Avg Train Accuracy".
LARGE_BATCH_V100: dict[tuple[int, int], tuple[float, float]] = {
    (1, 128): (0.05, 0.619),
    (4, 2048): (1.2, 0.3063),
}
LARGE_BATCH_V100_EPOCHS = 5
