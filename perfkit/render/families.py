"""The one registry of benchmark families: what each family plots and tabulates in the run report, keyed by
its payload record type (perfkit.resultfile.payloads), and the bench file each family's plots and tables go
beside: the first whose benchmarks carry its record, whatever that file is named.

A bench file renamed keeps its plots and tables, as they follow its records, not its name; a family added
gets a record, its plotters and tables, and one entry in :data:`REGISTRY`, whose order is the report's.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from perfkit.render import family_tables, plots_kernels, plots_models, plots_scaling, plots_training
from perfkit.render.document import Section
from perfkit.resultfile import ceilings
from perfkit.resultfile.ceilings import Ceilings
from perfkit.resultfile.model import BenchmarkEntry, ResultSet
from perfkit.resultfile.payloads import (
    AllreduceSweep,
    BatchEpoch,
    LargeBatch,
    Layer,
    LayerCapacity,
    MemoryEstimate,
    Ppp,
    Record,
    Roofline,
    Scaling,
    TimeToAccuracy,
    VectorAdd,
    VggSwap,
)

#: A family's plot: the results and an output folder in, (title, PNG path) pairs out; none where the run holds
#: none of its family's benchmarks.
Plotter = Callable[[ResultSet, Path], Iterable[tuple[str, Path]]]
#: A family's own tables: sections placed under the family's, none where the run holds nothing of it.
Tables = Callable[[ResultSet, Ceilings], list[Section]]

#: The ceilings family writes no payload record of its own: its benchmarks are known by the figures only they
#: record, the ceilings (perfkit.resultfile.ceilings.KEYS), the most specific thing a result holds of it.
CEILING_FIGURES: frozenset[str] = frozenset(ceilings.KEYS)

#: What a family is known by in a result: its payload record type or, where it has none, its figures.
Key = type[Record] | frozenset[str]


@dataclass(frozen=True)
class Family:
    """What one family shows: its plots, drawn beside its benchmarks' table, and its own tables, placed below
    it. ``name`` titles its section where none of its benchmarks is in the run and it still shows something
    (the ceilings a run's baseline lent it)."""

    name: str
    plots: tuple[Plotter, ...] = ()
    tables: Tables | None = None

    def draw(self, results: ResultSet, out: Path) -> list[tuple[str, Path]]:
        return [drawn for plotter in self.plots for drawn in plotter(results, out)]

    def tabulate(self, results: ResultSet, found: Ceilings) -> list[Section]:
        return self.tables(results, found) if self.tables else []


#: Every family the report draws or tabulates, by what its benchmarks carry, in the report's order. Records
#: other families carry too (RatePeak, PowerWindow, NcclProfile) key none; a record drawn within another's
#: plot (BatchCapacity in the batch sweep's, Ppp's batch in the roofline's) keys none of its own.
REGISTRY: dict[Key, Family] = {
    CEILING_FIGURES: Family("ceilings", (plots_kernels.plot_ceilings,), family_tables.ceilings_section),
    VectorAdd: Family("vector add", (plots_kernels.plot_vector_add,)),
    Layer: Family("single layers", (plots_models.plot_layers,)),
    VggSwap: Family("VGG16 ReLU/MaxPool swap", (plots_models.plot_vgg_swap,)),
    MemoryEstimate: Family("training-step memory", (plots_models.plot_memory_breakdown,)),
    Roofline: Family("roofline", (plots_models.plot_roofline,)),
    Ppp: Family("platform percent of peak", (plots_models.plot_ppp,), family_tables.ppp_section),
    Scaling: Family("data-parallel scaling", (plots_scaling.plot_speedup, plots_scaling.plot_compute_comm),
                    family_tables.scaling_section),
    AllreduceSweep: Family("all-reduce bus bandwidth", (plots_scaling.plot_busbw,)),
    LayerCapacity: Family("layer-stack capacity", (plots_training.plot_layer_capacity,),
                          family_tables.capacity_section),
    BatchEpoch: Family("epoch time vs batch size", (plots_training.plot_batch_sweep,),
                       family_tables.batch_sweep_section),
    TimeToAccuracy: Family("time to accuracy", (plots_training.plot_time_to_accuracy,),
                           family_tables.tta_section),
    LargeBatch: Family("large-batch training", (plots_training.plot_large_batch,),
                       family_tables.large_batch_section),
}


def carries(bench: BenchmarkEntry, key: Key) -> bool:
    """Whether ``bench`` is one of the family's: it carries the family's record (readable or not: an entry
    whose record cannot be read keeps its place and loses only its plot) or records one of its figures."""
    if isinstance(key, frozenset):
        return not key.isdisjoint(bench.metrics)
    return bench.extra.get(key.TAG) is not None


def placed(results: ResultSet) -> dict[str, list[Family]]:
    """The report's family sections, each titled by a bench file (perfkit.resultfile.model.family_of), and
    the families shown in each: a family goes with the first bench file whose benchmarks carry it (where none
    ran, under its own name), the sections in :data:`REGISTRY`'s order of their first family; then every
    other bench file in the run's order, with none."""
    sections: dict[str, list[Family]] = {}
    for key, family in REGISTRY.items():
        home = next((bench.family for bench in results.benchmarks if carries(bench, key)), family.name)
        sections.setdefault(home, []).append(family)
    for bench in results.benchmarks:
        sections.setdefault(bench.family, [])
    return sections
