"""Warm a power-limited kernel until the GPU's temperature stops rising, so it is timed at its steady heat.

A tensor-core GEMM draws the card's power limit even at the locked base clock, so the clock it runs at
follows the die's leakage, which follows its temperature. Measured on one H100 (8192³ GEMMs, base clock
locked, 25 rounds of 50 ms after half a second of warm-up): started at 38 °C, tf32 read 3006-3032 µs per
call over six starts (the die heated to 53 °C within the run, and the power controller overshot on the way:
rounds of 2935-3689 µs); started at 61 °C after 20 s of bf16 GEMMs, 3135-3137 µs over three starts, rounds of
3063-3203 µs; bf16 1594-1637 µs cool against 1643-1654 µs hot. A nightly runs the ceilings cool in file order
and hot after training in reverse order, so half a second of warm-up made the figure follow the order (the
baseline's H100 runs: 358-360 TFLOP/s reversed, 367-369 in file order). Warmed until the temperature stops
rising, both orders time the hot steady state: three runs (file, reverse, file order) of one H100 spread
0.4-0.8%, of one H200 0.6-0.8% (tf32: 3.0% and 1.8% before).

At the power limit each card holds the clock its own silicon allows: two H100s read tf32 2.3% apart, fp32
(which does not reach the limit) 1% the other way. So a power-limited kernel gates on its SM cycles per call
(``sm_mcycles``: the time times the mean SM clock NVML read while it was timed), which a card's power draw
does not move and a change of code does; its time and rate are still recorded. What this cannot see is a
change that only draws more power per operation (the card clocks down, the cycles stay): the time and rate
beside it show that, unjudged.
"""
from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from perfkit.errors import HardwareError
from perfkit.measure import power, timing
from perfkit.measure.nvml import device_handle, nvml_open
from perfkit.resultfile import figures
from perfkit.resultfile.metrics import MetricRecorder

#: Each reading of the temperature comes after this much back-to-back work.
SLICE_S = 0.5
#: Steady: no warmer than it was this long ago. NVML reads whole degrees and the die warms in steps, so over
#: 2 s a GEMM on one H100 read "steady" 2-5 °C below its plateau (tf32 1.6% apart over three starts); over 3 s
#: a rise must be slower than about 0.3 °C/s to read as none.
WINDOW_S = 3.0
#: The longest warm-up: an H100 rises from 38 to 61 °C in about 20 s of GEMMs.
LIMIT_S = 30.0
#: How often the SM clock is read while a power-limited kernel is timed (its rounds take about a second).
CLOCK_INTERVAL_S = 0.005
#: A kernel that held its clock through the first slice at under this share of the power limit is not warmed
#: until its heat settles. A held clock alone is not enough: a bf16 GEMM on a cool H200 held 1500 MHz for half
#: a second, then its clock fell to 1440-1500 as the die warmed at the limit.
UNLIMITED_SHARE = 0.85


@dataclass(frozen=True)
class Warmed:
    """How a warm-up went: seconds per call back to back at its end, how long it ran, the GPU's temperature at
    its start and end, and whether that had stopped rising (False: stopped at LIMIT_S; None: NVML could not
    read it, and the warm-up lasted timing.STEADY_CLOCK_S)."""

    seconds_per_call: float
    warmed_s: float
    start_c: int | None = None
    end_c: int | None = None
    steady: bool | None = None

    def as_info(self) -> dict[str, Any]:
        """What a benchmark records of it (``extra_info["heat"]``), so a figure's heat shows beside it."""
        return {"warmed_s": round(self.warmed_s, 2), "start_c": self.start_c, "end_c": self.end_c,
                "steady": self.steady}


@contextmanager
def temperature_reader(device: torch.device) -> Iterator[Callable[[], int] | None]:
    """A reader of ``device``'s GPU temperature in °C for the block (NVMLError where a reading fails), or None
    where NVML cannot read it (no GPU, no driver); NVML is shut down after the block either way."""
    if device.type != "cuda":
        yield None
        return
    with ExitStack() as held:
        try:
            nvml = held.enter_context(nvml_open())
        except HardwareError:
            yield None
            return
        try:
            index = torch.cuda.current_device() if device.index is None else device.index
            handle = device_handle(nvml, index)
            nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)
        except nvml.NVMLError:
            yield None
            return
        yield lambda: int(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))


def warm_until_steady(fn: Callable[[], Any], read_c: Callable[[], int] | None, window_s: float = WINDOW_S,
                      limit_s: float = LIMIT_S, slice_s: float = SLICE_S) -> Warmed:
    """Run ``fn`` back to back until the temperature ``read_c`` gives, read every ``slice_s``, is no higher
    than ``window_s`` ago (at least one window, and one slice; at most ``limit_s``); without a reader, for
    timing.STEADY_CLOCK_S as elsewhere."""
    if read_c is None:
        return Warmed(timing.warm_for(fn), timing.STEADY_CLOCK_S)
    started = time.monotonic()
    start_c = read_c()
    per_call = timing.warm_for(fn, slice_s)
    readings: deque[int] = deque([start_c, read_c()], maxlen=max(2, round(window_s / slice_s) + 1))
    while True:
        elapsed = time.monotonic() - started
        steady = len(readings) == readings.maxlen and readings[-1] <= readings[0]
        if steady or elapsed >= limit_s:
            return Warmed(per_call, elapsed, start_c, readings[-1], steady)
        calls, seconds = timing.run_for(fn, slice_s, per_call)
        per_call = seconds / calls
        readings.append(read_c())


def warmed_calls_per_round(fn: Callable[[], Any], device: torch.device, metrics: MetricRecorder) -> int:
    """timing.warmed_calls_per_round for a kernel that may draw the power limit: on a GPU, unless it held one
    SM clock through a first slice of work at under UNLIMITED_SHARE of the power limit, warmed until its heat
    is steady (recorded as ``extra_info["heat"]``); then the calls that fill timing.MIN_ROUND_S."""
    if device.type != "cuda":
        return timing.warmed_calls_per_round(fn, device)
    with sm_clock(device) as clock:
        per_call = timing.warm_for(fn, SLICE_S)
    limit = power.enforced_limit_w(torch.cuda.current_device() if device.index is None else device.index)
    if (clock.readings > 1 and clock.low_mhz == clock.high_mhz and clock.power_w is not None
            and limit is not None and clock.power_w < UNLIMITED_SHARE * limit):
        # it held one clock for a whole slice, well below the power limit: its heat does not set its speed
        # (fp32 on an H100 read 1590 MHz in each of 250 readings over five runs; tf32 moved between 1335 and
        # 1515), so it is not warmed for the 7-11 s its heat took to settle
        metrics.info("heat", {"warmed_s": SLICE_S, "held_mhz": clock.low_mhz,
                              "power_w": round(clock.power_w)})
        return timing.calls_per_round(per_call)
    with temperature_reader(device) as read_c:
        warmed = warm_until_steady(fn, read_c)
    metrics.info("heat", warmed.as_info())
    return timing.calls_per_round(warmed.seconds_per_call)


@dataclass
class ClockWindow:
    """The SM clock over a timed block (filled in when it ends): mean, lowest and highest reading in MHz, how
    many readings, and the block's mean power; no mean where NVML could not read it."""

    mean_mhz: float | None = None
    low_mhz: float | None = None
    high_mhz: float | None = None
    readings: int = 0
    power_w: float | None = None  # the block's mean power (energy over time)

    def as_info(self) -> dict[str, Any]:
        """What a benchmark records of it (``extra_info["sm_clock"]``)."""
        mean = None if self.mean_mhz is None else round(self.mean_mhz, 1)
        return {"mean_mhz": mean, "low_mhz": self.low_mhz, "high_mhz": self.high_mhz,
                "readings": self.readings}


@contextmanager
def sm_clock(device: torch.device, interval_s: float = CLOCK_INTERVAL_S) -> Iterator[ClockWindow]:
    """Read ``device``'s SM clock every ``interval_s`` during the block; the yielded window holds the
    readings' mean when it ends, and none on a CPU or where NVML cannot read it (then the time gates)."""
    window = ClockWindow()
    if device.type != "cuda" or power.unavailable_reason() is not None:
        yield window
        return
    sampler = power.PowerSampler(torch.cuda.current_device() if device.index is None else device.index,
                                 interval_s)
    try:
        sampler.__enter__()
    except power.SamplingError:
        yield window
        return
    try:
        yield window
    except BaseException:
        sampler.__exit__(*sys.exc_info())
        raise
    try:
        sampler.__exit__(None, None, None)
    except power.SamplingError:
        return
    clocks = [r.sm_clock_mhz for r in sampler.trace.readings]
    window.mean_mhz, window.readings = sampler.trace.mean("sm_clock_mhz"), len(clocks)
    window.low_mhz, window.high_mhz = min(clocks), max(clocks)
    window.power_w = sampler.trace.avg_power_w


def gate_on_cycles(metrics: MetricRecorder, seconds_per_call: Sequence[float], clock: ClockWindow) -> None:
    """Record each round's SM cycles per call (its seconds times the window's mean clock) and gate on them
    (see the module docstring); where no clock was read, the time stays the gate."""
    if not clock.mean_mhz or not seconds_per_call:  # no reading (or a clock of 0 MHz): no cycles to count
        return
    metrics.info("sm_clock", clock.as_info())
    mhz = clock.mean_mhz
    metrics.record(figures.SM_MCYCLES, samples=[s * mhz for s in seconds_per_call])  # s·MHz = Mcycles
    metrics.gate_on(figures.SM_MCYCLES)
