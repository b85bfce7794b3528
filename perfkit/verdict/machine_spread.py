"""The minimum effect of a figure whose noise lies between machines of one model, where one run on a machine
the baseline never ran on cannot see its declared one.

Two such noises. A host's: a driver's page work or a core's memory path, measured and said by its benchmark
(MetricRecorder.noise_between_hosts); on the H100 the vector add's CPU references and managed first launches
read one-run MDEs of 13-54% against 5%. A GPU's: GPUs of one model differ in memory speed and clocks, and a
GPU-bound figure's runs in a baseline of many machines say by how much (perfkit.verdict.noise's
between-machine term); on 2026-12-06 the H200 baseline's 55 machines gave one fresh run of the 100 M-element
vector add an SE of 0.79% (0.69% from the GPU's own shift, 0.38% its run-to-run noise) and an MDE of 5.6%
against a 2% minimum effect.
Where that shift alone keeps the MDE above its goal, no count of runs on that GPU sees the declared minimum
effect. Rather than leave such a figure blind, or claim ``unchanged`` within a minimum effect it cannot
see, its minimum effect widens to the smallest whole percent this comparison can see: whose one-run MDE,
from the baseline's noise alone before any common host shift the run shows, fits its goal
(comparison.sharp_goal: 10% for host work, 3% for GPU-bound work, or 1.5 times a wider minimum effect).
``unchanged`` then means unchanged within that, said beside it with its reason, and a change beyond
it is flagged at the printed MDE as often as any (tests/test_machine_spread.py drives the judge through it).
It widens only where the baseline's runs of the figure come from :data:`MIN_HOSTS` machines or more, and
never past :data:`MOST_WIDENED`: a figure that would need more stays at its declared one, weak and listed
so. With fewer machines a figure its benchmark declares so is not judged on a machine they never ran on:
the weekly one-block kernels, judged so against the H200 baseline's runs of two other machines, read
``improved`` -3.3% where the chip had picked a nearer multiprocessor (docs/findings.md, 2026-12-07)."""
from __future__ import annotations

import math
from collections.abc import Mapping

from perfkit.verdict import stats
from perfkit.verdict.comparison import SHARP_GPU_MDE, WEAK_MDE, Reach, sharp_goal
from perfkit.verdict.matching import FigureRuns
from perfkit.verdict.noise import GPU_KIND, UNKNOWN_RUN, FigureNoise, Noise

#: A spread between machines (hosts or GPUs) is read from this many machines' runs at least (the baseline's
#: own, a figure's).
MIN_HOSTS = 3
#: The widest minimum effect a figure is widened to (in whole percents): past it a one-run verdict says too
#: little to be worth one (on 2026-12-06 the H100's widest nightly figure needed 38%; weekly entries of two
#: hosts asked for up to 607%).
MOST_WIDENED = 50


def widening(fig: FigureRuns, noise: Noise, alone: FigureNoise, declared: float, se: float, level: float,
             picked: Reach | None = None,
             machine: str | Mapping[str, float] | None = None) -> tuple[float, str] | str | None:
    """The minimum effect to judge ``fig`` at instead of its ``declared`` one, and why; None where the
    declared one stands; a sentence alone where it is not judged (:func:`unspanned`). ``alone``: its noise
    from the baseline alone, for the ``machine`` the run is on; ``se``: one run's standard error from it
    (log); ``level``: the test's; ``picked``: on a confirmation's second look, what the first look tested:
    its minimum effect is kept as it is, not decided again on the second look's noise."""
    if len(noise.machines.get(fig.benchmark, ())) < MIN_HOSTS:
        return unspanned(fig, noise, machine)
    gpu = noise.kinds.get((fig.benchmark, fig.figure)) == GPU_KIND and alone.between_sd > 0
    if fig.between_hosts:
        reason, least = fig.between_hosts, WEAK_MDE
    elif gpu and (picked is not None or _gpu_shift_blinds(alone, declared, level)):
        reason, least = _between_gpus(fig, noise, alone), SHARP_GPU_MDE
    else:
        return None
    minimum = (round(math.expm1(picked.floor), 9) if picked is not None
               else widened(declared, se, alone.df, level, least))
    if minimum <= declared:
        return None
    return minimum, sentence(reason, declared, minimum, se)


def unspanned(fig: FigureRuns, noise: Noise, machine: str | Mapping[str, float] | None) -> str | None:
    """Why ``fig``, whose noise its benchmark declares to lie between machines, is not judged on this run's
    ``machine`` (or machines): its baseline's runs name fewer than :data:`MIN_HOSTS` machines and this run
    ran on one they never ran on, so their spread says nothing of its shift. None where that does not hold,
    or where either side's machines are unknown (judged as before)."""
    known = noise.machines.get(fig.benchmark, {})
    here = {machine} if isinstance(machine, str) else set(machine or ())
    if (not fig.between_hosts or not known or not here or any(m.startswith(UNKNOWN_RUN) for m in here)
            or here <= set(known) or len(known) >= MIN_HOSTS):
        return None
    machines = f"{len(known)} machine" + ("" if len(known) == 1 else "s")
    return (f"not judged on this machine: {fig.between_hosts}. Its baseline's runs come from {machines}, not "
            f"this one, and a machine's shift is read from {MIN_HOSTS} or more: run it on one of those, or "
            "add runs of other machines to its baseline (perfkit baseline save --append)")


def _gpu_shift_blinds(alone: FigureNoise, declared: float, level: float) -> bool:
    """Whether a GPU-bound figure's shift between GPUs of one model alone (its noise's between-machine term)
    keeps its MDE at the ``declared`` minimum effect above its goal, so that no count of runs on this GPU
    sees that (elsewhere more runs of this code decide)."""
    floor, goal = math.log1p(declared), sharp_goal(declared, SHARP_GPU_MDE)
    return stats.detectable_at_power(floor, alone.between_sd, alone.df, level) > goal


def _between_gpus(fig: FigureRuns, noise: Noise, alone: FigureNoise) -> str:
    """Why a GPU-bound figure's noise lies between GPUs of one model: the shift the baseline's machines put
    on one run of it (the hardware's GPU-bound figures' between-machine share of their variance, applied to
    this figure's run-to-run noise: perfkit.verdict.noise), beside that noise."""
    within = alone.sd * math.sqrt(1 + 1 / max(1, len(fig.baseline)))
    machines = len(noise.machines.get(fig.benchmark, ()))
    return (f"GPUs of one model differ: from the baseline's {machines} machines, this GPU's own shift puts a "
            f"standard error of {math.expm1(alone.between_sd):.1%} on one run (its run-to-run noise "
            f"{math.expm1(within):.1%}), which no count of runs on this GPU narrows")


def widened(declared: float, se: float, df: float, level: float, least: float = WEAK_MDE) -> float:
    """The smallest minimum effect, ``declared`` or wider in whole percents up to :data:`MOST_WIDENED`, whose
    MDE (one run of this code against this baseline: ``se`` and ``df`` of the log shift, tested at
    ``level``) fits its goal (``least`` or 1.5 times it); ``declared`` where it fits already, or where no such
    one does."""
    def fits(percent: int) -> bool:
        minimum = percent / 100
        return stats.detectable_at_power(math.log1p(minimum), se, df, level) <= sharp_goal(minimum, least)

    if not (math.isfinite(se) and math.isfinite(df)) or se <= 0 or df <= 0:
        return declared
    start = math.ceil(round(declared * 100, 6))
    if fits(start) or not fits(MOST_WIDENED):
        return declared
    low, high = start, MOST_WIDENED  # fits(high) and not fits(low): the MDE grows slower than its goal
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if fits(middle) else (middle, high)
    return high / 100


def sentence(reason: str, declared: float, minimum: float, se: float) -> str:
    """Why a figure's minimum effect is ``minimum`` here rather than the ``declared`` one (``se``: one run's
    standard error against the baseline, log)."""
    return (f"minimum effect {minimum:.0%} here, not {declared:.0%}: {reason}; one run against this baseline "
            f"has a standard error of {math.expm1(se):.1%}, and {minimum:.0%} is the smallest whole percent "
            "whose one-run MDE is within 1.5 times it")
