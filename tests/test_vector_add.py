from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfkit.errors import UsageError
from perfkit.resultfile import load
from perfkit.workloads import kernels

vector_add = pytest.importorskip("perfkit.workloads.kernels.vector_add", reason="numba-cuda is not installed")


@pytest.mark.slow
def test_kernels_are_correct_under_the_cuda_simulator():
    """A separate process, so NUMBA_ENABLE_CUDASIM=1 is set before numba is imported."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    done = subprocess.run(check=False, args=[sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(Path(__file__).parent / "cudasim")],
                          capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "failed" not in done.stdout


@pytest.mark.parametrize("scenario, n, shape", [
    ("one_thread", 10**8, (1, 1)),
    ("one_block", 10**8, (1, 256)),
    ("grid", 1, (1, 256)),
    ("grid", 256, (1, 256)),
    ("grid", 257, (2, 256)),
    ("grid", 10**8, (390625, 256)),
    ("tuned", 10**8, (132 * vector_add.BLOCKS_PER_SM, 256)),
    ("tuned", 1000, (1, 256)),
])
def test_launch_shapes(scenario, n, shape):
    assert vector_add.launch_shape(scenario, n, sm_count=132) == shape


def test_the_full_grid_has_one_thread_per_element_or_more():
    for n in (1, 255, 256, 257, 5_000_001):
        blocks, threads = vector_add.launch_shape("grid", n, 132)
        assert n <= blocks * threads < n + threads


def test_an_unknown_scenario_lists_the_valid_ones():
    with pytest.raises(UsageError, match="one_thread"):
        vector_add.launch_shape("warp", 10, 1)


@pytest.mark.parametrize("k, n", [(1, 1_000_000), ("5", 5_000_000), (0.5, 500_000), (100, 100_000_000)])
def test_k_in_millions(k, n):
    assert kernels.elements(k) == n


@pytest.mark.parametrize("k", [0, -1, "ten", None, float("nan"), 1e-9])
def test_bad_k_is_a_clear_error(k):
    with pytest.raises(UsageError, match="K"):
        kernels.elements(k)


@pytest.mark.parametrize(("mode", "scenario", "over_its_copy", "minimum"), [
    ("managed_first", "grid", False, 0.15), ("managed_first", "one_block", False, 0.15),
    ("managed_first", "one_thread", False, 0.05),  # the thread's pace: 1.2% over 36 H200 runs, not the pages
    ("managed_first", "one_block", True, 0.05),  # over one multiprocessor's copy of its pages: 1.3-1.4%
    ("managed_first", "grid", True, 0.05),  # over a grid's touch: 1.6-2.4% at 1 M, 0.6-0.9% at 100 M
    ("managed_warm", "grid", False, 0.05), ("explicit", "one_thread", False, None)])
def test_a_first_launch_on_managed_memory_declares_a_wide_minimum_effect_where_page_work_is_its_time(
        mode, scenario, over_its_copy, minimum):
    assert kernels.managed_minimum_effect(mode, scenario, over_its_copy) == minimum


@pytest.mark.parametrize(("mode", "scenario", "fits_l2", "over_its_copy", "reason"), [
    ("cpu", "cpu_loop", False, False, kernels.HOST_COPY_BETWEEN_HOSTS),
    ("managed_first", "one_block", False, True, kernels.PAGE_WORK_BETWEEN_HOSTS),
    ("managed_first", "tuned", True, False, kernels.PAGE_WORK_BETWEEN_HOSTS),
    ("managed_first", "one_thread", False, False, kernels.ONE_THREAD_BETWEEN_HOSTS),  # its pace, not pages
    ("explicit", "grid", True, False, kernels.SHORT_KERNEL_BETWEEN_HOSTS),
    ("managed_warm", "tuned", True, False, kernels.SHORT_KERNEL_BETWEEN_HOSTS),
    # one block timed alone (the weekly's middle sizes) is its multiprocessor's pace; over a copy on that
    # multiprocessor (the nightly's sizes) it is the kernel's own
    ("explicit", "one_block", False, False, kernels.ONE_BLOCK_BETWEEN_HOSTS),
    ("managed_warm", "one_block", False, False, kernels.ONE_BLOCK_BETWEEN_HOSTS),
    ("explicit", "grid", False, False, None), ("managed_warm", "one_block", False, True, None),
    ("explicit", "one_block", True, True, None)])
def test_the_figures_whose_noise_lies_between_hosts_say_so_and_the_gpu_paced_kernels_do_not(
        mode, scenario, fits_l2, over_its_copy, reason):
    assert kernels.between_hosts_reason(mode, scenario, fits_l2, over_its_copy) == reason


@pytest.mark.parametrize(("extra", "reason"), [
    # saved before the vector add declared it: today's rule speaks for the stored case
    ({"vector_add": {"scenario": "grid", "mode": "explicit", "k": 1}}, kernels.SHORT_KERNEL_BETWEEN_HOSTS),
    ({"vector_add": {"scenario": "grid", "mode": "explicit", "k": 100}}, None),
    ({"vector_add": {"scenario": "one_block", "mode": "explicit", "k": 10}}, kernels.ONE_BLOCK_BETWEEN_HOSTS),
    # over its multiprocessor's copy one block is the kernel's own, whatever an older run declared
    ({"vector_add": {"scenario": "one_block", "mode": "managed_warm", "k": 1}, "gate": "over_one_sm_copy",
      "between_hosts": kernels.ONE_BLOCK_BETWEEN_HOSTS}, None),
    # another benchmark's declaration is its own
    ({"between_hosts": "its own reason"}, "its own reason"), ({}, None)])
def test_a_stored_entry_is_read_with_todays_declaration_of_its_noise_between_hosts(extra, reason):
    assert kernels.between_hosts_now(extra) == reason


@pytest.mark.slow
def test_the_cpu_references_record_why_their_noise_lies_between_hosts(tmp_path):
    """Run on this machine's CPU through pytest-benchmark: the result file carries the declaration the judge
    widens their minimum effect by (perfkit.verdict.machine_spread)."""
    out = tmp_path / "cpu.json"
    subprocess.run([sys.executable, "-m", "pytest", "benches/test_vector_add.py", "-q", "-k",
                    "cpu_loop and K1", "-m", "not weekly", "--perfkit-baseline=none",
                    f"--benchmark-json={out}", "-p", "no:cacheprovider"], check=True, capture_output=True,
                   cwd=Path(__file__).parent.parent)
    entries = load.load(out).benchmarks
    assert entries and all(e.context.between_hosts == kernels.HOST_COPY_BETWEEN_HOSTS for e in entries)
