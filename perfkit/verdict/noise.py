"""Each gating figure's run-to-run noise, from every run kept for the hardware, pooled by empirical Bayes.

One nightly run is judged against the runs its hardware already has: the baseline's runs (each a fresh
process) and, where pytest-benchmark keeps them, the runs since the figure's last change point. Three
baseline runs alone leave a t-test 2 degrees of freedom, whose quantile after correcting for 67 figures is
about 36: a 1%-noise copy could not show a 50% slowdown. So each figure's variance borrows strength from the
other figures of its machine, as limma's moderated t does (Smyth 2004, "Linear models and empirical Bayes
methods for assessing differential expression"): the figures' variances are taken as scaled inverse-chi-
squared draws around a prior ``s0²`` with ``d0`` degrees of freedom, fitted by the method of moments on log
variances, and each figure's variance is moderated to ``(d0·s0² + d·s²) / (d0 + d)`` with ``d0 + d``
degrees of freedom. A figure with few runs then has almost the prior's precision; one truly noisier keeps
most of its own.

The figures of one machine are far from alike (a 4 GiB copy repeats within 0.1%, a first touch of managed
memory moves 15%), so the prior is a trend, as limma-trend's: ``log s0²`` is linear in the log of the
figure's dispersion *within* a run (IQR over median of its rounds), which is measured apart from the
between-run noise and predicts it (r = 0.81 on an H200, 0.88 on an H100, slope about 0.9 in log-log, over
the committed baselines; none on a shared 2-vCPU VM, where the fit finds no slope and the prior is flat).
Allocator peaks and counts, which have no rounds, share a flat prior of their own kind.

A baseline measured on other machines of the same kind adds a between-machine term where its runs carry the
machine they ran on and come from several: the one-way random-effects component of the time, as a ratio to the
run-to-run variance on one machine pooled over the figures of each kind (over every kind where a kind has no
benchmark run on two machines), applied to each figure in proportion to its own noise (a launch-bound step
that moves 15% between runs shifts about as much between machines; a one-thread kernel that repeats within 1%
hardly), and to the machines of both sides: the baseline's mean holds each of its machines' shifts in
proportion to its runs, the current side's too (replicates of several hosts: :func:`machine_shares`,
:meth:`Noise.machine_mix`). It is zero when both sides ran on one machine (each benchmark's runs name their
machines: a merged baseline holds entries of different runs). A figure's variance over runs of several
machines holds part of their shifts too, so it is read as run-to-run only after that part is taken out
(``Noise.run_to_run``: its expected share from the ratio and how its runs, the kept ones beside the
baseline's, fall on machines, with the degrees of freedom that layout is worth), before the prior is fitted
and the current side's replicates pool in; not where the ratio is assumed or rests on few benchmarks (there
the term errs wide); runs of unknown machine are placed where that leaves the most of the variance.
Counted twice, held-out H200 machines' changes spread 0.79 of their standard errors (docs/findings.md,
2026-12-05).

How others estimate noise (docs/verdict.md says more): asv and rustc-perf look at each benchmark's own recent
samples; conbench and Bencher take each benchmark's history in a lookback window (Bencher's t-test threshold
is this prediction interval, without the pooling); Perfherder compares means of retriggers with a t-test;
Otava finds change points and compares the segments. None pools across benchmarks; pooling is what makes
one nightly run sensitive here.
"""
from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from perfkit.resultfile.figures import SM_MCYCLES, TIME
from perfkit.resultfile.metrics import relative_iqr
from perfkit.resultfile.model import BenchmarkEntry, Figures, ResultSet
from perfkit.verdict import stats
from perfkit.verdict.prior import MIN_FIGURES, FigureVariance, Prior, fit_robust, moderate

#: A figure whose own runs are this heavy-tailed (sample excess kurtosis of its log values, over at least
#: KURTOSIS_RUNS runs) keeps its own variance: the prior's tails would understate how far it jumps.
HEAVY_TAIL_KURTOSIS = 2.0
KURTOSIS_RUNS = 8
#: Host work's tests read Student's t with at most this many degrees of freedom: its tails are heavy by
#: mechanism (a launch that lands in one of two modes per process, a neighbour's burst; the committed
#: baselines' host-bound residuals show an excess kurtosis of 1.5-3, t with 6-8 degrees of freedom), and a
#: few runs per figure cannot tell a heavy tail from a wide spread: with Student's t3 noise on the host-bound
#: figures one run falsely flagged 13-16% of simulated nights at the normal tails' quantile.
HOST_TAIL_DF = 5.0
#: Unless many runs show lighter tails: a host figure with this many runs of its own and no heavy tail of its
#: own is tested with the tails that its kind's such figures show together (:func:`kind_tails`). On
#: 2026-12-03 the H200 baseline's 13 host figures with 24-37 runs had sample excess kurtoses of -1.1 to 0.9
#: and no run beyond 2.8 SDs: a t5 tail made a 1.2% spread an MDE of 12%. A GPU-bound figure is tested with
#: its kind's tails from as many runs on (with fewer, normal tails and the judge's wider 3% minimum effect
#: guard it): nights whose every figure was Student's t4 against 25 runs flagged 13.0% under normal tails.
TAIL_RUNS = 20
#: The pooled excess kurtosis is taken this many standard errors above its estimate (the larger of a
#: jackknife's over the figures and normal theory's sqrt(24/N) over N runs) and read as Student's t's
#: (6 / (df - 4)), never heavier than HOST_TAIL_DF allows.
TAIL_MARGIN_SE = 2.0
#: A log spread below this is a figure that does not vary: it says nothing of tails.
STILL = 1e-9
#: The noise kind of a timed figure that holds the host's work (the judge's common host shift reads it).
HOST_KIND = "timed-host"
GPU_KIND = "timed-gpu"
#: The variance of a machine's shift over a figure's run-to-run variance on one machine, per kind of timed
#: figure, that a run on a machine its baseline never ran on is judged with where no benchmark of the
#: baseline ran on two machines, so that none could be measured (a baseline saved on one machine: a laptop's
#: own, a multi-GPU one of one lent host). At least the largest the committed single-GPU baselines measured
#: over 24-77 machines (2026-12-05, between over within): host work 0.20 (H200) and 0.33 (H100), GPU work 3.3
#: (H200) and 1.1 (H100): a GPU-bound figure differs more between two GPUs of one model than between runs on
#: one. Taken as 0, a run of another machine against one machine's five runs, each figure shifted by its own
#: spread, falsely flagged 28% of simulated nights.
UNMEASURED_BETWEEN_RATIO: Mapping[str, float] = {HOST_KIND: 0.4, GPU_KIND: 3.5}
#: A kind's between-machine ratio takes the machines' shifts out of its figures' variances only where it was
#: measured on at least this many benchmarks (Noise.run_to_run; elsewhere the term errs wide).
MIN_RATIO_BENCHMARKS = 10



@dataclass(frozen=True)
class FigureNoise:
    """What a test of one figure uses: the moderated SD of log run values, its degrees of freedom, the
    between-machine SD to add when the two sides ran on different machines, and where it came from;
    ``tail_df``: the most degrees of freedom it is tested with however many runs (host work's heavy tails,
    :data:`HOST_TAIL_DF`, or where it has :data:`TAIL_RUNS` runs its kind's tails); ``tails_shown``: its tails
    were read so, from TAIL_RUNS runs of its own that are not heavy-tailed (a GPU-bound figure's minimum
    effect narrows to the judge's Policy.bound_threshold_shown there)."""

    sd: float
    df: float
    between_sd: float = 0.0
    source: str = ""
    tail_df: float = math.inf
    tails_shown: bool = False


#: How :func:`machine_shares` names a run of unknown machine.
UNKNOWN_RUN = "unknown run"


def machine_shares(current: ResultSet) -> dict[str, dict[str, float]]:
    """Per benchmark of ``current``, each machine's share of its runs: one machine for a run, several for
    replicates of a fleet's hosts judged together (the file names the last one's only). A run of unknown
    machine counts as a machine of its own, one the baseline never ran on: the cautious side."""
    out = {}
    for name, runs_of in current.origins().items():
        held = Counter(origin.machine or f"{UNKNOWN_RUN} {i}" for i, origin in enumerate(runs_of))
        out[name] = {machine: count / len(runs_of) for machine, count in held.items()}
    return out


def noise_kind(bench: BenchmarkEntry, figure: str, gpu_bound: bool | None = None) -> str:
    """Allocator peaks and counts apart from timed figures, and the timed figures of GPU-bound benchmarks
    (declared so by the current code, ``gpu_bound``, else by ``bench``) apart from the rest: the two are
    different populations (a GPU-bound step repeats within a fraction of a percent, a launch-bound one can
    shift 50% in one run), and one prior for both let a launch-bound figure with three tight runs borrow the
    GPU's precision and cry wolf."""
    metric = bench.metrics.get(figure)
    if metric is not None and metric.unit == "MiB":
        return "memory"
    if metric is not None and not metric.samples and float(metric.value).is_integer():
        return "count"
    declared = bench.context.gpu_bound if gpu_bound is None else gpu_bound
    # a benchmark that gates on another figure than its time is GPU-bound in that figure only: the vector
    # add's whole program holds pageable host copies, PPP b1's eager forward and layers-over-model ratio the
    # host's launches (its CUDA-graph replay gates)
    gate = bench.context.gate or TIME
    # a gate computed from the time is the same GPU work: the GEMMs gate on their SM cycles (the round time
    # times the clock), and a run that read no clock is judged on the time. A gate timed apart is not: the
    # warm managed launch's time is the host's round (dispatch and synchronisation, 6% between runs on an
    # H100) around the kernel it gates on, and pooled with the GPU's times its variance, 50 times theirs,
    # decided their between-machine share alone (0.61 read 0.0 once its runs came from four machines)
    gpu_time = figure == TIME and gate == SM_MCYCLES.name
    return GPU_KIND if declared and (gate == TIME or figure == gate or gpu_time) else HOST_KIND


def round_samples(bench: BenchmarkEntry, figure: str) -> Sequence[float]:
    """A figure's values within one run: its rounds (the time) or its samples."""
    if figure == TIME:
        return bench.samples
    return bench.metrics[figure].samples if figure in bench.metrics else ()


def round_spread(bench: BenchmarkEntry, figure: str) -> float | None:
    """A figure's relative IQR within one run (its rounds, or its samples); None without four."""
    samples = round_samples(bench, figure)
    if len(samples) < 4 or min(samples) <= 0:
        return None
    return relative_iqr(samples)


def dispersion(bench: BenchmarkEntry, figure: str) -> float | None:
    """The log of round_spread; None where it is unknown or zero."""
    spread = round_spread(bench, figure)
    return math.log(spread) if spread else None



@dataclass(frozen=True)
class Noise:
    """Every figure's reference runs (log values), its kind and covariate, and the fitted prior of each kind.

    Build it with :meth:`of`; the judge asks :meth:`of_figure` with the current side's runs.
    """

    runs: Mapping[tuple[str, str], tuple[float, ...]] = field(default_factory=dict)
    kinds: Mapping[tuple[str, str], str] = field(default_factory=dict)
    covariates: Mapping[tuple[str, str], float | None] = field(default_factory=dict)
    priors: Mapping[str, Prior] = field(default_factory=dict)
    outliers: frozenset[tuple[str, str]] = frozenset()  # figures noisier than their prior: their own variance
    # the between-machine variance of log time over the run-to-run variance on one machine, where the
    # reference runs came from several machines: over every kind, and per kind of figure where that kind has
    # its own; None where no benchmark's runs came from two machines (UNMEASURED_BETWEEN_RATIO then)
    between_ratio: float | None = None
    between_ratio_by_kind: Mapping[str, float] = field(default_factory=dict)
    # per benchmark, the machines its reference runs came from, each with its count of them (none where
    # unknown)
    machines: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    # the tails of timed figures with TAIL_RUNS runs, read from their kind's such figures
    tails: Mapping[tuple[str, str], float] = field(default_factory=dict)
    source: str = ""
    # gating figures whose own runs are heavy-tailed (HEAVY_TAIL_KURTOSIS): also among the outliers
    heavy: frozenset[tuple[str, str]] = frozenset()
    # per timed figure whose runs name their machines (runs of unknown machine placed as _run_to_run says),
    # the part of its variance over them that is run-to-run (that variance holds their shifts too) and the
    # degrees of freedom it is worth (stats.spread_over_groups); only where its kind's between-machine ratio
    # rests on MIN_RATIO_BENCHMARKS benchmarks: a ratio from three reads anywhere from 0.4 to 9 where it is
    # 3.3, and deflating by one assumed (UNMEASURED_BETWEEN_RATIO) read SEs 1.8 times too narrow where the
    # machines did not differ
    run_to_run: Mapping[tuple[str, str], tuple[float, float]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        baseline: ResultSet,
        kept: Iterable[ResultSet] = (),
        stored: ResultSet | None = None,
        gpu_bound: Mapping[str, bool] | None = None,
    ) -> Noise:
        """The noise of ``baseline``'s hardware: its own runs, the ``kept`` runs of that hardware and profile
        (pytest-benchmark's storage, from each benchmark's last change point on), and where the baseline holds
        a single run, ``stored`` (the baseline kept in baselines/ for that hardware) in its place.
        ``gpu_bound``: per benchmark the current code runs, whether it declares it GPU-bound (a baseline
        saved before a declaration was added, or withdrawn, carries the old one)."""
        reference = baseline if baseline.info.runs or stored is None else stored
        entries = reference.by_name()
        origins = {name: tuple(o.machine for o in runs_of) for name, runs_of in reference.origins().items()}
        stored_runs = reference.runs()
        runs, placed = _reference_runs(reference, stored_runs, origins)
        for name, (figures, machines_kept) in _since_last_change(kept, set(reference.info.run_dates),
                                                                 entries).items():
            for figure, values in figures.items():
                runs[name, figure] += values
                placed[name, figure] += machines_kept
        keys = [key for key in runs if key[0] in entries]
        declared = gpu_bound or {}
        kinds = {key: noise_kind(entries[key[0]], key[1], declared.get(key[0])) for key in keys}
        covariates = {key: dispersion(entries[key[0]], key[1]) for key in keys}
        logs = {key: tuple(math.log(v) for v in runs[key]) for key in keys}
        gating = {key for key in keys if key[1] in entries[key[0]].gating_figures()}
        time_kinds = {name: kind for (name, figure), kind in kinds.items() if figure == TIME}
        ratio, by_kind, measured_on = _between_machines(stored_runs, origins, time_kinds)
        trusted = {kind: r for kind, r in by_kind.items() if measured_on[kind] >= MIN_RATIO_BENCHMARKS}
        parts = {key: _run_to_run(placed[key], len(runs[key]), trusted[kinds[key]])
                 for key in keys if kinds[key] in trusted}
        run_to_run = {key: part for key, part in parts.items() if part is not None}
        priors, outliers = _priors(logs, kinds, covariates, gating, run_to_run)
        heavy = {key for key in gating if len(logs[key]) >= KURTOSIS_RUNS
                 and (excess_kurtosis(logs[key]) or 0.0) > HEAVY_TAIL_KURTOSIS}
        # a GPU-bound figure's tails are read where they let its minimum effect narrow, not where its
        # benchmark declares its own (there a tail read with the margin it needs would only widen the MDE)
        tails = kind_tails(logs, kinds, gating, heavy, HOST_KIND) | {
            key: df for key, df in kind_tails(logs, kinds, gating, heavy, GPU_KIND).items()
            if entries[key[0]].context.tolerance is None}
        machines = {name: Counter(m for m in ms if m) for name, ms in origins.items()}
        return cls(logs, kinds, covariates, priors, frozenset(outliers | heavy), ratio, by_kind, machines,
                   tails, reference.source, frozenset(heavy), run_to_run)

    def _moderated(self, key: tuple[str, str], current: tuple[float, ...] = ()) -> tuple[float, float] | None:
        """The SD (log) and degrees of freedom of ``key``'s own runs (and the ``current`` side's logs),
        moderated by its kind's prior; None where nothing is known."""
        own = self.runs.get(key, ())
        sides = [(statistics.variance(side), scale, side_df) for side, (scale, side_df) in (
            (own, self.run_to_run.get(key, (1.0, len(own) - 1))), (current, (1.0, len(current) - 1)))
            if len(side) > 1]
        df = sum(side_df for _, _, side_df in sides)
        s2 = sum(var * scale * side_df for var, scale, side_df in sides) / df if df else 0.0
        prior = None if key in self.outliers else self.priors.get(self.kinds.get(key, ""))
        if prior is None:
            return (math.sqrt(s2), float(df)) if df else None
        var, dof = moderate(s2, df, prior.s2(self.covariates.get(key)), prior.df)
        return math.sqrt(var), dof

    def machine_mix(self, benchmark: str, current_machine: str | Mapping[str, float] | None) -> float:
        """How many times a machine's shift variance the difference between the two sides holds: the
        current side's mean of its machines' shifts (one machine, or each machine's share of its runs:
        replicates of a fleet's hosts) less the baseline's, each weighted by its runs and each machine's
        shift drawn apart. 0 where both sides ran on one machine or a side's machines are unknown; 1 + (the
        baseline's concentration) for one machine the baseline never ran on (2 against one machine)."""
        shares = self._shares(benchmark)
        current = {current_machine: 1.0} if isinstance(current_machine, str) else current_machine
        if not current or not shares:
            return 0.0
        return sum((current.get(m, 0.0) - shares.get(m, 0.0)) ** 2 for m in current.keys() | shares.keys())

    def _shares(self, benchmark: str) -> dict[str, float]:
        """Each machine's share of ``benchmark``'s reference runs."""
        counts = self.machines.get(benchmark, {})
        runs = sum(counts.values())
        return {m: n / runs for m, n in counts.items()}

    def of_figure(self, benchmark: str, figure: str, current: Sequence[float] = (),
                  current_machine: str | Mapping[str, float] | None = None) -> FigureNoise | None:
        """The noise to test ``figure`` of ``benchmark`` with: its own reference runs pooled with the current
        side's several runs (``current``, raw values), moderated by its kind's prior at its covariate; None
        where nothing is known (no runs of its own and no prior)."""
        key = (benchmark, figure)
        own = self.runs.get(key, ())
        moderated = self._moderated(key, tuple(math.log(v) for v in current if v > 0))
        if moderated is None:
            return None
        sd, dof = moderated
        # not read from the kind: host work's t5; a GPU-bound figure's normal tails, but t5 where TAIL_RUNS
        # runs or more show a heavy tail of its own
        kind = self.kinds.get(key)
        heavy_gpu = kind == GPU_KIND and key in self.heavy and len(own) >= TAIL_RUNS
        tails = self.tails.get(key, HOST_TAIL_DF if kind == HOST_KIND or heavy_gpu else math.inf)
        dof = min(dof, tails)
        prior = None if key in self.outliers else self.priors.get(self.kinds.get(key, ""))
        ratio = _ratio_of(kind or "", self.between_ratio, self.between_ratio_by_kind)
        # estimated on the times, applied to every timed figure and ratio in proportion to its own noise: a
        # launch-bound step's kernel time or layers-over-model ratio moves with the host as its time does,
        # and a figure that hardly moves between runs hardly moves between machines
        mix = self.machine_mix(benchmark, current_machine) if (kind or "").startswith("timed") else 0.0
        between = math.sqrt(ratio * mix) * sd
        source = f"{len(own)} kept run(s)" + (f", pooled (d0 {prior.df:.3g})" if prior else "")
        return FigureNoise(sd, dof, between, source, tails, key in self.tails and kind == GPU_KIND)


def _reference_runs(reference: ResultSet, stored: Mapping[str, Figures],
                    origins: Mapping[str, tuple[str, ...]],
                    ) -> tuple[dict[tuple[str, str], list[float]], dict[tuple[str, str], Counter[str]]]:
    """Per figure, the positive values of ``reference``'s runs (``stored``: its ResultSet.runs), and the
    machines they came from (unknown ones as "", where the runs are: ResultSet.figure_positions, a figure a
    run left out is not there)."""
    runs: dict[tuple[str, str], list[float]] = defaultdict(list)
    placed: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for bench in reference.benchmarks:
        name, machines = bench.fullname, origins.get(bench.fullname, ())
        positions = reference.figure_positions(bench)
        for figure, values in stored[name].items():
            at = positions.get(figure, ())
            kept = [(v, at[i] if i < len(at) else -1) for i, v in enumerate(values) if v > 0]
            runs[name, figure] += [v for v, _ in kept]
            placed[name, figure] += Counter(machines[i] or "" if 0 <= i < len(machines) else ""
                                            for _, i in kept)
    return runs, placed


def _since_last_change(kept: Iterable[ResultSet], skip_dates: set[str], entries: Mapping[str, BenchmarkEntry],
                       ) -> dict[str, tuple[dict[str, list[float]], Counter[str]]]:
    """Per benchmark, the values of each figure of the kept runs since that benchmark's last change point in
    time, among those since it was last measured another way (a figure's method version or its SM clock
    lock changed: another series, perfkit.resultfile.figures.METHODS), and only where that series is the one
    its baseline entry (``entries``) measured, with the machines they ran on (unknown ones as ""); runs
    whose date a baseline already holds are left out (they are in it)."""
    from perfkit.verdict.changepoints import breaks, change_points

    runs = [r for r in kept if r.datetime not in skip_dates]
    out: dict[str, tuple[dict[str, list[float]], Counter[str]]] = {}
    names = {b.fullname for r in runs for b in r.benchmarks}
    for name in names:
        holding = [(r.info.machine or "", r.by_name()[name]) for r in runs if name in r.by_name()]
        holding = holding[max([0, *breaks([(b.methods, b.clock_lock) for _, b in holding])]):]
        entry = entries.get(name)
        if entry is not None and holding and (holding[-1][1].methods, holding[-1][1].clock_lock) != (
                entry.methods, entry.clock_lock):
            continue  # kept runs of another series than the baseline's: their spread is not its
        times = [b.median for _, b in holding]
        points = change_points(times) if len(times) >= 4 and min(times) > 0 else []
        start = points[-1].index if points else 0
        figures: dict[str, list[float]] = {}
        for _, bench in holding[start:]:
            for figure, value in bench.figures().items():
                if value > 0:
                    figures.setdefault(figure, []).append(value)
        if figures:
            out[name] = (figures, Counter(machine for machine, _ in holding[start:]))
    return out



def _priors(logs: Mapping[tuple[str, str], tuple[float, ...]], kinds: Mapping[tuple[str, str], str],
            covariates: Mapping[tuple[str, str], float | None], gating: set[tuple[str, str]],
            run_to_run: Mapping[tuple[str, str], tuple[float, float]],
            ) -> tuple[dict[str, Prior], set[tuple[str, str]]]:
    """A prior per kind, fitted on the gating figures with two or more runs (figures derived from the time
    would count its noise again) by their run-to-run variances (``run_to_run``: the part of a figure's
    variance that is not its machines' shifts, and what it is worth), and the figures that do not follow their
    kind's prior; a kind with too few figures takes the prior of all kinds together."""
    by_kind: dict[str, list[FigureVariance]] = defaultdict(list)
    for key in gating:
        values = logs[key]
        if len(values) > 1:
            scale, df = run_to_run.get(key, (1.0, len(values) - 1))
            by_kind[kinds[key]].append((key, statistics.variance(values) * scale, df, covariates.get(key)))
    everything, all_outliers = fit_robust([row for rows in by_kind.values() for row in rows])
    out: dict[str, Prior] = {}
    outliers: set[tuple[str, str]] = set()
    for kind in set(kinds.values()):
        rows = by_kind.get(kind, [])
        own, own_outliers = fit_robust(rows) if len(rows) >= MIN_FIGURES else (None, set())
        if own is not None:
            out[kind], outliers = own, outliers | own_outliers
        elif everything is not None:
            out[kind] = everything
            outliers |= {row[0] for row in rows} & all_outliers
    return out, outliers


def kind_tails(logs: Mapping[tuple[str, str], tuple[float, ...]], kinds: Mapping[tuple[str, str], str],
               gating: set[tuple[str, str]], heavy: set[tuple[str, str]],
               kind: str) -> dict[tuple[str, str], float]:
    """Per gating figure of ``kind`` with TAIL_RUNS runs or more and not ``heavy`` on its own, the degrees of
    freedom of Student's t whose excess kurtosis is the upper end (:data:`TAIL_MARGIN_SE`) of all such
    figures', heavy ones too, read two ways and the heavier kept: their runs' z (:func:`predictive_z`)
    pooled, where one figure's wild run weighs as it should; and each figure's own kurtosis floored at 0 (a
    flat-topped figure must not cancel a heavy one) averaged over its runs, with a jackknife over the figures
    where they differ.
    At most as heavy as HOST_TAIL_DF. A figure's own kurtosis over 20-40 runs is too rough to read alone (its
    standard error is 0.8-1.1), the kind's is not.

    It assumes the kind's figures share a tail: one heavy figure among many light ones is read with theirs
    (Student's t5 among twelve normal figures of 30 runs: t10.6, where the normal ones alone read t11.7).
    Drawn 300 times as eight figures of 30 runs each: normal noise reads t10.5 (t7.5 or more nine times in
    ten), Student's t4 noise t5.2, t3 t5.0."""
    figures = [key for key in gating if kinds.get(key) == kind and len(logs[key]) >= TAIL_RUNS]
    read = [z for key in figures if (z := predictive_z(logs[key]))]
    if not read:
        return {}
    everything = [x for z in read for x in z]
    normal = statistics.fmean(6 / (len(z) - 6) for z in read for _ in z)  # the z's own kurtosis, normal noise
    if any(math.isinf(x) for x in everything):  # a figure alike but for one run: as heavy as tails get
        return dict.fromkeys((key for key in figures if key not in heavy), HOST_TAIL_DF)
    se = math.sqrt(24 / len(everything))
    pooled = (excess_kurtosis(everything) or 0.0) - normal + TAIL_MARGIN_SE * se
    own = [(len(z), max(0.0, (excess_kurtosis(z) or 0.0) - 6 / (len(z) - 6))) for z in read]
    mean = sum(n * k for n, k in own) / len(everything)
    if len(own) > 1:
        without = [(len(everything) * mean - n * k) / (len(everything) - n) for n, k in own]
        centre = statistics.fmean(without)
        se = max(se, math.sqrt((len(without) - 1) / len(without) * sum((w - centre) ** 2 for w in without)))
    upper = max(pooled, mean + TAIL_MARGIN_SE * se)
    return dict.fromkeys((key for key in figures if key not in heavy), max(HOST_TAIL_DF, 4 + 6 / upper))


def predictive_z(values: Sequence[float]) -> list[float]:
    """Each run read as the judge reads a new one, against the other runs' mean and SD (a wild run does not
    hide in the spread it makes): Student's t with n - 2 degrees of freedom under normal noise, whose excess
    kurtosis is 6 / (n - 6); [inf] where all runs but one are alike, [] where none differ (or n <= 6)."""
    n = len(values)
    mean = statistics.fmean(values)
    centred = [v - mean for v in values]
    squares = sum(c * c for c in centred)
    if n <= 6 or squares <= n * STILL**2:
        return []
    z = []
    for c in centred:
        # the other runs' mean is -c / (n - 1) from the mean, their squares about it S - c² n / (n - 1)
        var = (squares - c * c * n / (n - 1)) / (n - 2)
        if var <= STILL**2:
            return [math.inf]
        z.append(c * n / (n - 1) / math.sqrt(var))
    return z


def excess_kurtosis(values: Sequence[float]) -> float | None:
    """The sample excess kurtosis of ``values``; None where they do not vary."""
    mean = statistics.fmean(values)
    m2 = statistics.fmean((v - mean) ** 2 for v in values)
    return statistics.fmean((v - mean) ** 4 for v in values) / m2**2 - 3 if m2 > 0 else None


def _between_machines(stored: Mapping[str, Figures], origins: Mapping[str, tuple[str, ...]],
                      kinds: Mapping[str, str]) -> tuple[float | None, dict[str, float], Counter[str]]:
    """The between-machine variance of log time over the run-to-run variance on one machine (one-way random
    effects: the sum of the benchmarks' unfloored between-machine components over the sum of their
    within-machine mean squares, over the benchmarks whose runs came from two or more known machines, one of
    them with two runs), from each benchmark's runs (``stored``) and the machine of each (``origins``): over
    every benchmark, and per kind of figure (``kinds``: a benchmark's time's kind), and how many benchmarks
    each kind's rests on; None where no benchmark's runs tell them apart.

    A ratio, not one SD per kind: on the committed H100 and H200 baselines each benchmark's between-machine
    component tracks its own run-to-run spread (a 1 M-element program step 18%, a launch-bound training step
    8-17%, a one-thread kernel about 1%), and one SD for every host-bound figure (12% on the H100) gave a
    one-thread kernel that repeats within 1% a one-run MDE above 200%. Estimates are kept unfloored: the
    median of estimates floored at zero read exactly 0 in 17 of 20 simulated two-machine baselines whose
    machines did differ."""
    components: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for name, figures in stored.items():
        times, machines = figures.get(TIME, []), origins.get(name, ())
        if len(times) != len(machines) or not all(machines) or len(set(machines)) < 2 or min(times) <= 0:
            continue
        groups: dict[str, list[float]] = defaultdict(list)
        for machine, value in zip(machines, times):
            groups[machine].append(math.log(value))
        estimated = stats.variance_components(list(groups.values()))
        if estimated is not None:
            components[kinds.get(name, "")].append(estimated)
    every = [c for kind in components.values() for c in kind]
    by_kind = {kind: ratio for kind, c in components.items() if (ratio := _ratio(c)) is not None}
    return _ratio(every), by_kind, Counter({kind: len(components[kind]) for kind in by_kind})


def _run_to_run(machines: Counter[str], runs: int, ratio: float) -> tuple[float, float] | None:
    """The part of a figure's variance over its ``runs`` that is run-to-run, and the degrees of freedom it is
    worth, where they fell on ``machines`` (runs per machine, "" for runs of unknown machine) whose shifts
    vary ``ratio`` times it; None where the counts are not the figure's runs or no run names its machine (its
    variance is then taken whole). Runs of unknown machine are placed on the machine with the most runs, of
    every place they could have run the one that leaves the most of the variance run-to-run, and add no
    degrees of freedom: the cautious side of both. Taken whole instead, the H200 baseline's 100 M-element
    grid kernel (4 of its 69 runs saved before runs named their machine) counted its 55 named machines'
    shifts twice, once in its variance and once in the between-machine term: a one-run SE of 1.6% where its
    runs spread 0.8%."""
    known = Counter({machine: count for machine, count in machines.items() if machine})
    if sum(machines.values()) != runs or not known:
        return None
    placed = known.copy()
    if unknown := machines.get("", 0):
        placed[max(known, key=known.__getitem__)] += unknown
    expected, df = stats.spread_over_groups(list(placed.values()), ratio)
    return 1 / expected, min(df, stats.spread_over_groups(list(known.values()), ratio)[1]) if unknown else df


def _ratio(components: Sequence[tuple[float, float]]) -> float | None:
    """Summed between-machine components over summed within-machine mean squares, at least 0; None where
    the runs on one machine never differed."""
    within = sum(w for _, w in components)
    return max(0.0, sum(b for b, _ in components) / within) if within > 0 else None


def _ratio_of(kind: str, ratio: float | None, by_kind: Mapping[str, float]) -> float:
    """The between-machine ratio a figure of ``kind`` is judged with: its kind's, else every kind's, else the
    largest the committed baselines measured for its kind (UNMEASURED_BETWEEN_RATIO)."""
    measured = by_kind.get(kind, ratio)
    if measured is not None:
        return measured
    return UNMEASURED_BETWEEN_RATIO.get(kind, max(UNMEASURED_BETWEEN_RATIO.values()))

