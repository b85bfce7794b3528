"""Every figure perfkit records, declared once: its name, unit and which way is better.

A figure's name is the key of every stored history, so writers (benches, measure/, parallel/, the derived
pass) and readers (the judge, the report, the plots) use these constants, never a literal, and each
figure has one unit. Names built from a part (a memory term, a timer, a GPU) come from the functions below.

Glossary used in names and text: a **ceiling** is what this machine measured (copy bandwidth, matmul rate
per precision); the **datasheet** is the vendor's figure; the **roof** is the roofline's bound at one
arithmetic intensity (the lower of the two ceilings' lines there). A **share** is a fraction (0.8, not 80%).
"""
from __future__ import annotations

from perfkit.resultfile.datasheet import COPY, PRECISIONS, matmul_key
from perfkit.resultfile.metrics import Better, Method, MetricSpec

#: The headline: pytest-benchmark's median time of the benchmark (every run has it; not a declared metric).
TIME = "time"
TIME_UNIT = "s"
#: The units a time is written in: the benchmark's own in seconds, a figure's also in ms or us
TIME_UNITS = (TIME_UNIT, "ms", "us")

# ---- rates and ceilings ------------------------------------------------------------------------------------
COPY_BANDWIDTH = MetricSpec(COPY, "GB/s", "higher")


def matmul_ceiling(precision: str) -> MetricSpec:
    """The matmul rate of one precision, as the ceilings family records it (named by its ceiling key)."""
    return MetricSpec(matmul_key(precision), "TFLOP/s", "higher")


#: The copies by one multiprocessor that the ceilings family measures: (launch shape, K million elements), at
#: the vector add's nightly sizes of that shape, so that each of its launches meets a copy of its own size in
#: the same level of the memory hierarchy on any device (in L2 on a Hopper at K = 1, beyond it at 100).
ONE_SM_COPIES: tuple[tuple[str, int], ...] = (("one_thread", 1), ("one_block", 1), ("one_block", 100))


def one_sm_copy(scenario: str, k: int) -> MetricSpec:
    """The copy rate (bytes read + written) of one thread or one block over K million elements: one
    multiprocessor's pace against the latency of memory, which no datasheet lists."""
    return MetricSpec(f"{scenario}_copy_k{k}_gbps", "GB/s", "higher")


#: The sizes (K million float32 elements) at which the ceilings family measures how fast a grid's first touch
#: migrates managed pages the host wrote: the vector add's nightly sizes, as its first launches migrate them.
FIRST_TOUCH_KS: tuple[int, ...] = (1, 100)


def first_touch(k: int) -> MetricSpec:
    """The rate (bytes migrated) at which a grid's first reads move K million elements of managed memory from
    the host: the host link's and the driver's pace, which no datasheet lists."""
    return MetricSpec(f"first_touch_k{k}_gbps", "GB/s", "higher")


CEILINGS: tuple[MetricSpec, ...] = (COPY_BANDWIDTH, *(matmul_ceiling(p) for p in PRECISIONS),
                                    *(one_sm_copy(s, k) for s, k in ONE_SM_COPIES),
                                    *(first_touch(k) for k in FIRST_TOUCH_KS))
ONE_SM_CEILINGS: frozenset[str] = frozenset(one_sm_copy(s, k).name for s, k in ONE_SM_COPIES)
FIRST_TOUCH_CEILINGS: frozenset[str] = frozenset(first_touch(k).name for k in FIRST_TOUCH_KS)


def ceiling_label(key: str) -> str:
    """A ceiling key in a few words for a legend: copy, matmul, one thread, one block, first touch."""
    if key in ONE_SM_CEILINGS:
        return key.split("_copy_")[0].replace("_", " ")
    if key in FIRST_TOUCH_CEILINGS:
        return "first touch"
    return key.split("_")[0]


#: A power-limited kernel's SM cycles per call (its time times the mean SM clock it ran at): what its code
#: costs, apart from the clock the card's power limit let it hold (perfkit.measure.heat)
SM_MCYCLES = MetricSpec("sm_mcycles", "Mcycles", "lower")
TFLOPS = MetricSpec("tflops", "TFLOP/s", "higher")
BANDWIDTH = MetricSpec("bandwidth_gbps", "GB/s", "higher")
SHARE_OF_DATASHEET = MetricSpec("share_of_datasheet", "ratio", "higher")
SHARE_OF_PEAK = MetricSpec(
    "share_of_peak", "ratio", "higher"
)  # of the measured matmul ceiling of the math used
SHARE_OF_COPY_PEAK = MetricSpec("share_of_copy_peak", "ratio", "higher")  # of the measured copy ceiling
SHARE_OF_ROOF = MetricSpec("share_of_roof", "ratio", "higher")

# ---- memory and power --------------------------------------------------------------------------------------
PEAK_ALLOCATED_MIB = MetricSpec(
    "peak_allocated_mib", "MiB", "lower", gate=True
)  # does not follow from the time
PEAK_RESERVED_MIB = MetricSpec("peak_reserved_mib", "MiB", "lower")
ESTIMATE_MIB = MetricSpec("estimate_mib", "MiB", "none")
ACTUAL_OVER_PARAMS = MetricSpec("actual_over_params", "x", "lower")
ACTUAL_OVER_ESTIMATE = MetricSpec("actual_over_estimate", "ratio", "none")
AVG_POWER_W = MetricSpec("avg_power_w", "W", "lower")
ENERGY_J = MetricSpec("energy_j", "J", "lower")


def estimate_term(term: str) -> MetricSpec:
    """One term of the training-memory estimate (params, grads, optimizer_state, activations)."""
    return MetricSpec(f"{term}_mib", "MiB", "none")


def gpu_peak(gpu: int) -> MetricSpec:
    """One GPU's allocator peak in the two-GPU split stack."""
    return MetricSpec(f"gpu{gpu}_peak_mib", "MiB", "none")


# ---- capacity searches -------------------------------------------------------------------------------------
LARGEST_LAYERS = MetricSpec("largest_layers", "layers", "higher", gate=True)
LARGEST_BATCH = MetricSpec("largest_batch", "images", "higher", gate=True)
PROBES = MetricSpec("probes", "probes", "none")
SEARCH_S = MetricSpec("search_s", "s", "lower")
LEAKED_MIB = MetricSpec("leaked_mib", "MiB", "lower")
NUM_CONV = MetricSpec("num_conv", "layers", "none")
NUM_FC = MetricSpec("num_fc", "layers", "none")
FORWARD_MEAN_MS = MetricSpec("forward_mean_ms", "ms", "lower")
GPU0_FORWARD_MS = MetricSpec("gpu0_forward_ms", "ms", "lower")
TRANSFER_MS = MetricSpec("transfer_ms", "ms", "lower")
GPU1_FORWARD_MS = MetricSpec("gpu1_forward_ms", "ms", "lower")

# ---- vector add, VGG swap ----------------------------------------------------------------------------------
KERNEL_S = MetricSpec("kernel_s", "s", "lower")
SPEEDUP_VS_CPU = MetricSpec("speedup_vs_cpu", "x", "higher")
#: The host's own memory pace beside a CPU reference that streams memory: libc's memmove of its input's bytes
#: into a buffer of their size, each core's fastest pass (perfkit.measure.host_copy)
HOST_COPY_S = MetricSpec("host_copy_s", "s", "lower")
#: A CPU reference's time over that copy, core by core: what the code costs beyond the host's memory pace, the
#: figure its verdict rests on (two fresh H200 hosts read the 100 M-element loop 7-10% apart, this within 2%)
OVER_HOST_COPY = MetricSpec("over_host_copy", "ratio", "lower")
#: A first touch of a managed first launch's own pages (a copy kernel reading x and y right after the host
#: wrote them), timed just before each of its rounds: the page work's pace at that moment
FIRST_TOUCH_S = MetricSpec("first_touch_s", "s", "lower")
#: The first launch over that first touch, round by round: what the launch costs beyond the page work's pace,
#: the figure its verdict rests on (eight fresh processes on two H200s: the K1 grid launch 13.5% apart, this
#: 3.6%; eleven on three at K100, 13.0% and 4.8%)
OVER_FIRST_TOUCH = MetricSpec("over_first_touch", "ratio", "lower")
#: One multiprocessor's copy of a one-block launch's own arrays, in its shape (kernels.one_sm), timed right
#: after the launch in the same process: that multiprocessor's pace against memory on this chip; before a
#: first launch on managed memory, each round, a first touch of its pages that waits on them as the block does
ONE_SM_COPY_S = MetricSpec("one_sm_copy_s", "s", "lower")
#: A one-block launch's kernel over that copy, the n-th launch over the n-th copy: what the add costs beyond
#: one multiprocessor's pace, the figure its verdict rests on (the warm K = 100 M launch read 0.157 or 0.162 s
#: by H200, each machine within 0.1%: the chip, not the code; the first K = 1 M launch 3.1% between six fresh
#: processes on one H200, this 1.3%)
OVER_ONE_SM_COPY = MetricSpec("over_one_sm_copy", "ratio", "lower")
TIME_RATIO_VS_NORMAL = MetricSpec("time_ratio_vs_normal", "ratio", "lower")
MEMORY_RATIO_VS_NORMAL = MetricSpec("memory_ratio_vs_normal", "ratio", "lower")

# ---- FLOPs, PPP, roofline ----------------------------------------------------------------------------------
TOTAL_FLOPS = MetricSpec("total_flops", "FLOP", "none")
TOTAL_MACS = MetricSpec("total_macs", "MAC", "none")
COUNTED_FLOPS = MetricSpec("counted_flops", "FLOP", "none")
PARAMS = MetricSpec("params", "", "none")
FORWARD_BACKWARD_FLOPS = MetricSpec("forward_backward_flops", "FLOP", "none")
CONV_FLOP_SHARE = MetricSpec("conv_flop_share", "ratio", "none")
SUM_OF_LAYERS_S = MetricSpec("sum_of_layers_s", "s", "lower")
LAYERS_OVER_MODEL = MetricSpec("layers_over_model", "ratio", "none")
MODEL_EVENTS_S = MetricSpec("model_events_s", "s", "lower")
MODEL_GRAPH_S = MetricSpec("model_graph_s", "s", "lower")
LAUNCH_OVERHEAD_S = MetricSpec("launch_overhead_s", "s", "lower")
PREDICTED_S = MetricSpec("predicted_s", "s", "none")
MEASURED_OVER_PREDICTED = MetricSpec("measured_over_predicted", "ratio", "lower")
DRAM_BYTES = MetricSpec("dram_bytes", "B", "none", exact=False)  # Nsight Compute's counters: 0.01-0.1% apart
INTENSITY = MetricSpec("intensity_flop_per_byte", "FLOP/B", "none")

# ---- data parallel, collectives, large batch ---------------------------------------------------------------
EPOCH_S = MetricSpec("epoch_s", "s", "lower")
IMAGES_PER_S = MetricSpec("images_per_s", "images/s", "higher")
STEP_MS = MetricSpec("step_ms", "ms", "lower")
COMPUTE_MS = MetricSpec("compute_ms", "ms", "lower")
#: A launch-bound step's host pace (perfkit.resultfile.payloads.LaunchPace), on every one-GPU CIFAR step:
#: one tiny op's launch through PyTorch's dispatcher, and the step over it, timed in the same cycles. Over
#: ten fresh processes on three H200s (2026-12-02) the batch-128 steps of DDP and DataParallel moved 19.5% and
#: 17.5% (SD of logs), their launches per step 11.0% and 7.1%. Shown, not gated: at that spread, with the
#: host work's t5 tail, its one-run MDE on the committed H200 baseline was 90% and 139%, a gate that could
#: not see a step twice as slow to issue. The step's time on the GPU alone gates its kernels, and the
#: operators it dispatches (OPS_PER_STEP) what the host issues.
LAUNCH_US = MetricSpec("launch_us", "us", "lower")
LAUNCHES_PER_STEP = MetricSpec("launches_per_step", "launches", "lower")
#: The operators one such step dispatches below autograd (perfkit.workloads.training.ops_per_step): a count
#: the code and PyTorch alone decide, ``changed`` whenever it moves (an op added to the step, a sync, a
#: fallback from a fused kernel), where a time that moves 5-20% between processes cannot see one op in
#: 300-700.
OPS_PER_STEP = MetricSpec("ops_per_step", "ops", "none")
#: The same launch-bound step's time on the GPU alone, its launches queued behind a held stream
#: (perfkit.measure.timing.time_queued): what its kernels cost, which the host's pace hides from its time (a
#: kernel 10% slower in a step the host paces moves the step not at all). GPU work, it gates instead of the
#: time, whose spread between fresh processes (13% over the H200 baseline's 34 runs) no run can see through.
GPU_STEP_MS = MetricSpec("gpu_step_ms", "ms", "lower")
GRADIENT_MIB = MetricSpec("gradient_mib", "MiB", "none")
COMM_EXPOSED_MS = MetricSpec("comm_exposed_ms", "ms", "lower")
COMM_SUBTRACTION_MS = MetricSpec("comm_subtraction_ms", "ms", "lower")
NCCL_KERNEL_MS = MetricSpec("nccl_kernel_ms", "ms", "lower")
NCCL_EXPOSED_MS = MetricSpec("nccl_exposed_ms", "ms", "lower")
NCCL_OVERLAP_FRACTION = MetricSpec("nccl_overlap_fraction", "ratio", "higher")
DDP_ALGBW = MetricSpec("ddp_algbw_gbps", "GB/s", "higher")
DDP_BUSBW = MetricSpec("ddp_busbw_gbps", "GB/s", "higher")
RAW_ALLREDUCE_BUSBW = MetricSpec("raw_allreduce_busbw_gbps", "GB/s", "higher")
BUSBW_RATIO = MetricSpec("busbw_ratio", "ratio", "higher")
COURSE_BANDWIDTH = MetricSpec("course_bandwidth_gbps", "GB/s", "higher")
SPEEDUP = MetricSpec("speedup", "x", "higher")
SCALING_EFFICIENCY = MetricSpec("scaling_efficiency", "ratio", "higher")
THROUGHPUT_VS_DDP = MetricSpec("throughput_vs_ddp", "ratio", "higher")
BUSBW = MetricSpec("busbw_gbps", "GB/s", "higher")
ALGBW = MetricSpec("algbw_gbps", "GB/s", "higher")
TRAIN_S = MetricSpec("train_s", "s", "lower")
TRAIN_LOSS = MetricSpec("train_loss", "nats", "lower")
TRAIN_ACCURACY = MetricSpec("train_accuracy", "ratio", "higher")
TEST_LOSS = MetricSpec("test_loss", "nats", "lower")
TEST_ACCURACY = MetricSpec("test_accuracy", "ratio", "higher")

# ---- time to accuracy --------------------------------------------------------------------------------------
RUNS_REACHED = MetricSpec("runs_reached", "runs", "higher")
#: The share of R runs that reached the target: gates, as a count would not (R changed from 5 to 3 on
#: 2026-11-23, and a count read 5 -> 3 as a regression).
SHARE_REACHED = MetricSpec("share_reached", "ratio", "higher", gate=True)
TTA_COV = MetricSpec("tta_cov", "ratio", "lower")
EPOCHS_TO_TARGET = MetricSpec("epochs_to_target", "epochs", "lower")
#: Training time to the target, interpolated between evaluations: what time to accuracy gates on.
TRAIN_TO_TARGET_S = MetricSpec("train_to_target_s", "s", "lower")
EVAL_S = MetricSpec("eval_s", "s", "lower")
SHIFTED_ACCURACY = MetricSpec("shifted_accuracy", "ratio", "higher")
SHIFTED_ACCURACY_SD = MetricSpec("shifted_accuracy_sd", "ratio", "lower")
GPU_UTIL_PCT = MetricSpec("gpu_util_pct", "%", "higher")
#: Like the GPU's, the memory system's busy share follows the host's pace (a fresh H200 of 2026-11-29 fed the
#: same training 26-42% less busily): for the same work busier is faster. It does not gate; it is shown, never
#: weighed as a figure that should stay put (which "none" would declare).
MEMORY_UTIL_PCT = MetricSpec("memory_util_pct", "%", "higher")
IMAGES_PER_S_VS_NAIVE = MetricSpec("images_per_s_vs_naive", "x", "higher")

# ---- timer fidelity ----------------------------------------------------------------------------------------
GRAPH_REPLAY_S = MetricSpec("graph_replay_s", "s", "lower")


def timer_seconds(timer: str) -> MetricSpec:
    """The time one timer measured (events, events_l2_flushed, events_batched, torch_timer, do_bench)."""
    return MetricSpec(f"{timer}_s", "s", "lower")


def timer_ratio(mine: str, reference: str) -> MetricSpec:
    """One of perfkit's timers over a reference timer on the same operation (should stay put)."""
    return MetricSpec(f"{mine}_over_{reference}", "ratio", "none")


#: Names older files used for figures that now have another (perfkit.resultfile.migrations renames them).
RENAMED: dict[str, str] = {
    "pct_of_copy_peak": SHARE_OF_COPY_PEAK.name, "pct_of_peak": SHARE_OF_PEAK.name,
    "pct_of_datasheet": SHARE_OF_DATASHEET.name, "of_datasheet": SHARE_OF_DATASHEET.name,
    "of_roof": SHARE_OF_ROOF.name,
}
#: Units older files gave a figure that now has one unit everywhere.
UNITS: dict[str, str] = {IMAGES_PER_S.name: IMAGES_PER_S.unit}
#: Figures older files declared with another direction, read with today's (perfkit.resultfile.migrations).
DIRECTIONS: dict[str, Better] = {MEMORY_UTIL_PCT.name: MEMORY_UTIL_PCT.better}
#: Figures older files gated on that are shown today, read so (a comparison gates on what either side
#: declares): launches per step since 2026-12-02 (LAUNCHES_PER_STEP says why).
WITHDRAWN_GATES: frozenset[str] = frozenset({LAUNCHES_PER_STEP.name})


# ---- methods -----------------------------------------------------------------------------------------------
# A figure measured another way on purpose keeps its name and gets the next method version: its older values
# are another series, never judged against the new ones (perfkit.verdict.matching) and charted apart
# (perfkit.verdict.trends). Each ``since`` lies between the last stored run of the old code and the first of
# the new; the migrations date older files' entries against it.

#: The vector add's 1 M-element grid and tuned kernels on explicit copies, whose arrays fit in L2 (50 MB on
#: the H100 and H200): ``kernel_s`` was the host's launch pace of kernels queued back to back (24-77 us on an
#: H200, 39-46% between runs) and is the kernel alone, from memory after an L2 flush (8.0-9.3 us), as are the
#: rate and shares computed from it (7033a54). Since the first run of that code: the four fresh H200 processes
#: of 13:45-13:49 that e6f5ae8 saved, before the commit at 13:52 (the last run of the old code was 12:05). The
#: same day's fixes time the same kernel alone: 914d3e1 warms its clock first, 5db4f06 holds the stream until
#: the launch is queued (7.8-8.1 us became 8.3-8.5 us, within the minimum effect of a kernel that is not
#: GPU-bound). The K100 kernels never fit in L2 and are timed as before.
KERNEL_ALONE = Method(
    2, "the kernel alone after an L2 flush", "2026-11-23T13:45:58+00:00",
    (KERNEL_S.name, BANDWIDTH.name, SHARE_OF_DATASHEET.name, SHARE_OF_COPY_PEAK.name),
    ("benches/test_vector_add.py::test_gpu_explicit[K1-grid]",
     "benches/test_vector_add.py::test_gpu_explicit[K1-tuned]"))
#: A layer on a GPU: each round timed one call, the host's launch and wake-up included (a ReLU forward
#: 88-91 us on an H200); it times calls back to back, after half a second untimed, so the queue hides the host
#: and the time per call is the GPU's (76 us), and so are the rates and shares computed from it (4f75edc, at
#: 15:02; its first stored runs 15:05, the last of the old code 12:05). Rounds of 2 ms became 50 ms that night
#: (1da65a7): the same calls back to back, less of the host's wake-up per call.
LAYER_CALLS_BACK_TO_BACK = Method(
    2, "calls back to back, the host's launch latency hidden", "2026-11-23T15:02:25+00:00",
    (TIME, TFLOPS.name, BANDWIDTH.name, SHARE_OF_DATASHEET.name, SHARE_OF_PEAK.name, SHARE_OF_COPY_PEAK.name),
    ("benches/test_layers.py::test_layer[",))
#: A matmul ceiling on a GPU: it was timed at whatever clock the card held, near boost from a cool start, and
#: is timed at the clock its power limit holds under sustained load, the ceiling a long training step meets
#: (4f75edc, at 15:02: the H200's bf16 GEMM 14% slower, tf32 8%; 09249da had held it back until every
#: baseline's ceilings could be measured again). The heat-steady warm-up of 2026-11-25 (f19c412) times the
#: same steady state. The copy ceiling warmed alike read the same (2.01-2.08 ms a copy on an H200 either way)
#: and keeps version 1, as do the timer's copy and GEMM (run after the hot families, they read the same).
SUSTAINED_MATMUL = Method(
    2, "at the clock its power limit holds under sustained load", "2026-11-23T15:02:25+00:00",
    (TIME, *(matmul_ceiling(p).name for p in PRECISIONS), SHARE_OF_DATASHEET.name),
    ("benches/test_ceilings.py::test_matmul_flops[",))
#: The vector add's warm launches on managed memory: ``kernel_s`` was CUDA events around the launch on an idle
#: GPU, numba's dispatch included (one of two modes per process: 57-94 us for the K1 tuned kernel between four
#: fresh H100 processes), and is the kernel alone, the stream held until it is queued (6 us within 1.2%); the
#: benchmark gates on it, and the rates and shares computed from it follow. The round's host time (dispatch
#: and synchronisation) keeps its method and is shown.
MANAGED_KERNEL_ALONE = Method(
    2, "the warm kernel alone, the stream held until it is queued", "2026-11-27T06:00:00+00:00",
    (KERNEL_S.name, BANDWIDTH.name, SHARE_OF_DATASHEET.name, SHARE_OF_COPY_PEAK.name),
    tuple(f"benches/test_vector_add.py::test_gpu_managed[K{k}-{s}-warm]" for k in (1, 5, 10, 50, 100)
          for s in ("one_thread", "one_block", "grid", "tuned")))
#: The vector add's 1 M-element grid and tuned kernels timed alone (on explicit copies after an L2 flush, on
#: managed memory warm with the stream held): a run read the median of ten launches, whose 8 us spread 5%
#: within the run, so that median moved 1.4-3.6% with the draw (a bootstrap over five H200 nightlies of
#: 2026-12-02) and made most of the 2.0% between 34 H200 runs (1.5-1.8% for the warm launches); it reads the
#: median of a hundred, queued ten at a time as the ten were (about 0.1 s more a benchmark; a hundred
#: queued at once read the warm kernels 6-10% slower while the host was still launching them). The estimate
#: is the same; its spread is another series, which the baselines' runs must show before a one-run MDE can
#: use it. Since after the last run of the old code and of a first try that queued a hundred at once (one
#: H200, 16:00), before the first run of the new.
SHORT_KERNEL_HUNDRED_ALONE = Method(
    3, "the median of a hundred launches alone, ten queued at a time", "2026-12-02T16:20:00+00:00",
    (KERNEL_S.name, BANDWIDTH.name, SHARE_OF_DATASHEET.name, SHARE_OF_COPY_PEAK.name),
    (*KERNEL_ALONE.benchmarks,
     *(f"benches/test_vector_add.py::test_gpu_managed[K1-{s}-warm]" for s in ("grid", "tuned"))))
#: The one-element kernel's CUDA-graph replay (``graph_replay_s``, and ``launch_overhead_s``, the plain
#: launch timed in the benchmark's process over it): timed in the benchmark's process, it read the state the
#: benchmarks before had left:
#: 1.17-1.34 us after the nightly's training (a level that moved 3% between runs, 12% in two of 24), 1.07 us
#: after four vector-add benchmarks (twelve processes of one H200, 2026-12-02: within 0.1%), 1.00 us with
#: nothing before it (2026-11-23). It is replayed in a fresh process (perfkit.measure.fresh_process), under
#: the clock lock the benchmark holds: twelve processes on two fresh H200s read 1.020 or 1.114 us and 1.027 or
#: 1.111 us, each level within 0.1% (which one, the machine and what ran before decide, not known how).
#: Since after the last run in the benchmark's process (one H200, 20:36).
GRAPH_REPLAY_FRESH = Method(
    2, "replayed in a fresh process", "2026-12-02T20:38:00+00:00",
    (GRAPH_REPLAY_S.name, LAUNCH_OVERHEAD_S.name),
    ("benches/test_timer_fidelity.py::test_timer_fidelity[tiny]",))
#: The one-element kernel's graph replay in a fresh process launched on one element, and its time was that
#: element's address: 46 addresses of one buffer read 1.018-1.148 us a launch, each the same within 0.1% in
#: three fresh processes of one H200 (2026-12-03; experiments/graph_replay_levels.py), so a process read the
#: level its one allocation landed on (1.02 or 1.11 us). The replay now launches on each of 200 elements a
#: 2 MiB page apart in turn (perfkit.measure.fidelity.spread_elements), the launch's time over addresses.
#: Since after the last run on one element (one H200, 05:49), before the first of the new.
GRAPH_REPLAY_SPREAD = Method(
    3, "replayed in a fresh process over 200 elements a page apart", "2026-12-03T06:00:00+00:00",
    (GRAPH_REPLAY_S.name, LAUNCH_OVERHEAD_S.name),
    ("benches/test_timer_fidelity.py::test_timer_fidelity[tiny]",))
#: The vector add's CPU references (the compiled loop and numpy): each round was one call on buffers the
#: process allocated once, and read whichever speed their placement gave; they are timed over four fresh
#: placements on huge pages per run, each warmed and then timed in turn (perfkit.measure.placements). Between
#: fresh processes: on a 2-core EPYC the K1 loop and add moved 11.8% and 9.7% on one allocation, 2.2% and
#: 1.2% so; on one H100 host 5.6-11.7% before and 4.6-10.2% after (its noise is the host's, shared by the
#: figures of a process), and numpy's K100 add there took 101 ms instead of 143 (no page work in it).
HOST_BUFFERS_PLACED = Method(
    2, "over four fresh huge-page placements of the buffers", "2026-11-27T07:00:00+00:00",
    (TIME, BANDWIDTH.name),
    ("benches/test_vector_add.py::test_cpu_loop[", "benches/test_vector_add.py::test_cpu_numpy["))
#: The vector add's first launches on managed memory (but one thread's and one block's over millions of
#: elements, launches of a second where the page work is a small part): each round used the one allocation
#: the process made, and which migration chunks it got moved the time 12.9% between fresh processes on one
#: H100 (the K100 grid); the rounds go over four fresh allocations in turn (3.2% with five rounds each;
#: three each from 10 M elements up), the kernel time and the rates computed from them too.
MANAGED_FIRST_PLACED = Method(
    2, "over four fresh managed allocations", "2026-11-27T07:13:00+00:00",
    (TIME, KERNEL_S.name, BANDWIDTH.name, SHARE_OF_DATASHEET.name, SHARE_OF_COPY_PEAK.name),
    tuple(f"benches/test_vector_add.py::test_gpu_managed[K{k}-{s}-first]" for k in (1, 5, 10, 50, 100)
          for s in ("one_thread", "one_block", "grid", "tuned") if k <= 5 or s in ("grid", "tuned")))
#: The vector add's 1 M-element grid and tuned first launches on managed memory, timed beside a first touch of
#: their own pages (OVER_FIRST_TOUCH): the touch before each round makes each launch follow a copy, and ten
#: rounds a placement instead of five read later rounds, which ran faster than the first (one H200 run of the
#: grid: 2.0 ms falling to 1.4 over its twenty). Since after the last run of the old code (an H200 nightly,
#: 06:13-06:18), before the first of the new.
MANAGED_FIRST_BESIDE_TOUCH = Method(
    3, "beside a first touch of its own pages, ten rounds a placement", "2026-12-02T06:20:00+00:00",
    MANAGED_FIRST_PLACED.figures,
    tuple(f"benches/test_vector_add.py::test_gpu_managed[K1-{s}-first]" for s in ("grid", "tuned")))
#: The vector add's 100 M-element grid and tuned first launches, timed the same way (OVER_FIRST_TOUCH) with
#: their three rounds a placement after one: the touch before each round makes each launch follow a copy and
#: the host write its 800 MB twice. Since after the last run of the old code (an H200 nightly of 2026-12-02,
#: before 09:05), before the first of the new (10:38).
MANAGED_FIRST_LARGE_BESIDE_TOUCH = Method(
    3, "beside a first touch of its own pages", "2026-12-02T10:30:00+00:00",
    MANAGED_FIRST_PLACED.figures,
    tuple(f"benches/test_vector_add.py::test_gpu_managed[K100-{s}-first]" for s in ("grid", "tuned")))
#: The vector add's 1 M-element grid and tuned first launches beside a first touch of their own pages again,
#: forty rounds a placement instead of ten: each round's launch over its touch spread 13-27% within a run and
#: the median of a run's forty moved 2.2-2.6% between six fresh processes of one H200 (2026-12-04), about
#: what forty draws of that spread leave (seven runs of forty on two H200s: 2.2% and 1.6%). The time and the
#: touch are medians over other rounds too. Since after the last run of the old code (an H200 nightly of
#: 2026-12-04, 09:00-09:06), before the first of the new.
MANAGED_FIRST_BESIDE_TOUCH_FORTY = Method(
    4, "beside a first touch of its own pages, forty rounds a placement", "2026-12-04T09:30:00+00:00",
    (*MANAGED_FIRST_PLACED.figures, FIRST_TOUCH_S.name, OVER_FIRST_TOUCH.name),
    MANAGED_FIRST_BESIDE_TOUCH.benchmarks)
#: The vector add's 100 M-element grid and tuned first launches beside a first touch of their own pages, the
#: pages sent back to host memory before each round by the driver's prefetch instead of the host's write of
#: 800 MB (0.05 s where the write took 0.3), twelve rounds a placement instead of three: each round's launch
#: over its touch spread 10-13% within a run, and the run's median moved 0.6% (grid) and 0.9% (tuned)
#: between five fresh processes of one H200, 5.9% after three rounds of the write (2026-12-04, afternoon).
#: The time, the touch and the rates are over other rounds too. Since after the last run of the old code (an
#: H200 nightly of 2026-12-04, morning), before the first of the new.
MANAGED_FIRST_LARGE_PREFETCHED = Method(
    4, "beside a first touch, the pages sent back by prefetch, twelve rounds a placement",
    "2026-12-04T12:30:00+00:00",
    MANAGED_FIRST_BESIDE_TOUCH_FORTY.figures,
    MANAGED_FIRST_LARGE_BESIDE_TOUCH.benchmarks)
#: The vector add's one-block first launches on managed memory at the nightly's sizes, timed beside one
#: multiprocessor's copy of their own pages (OVER_ONE_SM_COPY), the copy before each round: each launch
#: follows a copy, at 1 M elements ten rounds a placement instead of five, and at 100 M over four placements
#: of 1 + 3 rounds instead of one allocation's 1 + 5. Since after the last run of the old code (an H200
#: nightly of 2026-12-03), before the first of the new.
MANAGED_FIRST_BESIDE_ONE_SM_COPY = Method(
    3, "beside one multiprocessor's copy of its own pages", "2026-12-04T03:15:00+00:00",
    MANAGED_FIRST_PLACED.figures,
    tuple(f"benches/test_vector_add.py::test_gpu_managed[K{k}-one_block-first]" for k in (1, 100)))
#: The vector add's CPU references again: a round was one call on a placement, on whichever core the thread
#: landed, and read what that core's neighbours left it (ten fresh processes on one H100: the K1 loop 9.4%
#: apart, numpy's add 8.0%); each round is now one core's fastest of three passes, every core the process may
#: use in turn (perfkit.measure.cores; 2.9% and 2.7% between the same processes), at most 16 of one NUMA
#: node, a host with fewer cores timing longer bursts. The placements rotate as before. Since after the last
#: run of the old code (an H100 nightly, 12:38-12:44), before the first of the new (12:55).
HOST_FASTEST_CORE = Method(
    3, "each core's fastest of three passes, every core in turn", "2026-11-27T12:45:00+00:00",
    (TIME, BANDWIDTH.name),
    ("benches/test_vector_add.py::test_cpu_loop[", "benches/test_vector_add.py::test_cpu_numpy["))
#: DistributedDataParallel's training steps: each worker let cuDNN time every candidate algorithm of every
#: convolution on its first step (``cudnn.benchmark``), which nn.DataParallel beside it never did, so the two
#: methods the seed compares could run different kernels (ResNet-50's step read the same either way); and on
#: a fresh machine that search compiled cuDNN's run-time engines, 12-14 s per model on an H100 (ResNet-18
#: CIFAR's first step 14.1 s, then 2.1 s once the driver's cache held them; ResNet-50 17.6 s, then 3.2 s;
#: with the search off 1.0 s and 0.6 s, nothing compiled; docs/findings.md, 2026-11-27). The workers now take
#: cuDNN's heuristic choice, as DataParallel does. Every figure of the steps and those computed from them are
#: another series, and so is DataParallel's throughput over DDP's. Since after the last run of the old code
#: (an H100 nightly, 15:30-15:36), before the first of the new.
DDP_HEURISTIC_CONVS = Method(
    2, "cuDNN's heuristic convolution algorithms, as DataParallel", "2026-11-27T15:55:00+00:00",
    (TIME, EPOCH_S.name, IMAGES_PER_S.name, PEAK_ALLOCATED_MIB.name, COMPUTE_MS.name, COMM_EXPOSED_MS.name,
     COMM_SUBTRACTION_MS.name, COURSE_BANDWIDTH.name, NCCL_KERNEL_MS.name, NCCL_EXPOSED_MS.name,
     NCCL_OVERLAP_FRACTION.name, DDP_ALGBW.name, DDP_BUSBW.name, BUSBW_RATIO.name, SPEEDUP.name,
     SCALING_EFFICIENCY.name),
    ("benches/test_data_parallel.py::test_ddp[",))
#: DataParallel's throughput over DDP's on the same job, since DDP's steps are measured as above.
THROUGHPUT_OVER_HEURISTIC_DDP = Method(
    2, "over DDP's steps on cuDNN's heuristic algorithms", DDP_HEURISTIC_CONVS.since,
    (THROUGHPUT_VS_DDP.name,), ("benches/test_data_parallel.py::test_dataparallel[",))
#: The large-batch study's epochs: its DDP job searched cuDNN's algorithms too, the search and the compiling
#: of run-time engines (12-14 s a model on a fresh machine) inside its first timed epoch; it takes cuDNN's
#: heuristic choice as the scaling jobs do.
LARGE_BATCH_HEURISTIC_CONVS = Method(
    2, "cuDNN's heuristic convolution algorithms", DDP_HEURISTIC_CONVS.since, (TIME, TRAIN_S.name),
    ("benches/test_large_batch.py::test_large_batch_accuracy[",))
#: The launch-bound training steps of the memory family (batch 32 on a GPU: the host issues the kernels
#: slower than the GPU runs them): ten rounds of 50 ms read the pace of whichever core and neighbours the
#: process met (ResNet-18 8.7-10.9 ms a step over four fresh processes on one H100); bursts of 50 ms on each
#: core in turn, three passes, every thread of the process pinned (perfkit.measure.cores), read as the fastest
#: burst: 8.15-8.37 ms over six fresh processes on two fresh H100s, where the median over the cores read
#: 8.25-9.42 (the first process after start-up found half the cores slow).
LAUNCH_BOUND_FASTEST_CORE = Method(
    2, "the fastest burst of steps, every core in turn", "2026-11-27T18:07:00+00:00", (TIME,),
    ("benches/test_model_memory.py::test_training_memory[b32-",))
#: The nightly's time to accuracy (ResNet-18 resident at batch 512, deterministic) trains one seed, not two:
#: its seed crosses the target at the same epoch every night, so the gate is the GPU's pace either way (two
#: seeds' times within 0.3% over three H200 processes), and the second seed took 19-20 s of the H100's five
#: minutes (issue 44, part 7). The headline, the training time to the target, the epochs to it, the
#: evaluation time, images/s and the shifted set's accuracy are seed 0's alone, where they were the mean of
#: seeds 0 and 1; the runs that reached the target count one; the CoV and the shifted accuracy's SD need two
#: runs and are the weekly cases' (three seeds). The share of runs that reached the target and the GPU's
#: utilisation keep their method: a share and a mean over the training, of one run now as of two before.
#: Since after the last run of the two-seed code.
TTA_ONE_SEED_NIGHTLY = Method(
    2, "one seed (seed 0), where it was the mean of two", "2026-11-27T23:30:00+00:00",
    (TIME, RUNS_REACHED.name, TRAIN_TO_TARGET_S.name, EPOCHS_TO_TARGET.name, EVAL_S.name, IMAGES_PER_S.name,
     SHIFTED_ACCURACY.name),
    tuple(f"benches/test_time_to_accuracy.py::test_time_to_accuracy[resnet18-cifar-{data}-top1_{target}-"
          "resident-batch512-deterministic]"
          for data, target in (("synthetic-hard", "0.96"), ("cifar10", "0.92"))))
#: Every method after the first, in the order they replaced one another.
METHODS: tuple[Method, ...] = (KERNEL_ALONE, LAYER_CALLS_BACK_TO_BACK, SUSTAINED_MATMUL, MANAGED_KERNEL_ALONE,
                               HOST_BUFFERS_PLACED, MANAGED_FIRST_PLACED, MANAGED_FIRST_BESIDE_TOUCH,
                               MANAGED_FIRST_LARGE_BESIDE_TOUCH, MANAGED_FIRST_BESIDE_ONE_SM_COPY,
                               MANAGED_FIRST_BESIDE_TOUCH_FORTY, MANAGED_FIRST_LARGE_PREFETCHED,
                               HOST_FASTEST_CORE,
                               DDP_HEURISTIC_CONVS, THROUGHPUT_OVER_HEURISTIC_DDP,
                               LARGE_BATCH_HEURISTIC_CONVS, LAUNCH_BOUND_FASTEST_CORE, TTA_ONE_SEED_NIGHTLY,
                               SHORT_KERNEL_HUNDRED_ALONE, GRAPH_REPLAY_FRESH,
                               GRAPH_REPLAY_SPREAD)


def newest_method(benchmark: str, figure: str) -> Method | None:
    """The newest method by which today's code measures ``figure`` of ``benchmark``; None: the first."""
    found = [m for m in METHODS if figure in m.figures and benchmark.startswith(m.benchmarks)]
    return max(found, key=lambda m: m.version, default=None)


def method_of(benchmark: str, figure: str, version: int) -> Method | None:
    """The method of ``version`` that measures ``figure``, the one declared for ``benchmark`` first; None for
    version 1, the way every figure was measured first."""
    found = [m for m in METHODS if m.version == version and figure in m.figures]
    return next((m for m in found if benchmark.startswith(m.benchmarks)), found[0] if found else None)
