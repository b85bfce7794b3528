"""Epoch time vs batch size until out-of-memory (seeds 003 Q1 and 004 2.1): ResNet-18 (CIFAR stem, see
perfkit.workloads.models `resnet18-cifar`) on CIFAR-10-shaped data, 50,000 training images; batch 32, 128,
512, … (×4) until the batch runs out of memory or exceeds the dataset, each said in the skip reason.

Two variants: ``resident`` (the set on the GPU: seed 003's "w/o data-loading") and ``loader-w4-pinned``
(a DataLoader from host memory with 4 workers and pinned pages; perfkit.workloads.batch_sweep.Loader). The
quick profile on a CPU (perfkit.quick_budget: 24 s on 2 cores) sweeps 128 images (batch 32 and 128) with
``loader-w2-pinned``: 4 workers on 2 CPUs took turns on the cores and timed an oversubscribed host (16-17 s
an epoch on CI's loaded box against 5.5 s resident); its largest-batch search runs under 96 MiB from batch 8
and times 5 steps after 2. A GPU's quick run keeps 256 images, 4 workers and the search from 32.
Per batch: one warm-up epoch, then the timed epoch (the headline), images/s and the allocator peak.
``test_largest_batch`` searches the largest batch that three training steps of a fresh model fit (×2 growth
then bisection, up to the dataset's size; from the third step on the memory stays put), in a fresh process
(perfkit.measure.capacity.in_fresh_process: out-of-memory probes leave slower cuDNN plans cached), and
times training steps there. Data: CIFAR-10 from ``--perfkit-data-root``, else perfkit's synthetic set. Weekly.
"""
from __future__ import annotations

import pytest

from perfkit import quick_budget
from perfkit.errors import UsageError
from perfkit.measure import capacity, memory, record
from perfkit.pbench import inject_samples
from perfkit.plugin import profile_of, session_of
from perfkit.resultfile import figures
from perfkit.resultfile.payloads import BatchCapacity, BatchEpoch
from perfkit.workloads import batch_sweep, data

#: By perfkit.quick_budget.sizes_key: the course's, a GPU's quick run, a CPU's quick run
SIZES = {"full": data.CIFAR10_TRAIN_SIZE, "quick": 256, "quick-cpu": 128}
#: The loader's workers: the course's 4, or on a CPU's quick run the 2 cores of the box it is budgeted for.
LOADER_WORKERS = {"full": 4, "quick": 4, "quick-cpu": 2}
#: On a CPU, what autograd may keep: 11 images of this model, searched from batch 8 in 5 probes (until
#: 2026-11-27 256 MiB from batch 32 found 47 in 7 probes of three steps at batch 32-64, and the test took 13 s
#: of the family's 28 on the quiet 2-core box; now 6).
QUICK_BUDGET = 96 * memory.MiB
#: Where the largest-batch search starts
FIRST = {"full": batch_sweep.FIRST_BATCH, "quick": batch_sweep.FIRST_BATCH, "quick-cpu": 8}
#: (warm-up, timed) training steps at the largest batch
STEPS = {"full": (5, 10), "quick": (5, 10), "quick-cpu": (2, 5)}


def variants(sizes: str) -> dict[str, batch_sweep.Loader | None]:
    """The sweep's ways in, by id: resident, and the loader with the sizes' workers and pinned pages."""
    workers = LOADER_WORKERS[sizes]
    loader = batch_sweep.Loader(workers=workers, pin_memory=True)
    return {"resident": None, f"loader-w{workers}-pinned": loader}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    device = session_of(metafunc.config).settings.device
    sizes = quick_budget.sizes_key(profile_of(metafunc.config).name, device.type)
    if "batch" in metafunc.fixturenames:
        batches = batch_sweep.series(SIZES[sizes])
        metafunc.parametrize("batch", [pytest.param(b, id=f"b{b}") for b in batches])
    if "variant" in metafunc.fixturenames:
        metafunc.parametrize("variant", list(variants(sizes)))


def _train_set(sizes: str, root: str | None) -> data.ImageSet:
    return data.cifar10(data.data_root(root), train=True, size=None if sizes == "full" else SIZES[sizes])


@pytest.mark.weekly
def test_batch_sweep(
    benchmark,
    variant,
    batch,
    perfkit_device,
    perfkit_profile,
    perfkit_data_root,
    perfkit_metrics,
    perfkit_memory_cap,
):
    sizes = quick_budget.sizes_key(perfkit_profile.name, perfkit_device.type)
    train = _train_set(sizes, perfkit_data_root)
    try:
        batch_sweep.check_fits_dataset(batch, len(train))
    except UsageError as exc:
        pytest.skip(str(exc))
    loader = variants(sizes)[variant]
    way = "resident" if loader is None else "loader"
    budget = capacity.Budget([perfkit_device], cap_bytes=perfkit_memory_cap)
    epoch, failure = capacity.attempt(
        lambda: batch_sweep.train_epochs(train, batch, way, perfkit_device, loader or batch_sweep.Loader()),
        budget,
    )
    if epoch is None:
        pytest.skip(f"batch {batch} runs out of memory with {budget.room()} ({failure}); "
                    "test_largest_batch finds the largest batch that fits")
    inject_samples(benchmark, [epoch.seconds])
    perfkit_metrics.record(figures.IMAGES_PER_S, epoch.images_per_s)
    perfkit_metrics.record(figures.STEP_MS, samples=[s * 1e3 for s in epoch.step_seconds])
    if epoch.peak_bytes is None:
        perfkit_metrics.absent(
            figures.PEAK_ALLOCATED_MIB, "needs the CUDA allocator's peak; this run is on the CPU"
        )
    else:
        perfkit_metrics.record(figures.PEAK_ALLOCATED_MIB, epoch.peak_bytes / memory.MiB)
    perfkit_metrics.payload(BatchEpoch(
        way, batch_sweep.MODEL, batch, len(train), epoch.steps, epoch.seconds, epoch.images_per_s,
        None if epoch.peak_bytes is None else epoch.peak_bytes / memory.MiB, train.source,
        loader.workers if loader else 0, bool(loader and loader.pin_memory)))


@pytest.mark.weekly
def test_largest_batch(benchmark, perfkit_device, perfkit_profile, perfkit_metrics, perfkit_memory_cap):
    sizes = quick_budget.sizes_key(perfkit_profile.name, perfkit_device.type)
    size = SIZES[sizes]
    on_cpu = perfkit_device.type != "cuda"
    budget = capacity.Budget([perfkit_device], host_bytes=QUICK_BUDGET if on_cpu else None,
                             cap_bytes=perfkit_memory_cap)
    found = capacity.in_fresh_process(batch_sweep.largest_batch, budget, perfkit_device, size,
                                      FIRST[sizes])
    step = batch_sweep.training_step(found.largest, perfkit_device)
    warmup, rounds = STEPS[sizes]
    benchmark.pedantic(step, rounds=rounds, warmup_rounds=warmup)  # past the second step the memory stays put
    del step
    record.record_capacity(perfkit_metrics, found, figures.LARGEST_BATCH, found.largest, budget.fixed)
    cap = None if perfkit_memory_cap is None else round(perfkit_memory_cap / capacity.GiB, 2)
    perfkit_metrics.payload(BatchCapacity(batch_sweep.MODEL, found.largest, found.stopped_by, size, cap,
                                          capacity.probe_records(found), budget.room()))
