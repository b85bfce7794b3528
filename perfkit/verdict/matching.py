"""Two result sets paired figure by figure, once, for the judge: every run value of each side and what the
judge needs to know about the figure (unit, direction, whether it gates, its minimum effect)."""
from __future__ import annotations

from dataclasses import dataclass

from perfkit.resultfile.figures import TIME, TIME_UNIT, method_of
from perfkit.resultfile.metrics import Better
from perfkit.resultfile.model import BenchmarkEntry, ResultSet
from perfkit.resultfile.payloads import Disturbance
from perfkit.verdict import stats, unsettled_rounds


@dataclass(frozen=True)
class FigureRuns:
    """One figure of one benchmark on both sides: the value of every run (empty: that side lacks it)."""

    benchmark: str
    figure: str
    unit: str
    better: Better
    baseline: tuple[float, ...]
    current: tuple[float, ...]
    gating: bool = False  # the benchmark's verdict rests on it
    tolerance: float | None = None  # the benchmark's own minimum effect, where it declares one
    gpu_bound: bool = False  # GPU work (a ceiling it follows, or declared): it reproduces within about 1%
    # what else slowed the current run (a busy host, a hot GPU, rounds that did not settle)
    disturbances: tuple[Disturbance, ...] = ()
    # why the two sides' values are not comparable (timed at different SM clocks, or measured by another
    # method version): shown side by side, never judged
    measured_differently: str | None = None
    # a count the code alone decides (any move is a change), unless either side read it off its machine
    exact: bool = True
    # why its noise lies between hosts of one model and cannot be cut, where the benchmark says so: its
    # minimum effect widens to what one run can see (perfkit.verdict.machine_spread)
    between_hosts: str | None = None

    @property
    def base_mean(self) -> float | None:
        """The baseline runs' geometric mean: the judge tests mean logs, so the value and the change it
        prints come from them too."""
        return stats.geometric(self.baseline) if self.baseline else None

    @property
    def cur_mean(self) -> float | None:
        return stats.geometric(self.current) if self.current else None

    @property
    def judged(self) -> bool:
        """A gating figure with a direction: counts and ratios that should stay put are not judged
        better/worse."""
        return self.gating and self.better != "none"


@dataclass(frozen=True)
class Pairing:
    figures: tuple[FigureRuns, ...]
    only_baseline: tuple[BenchmarkEntry, ...]  # missing from the current run
    only_current: tuple[BenchmarkEntry, ...]  # new since the baseline
    common: tuple[str, ...]


def pair(baseline: ResultSet, current: ResultSet) -> Pairing:
    base, cur = baseline.by_name(), current.by_name()
    base_runs, cur_runs = baseline.runs(), current.runs()
    common = tuple(sorted(base.keys() & cur.keys()))
    figures = []
    for name in common:
        b, c = base[name], cur[name]
        gates = b.gating_figures() | c.gating_figures()
        kinds: dict[str, tuple[str, Better]] = {TIME: (TIME_UNIT, "lower")}
        for entry in (b, c):
            kinds.update({n: (m.unit, m.better) for n, m in entry.metrics.items()})
        read_off = {n for entry in (b, c) for n, m in entry.metrics.items() if not m.exact}
        tolerance = c.context.tolerance if c.context.tolerance is not None else b.context.tolerance
        gpu_bound = c.context.gpu_bound and current.info.device == "cuda"
        between_hosts = c.context.between_hosts  # as the current code declares it, as gpu_bound is
        clocks = clocks_apart(baseline, current, b, c)
        for figure in sorted(base_runs[name].keys() | cur_runs[name].keys()):
            unit, better = kinds.get(figure, ("", "none"))
            now = tuple(cur_runs[name].get(figure, ()))
            unsteady = unsettled_rounds.unsettled(b, c, figure, len(now)) if figure in gates else None
            disturbances = c.disturbances + ((unsteady,) if unsteady else ())
            apart = _methods_differ(b, c, figure) or (clocks if unit != "MiB" else None)
            figures.append(FigureRuns(name, figure, unit, better, tuple(base_runs[name].get(figure, ())),
                                      now, figure in gates, tolerance, gpu_bound, disturbances, apart,
                                      figure not in read_off, between_hosts))
    return Pairing(tuple(figures), tuple(base[n] for n in sorted(base.keys() - cur.keys())),
                   tuple(cur[n] for n in sorted(cur.keys() - base.keys())), common)


def clocks_apart(baseline: ResultSet, current: ResultSet, base: BenchmarkEntry, cur: BenchmarkEntry
                 ) -> str | None:
    """Why ``base`` and ``cur`` cannot be compared on time, where one was timed at a locked SM clock and the
    other was not (or at another one); None where they ran alike. Allocator peaks do not depend on it. Across
    hardware only the way two GPUs were held counts (locked against unlocked, base against another policy):
    under one policy each GPU's own MHz is its own, as its roofs are (perfkit.verdict.across); a CPU holds no
    SM clock."""
    if base.clock_lock == cur.clock_lock:
        return None
    two_gpus = baseline.info.device == current.info.device == "cuda"
    if baseline.hardware_id != current.hardware_id and (not two_gpus or _policy(base) == _policy(cur)):
        return None
    return (f"timed at another SM clock (baseline: {base.clock_lock or 'unlocked'}; this run: "
            f"{cur.clock_lock or 'unlocked'}): not judged; re-save its baseline entry from a run timed "
            "like this one")


def _policy(entry: BenchmarkEntry) -> str | None:
    """How a benchmark's SM clock was held: the lock's policy ("base", or the clock asked for); None: free."""
    return None if entry.clock_lock is None else entry.clock_lock.split("/")[0]


def _methods_differ(base: BenchmarkEntry, cur: BenchmarkEntry, figure: str) -> str | None:
    """Why ``base`` and ``cur`` cannot be compared on ``figure``, where they measured it by different versions
    of its method (perfkit.resultfile.figures.METHODS; a baseline's runs of a benchmark are all measured like
    its entry); None where alike."""
    here, there = cur.method(figure), base.method(figure)
    if here == there:
        return None
    newer = method_of(cur.fullname, figure, max(here, there))
    what = f" ({newer.how} since {newer.since[:10]})" if newer is not None else ""
    todo = ("re-save the baseline entry from a run of this code" if here > there else
            "this run measured it the older way: judge it against a baseline measured the same way")
    return f"measured by method {here} here and method {there} in the baseline{what}: not judged; {todo}"
