"""Whether a baseline's figures that are heavy-tailed on their own are heavier than their kind's other
figures would show by chance: the rule a kind's tail read (perfkit.verdict.noise.kind_tails) would need
before it left them out (docs/findings.md, 2026-12-07, midday). Leaving every such figure out reads the rest
too light where all of them share a heavy tail (Student's t4 on twelve figures of 30 runs: the unflagged ones
read t9.7); this asks, as Rosner's generalized ESD test asks of outliers, step by step from the heaviest:
read the kind's tails without the i heaviest, and the chance that any of the m - i + 1 figures left would show
the i-th's kurtosis (its runs' predictive z, noise.predictive_z) under Student's t at that read, drawn
DRAWS times (seeded). The figures it would leave out are the heaviest i* with the largest i whose chance
is below 5%.

    python experiments/heavy_beyond_chance.py baselines/nvidia-h200-x1.json [DRAWS]
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from perfkit.resultfile import load
from perfkit.verdict.noise import GPU_KIND, HOST_KIND, TAIL_RUNS, Noise, kind_tails, predictive_z
from perfkit.verdict.noise import excess_kurtosis as kurtosis_of

LEVEL = 0.05


class Step(NamedTuple):
    figure: tuple[str, str]
    kurtosis: float  # its runs' predictive z's excess kurtosis, less normal noise's 6 / (n - 6)
    runs: int
    rest_df: float  # the kind's tails read without it and the heavier ones
    chance: float  # that any of the figures left shows as much under Student's t at rest_df


def own_kurtosis(logs: tuple[float, ...]) -> float | None:
    """The excess kurtosis of ``logs``' predictive z, less the 6 / (n - 6) normal noise gives it, as the
    kind's read weighs a figure; None where they say nothing of tails (noise.predictive_z)."""
    z = predictive_z(logs)
    return None if not z else (kurtosis_of(z) or 0.0) - 6 / (len(z) - 6)


def kurtoses(x: np.ndarray) -> np.ndarray:
    """:func:`own_kurtosis` of each row of ``x`` at once (noise.predictive_z and excess_kurtosis over a
    matrix)."""
    runs = x.shape[1]
    c = x - x.mean(axis=1, keepdims=True)
    squares = (c * c).sum(axis=1, keepdims=True)
    z = c * runs / (runs - 1) / np.sqrt((squares - c * c * runs / (runs - 1)) / (runs - 2))
    z = z - z.mean(axis=1, keepdims=True)
    return (z**4).mean(axis=1) / (z**2).mean(axis=1) ** 2 - 3 - 6 / (runs - 6)


def chance_per_figure(kurtosis: float, runs: int, df: float, draws: int, rng: np.random.Generator) -> float:
    """How often ``runs`` draws of Student's t at ``df`` (normal where infinite) show an :func:`own_kurtosis`
    of ``kurtosis`` or more."""
    x = rng.standard_normal((draws, runs)) if math.isinf(df) else rng.standard_t(df, (draws, runs))
    return float((kurtoses(x) >= kurtosis).mean())


def steps(noise: Noise, gating: set[tuple[str, str]], kind: str, draws: int = 4000,
          seed: int = 0) -> list[Step]:
    """One step per figure of ``kind`` heavy-tailed on its own (noise.heavy) with TAIL_RUNS runs or more,
    heaviest first."""
    rng = np.random.default_rng(seed)
    figures = [k for k in gating if noise.kinds.get(k) == kind and len(noise.runs[k]) >= TAIL_RUNS]
    read = sorted(((own, k) for k in figures if (own := own_kurtosis(noise.runs[k])) is not None),
                  reverse=True)
    heavy = [(own, key) for own, key in read if key in noise.heavy]
    out: list[Step] = []
    for i, (own, key) in enumerate(heavy, start=1):
        left_out = {k for _, k in heavy[:i]}
        tails = kind_tails(noise.runs, noise.kinds, gating - left_out, set(), kind)
        df = next(iter(tails.values()), math.inf)
        q = chance_per_figure(own, len(noise.runs[key]), df, draws, rng)
        out.append(Step(key, own, len(noise.runs[key]), df, 1 - (1 - q) ** (len(read) - i + 1)))
    return out


def left_out(found: list[Step]) -> int:
    """How many of the heaviest the rule leaves out: the largest i whose chance is below LEVEL."""
    return max((i for i, s in enumerate(found, start=1) if s.chance < LEVEL), default=0)


def main(args: list[str]) -> None:
    baseline = load.load(args[0])
    noise = Noise.of(baseline)
    entries = baseline.by_name()
    gating = {k for k in noise.runs if k[1] in entries[k[0]].gating_figures()}
    for kind in (GPU_KIND, HOST_KIND):
        found = steps(noise, gating, kind, int(args[1]) if len(args) > 1 else 4000)
        print(f"{kind}: {len(found)} heavy on their own; beyond chance, the heaviest {left_out(found)}")
        for s in found:
            print(f"    {s.kurtosis:6.2f} over {s.runs} runs, the rest read t{s.rest_df:.2f}: chance "
                  f"{s.chance:.3f}  {s.figure[0].split('::')[-1]} {s.figure[1]}")


if __name__ == "__main__":
    from script_line import run

    run(__doc__, main, least=1, most=2)
