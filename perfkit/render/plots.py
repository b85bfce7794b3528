"""Each benchmark family's plots, listed under its bench file's name (the plotters live in
perfkit.render.plots_kernels, plots_models, plots_scaling and plots_training)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from perfkit.render.plots_kernels import plot_ceilings, plot_vector_add
from perfkit.render.plots_models import (
    plot_layers,
    plot_memory_breakdown,
    plot_ppp,
    plot_roofline,
    plot_vgg_swap,
)
from perfkit.render.plots_scaling import plot_busbw, plot_compute_comm, plot_speedup
from perfkit.render.plots_training import (
    plot_batch_sweep,
    plot_large_batch,
    plot_layer_capacity,
    plot_time_to_accuracy,
)
from perfkit.resultfile.model import ResultSet

Plotter = Callable[[ResultSet, Path], Iterable[tuple[str, Path]]]

#: Each benchmark family (its bench file, perfkit.resultfile.model.family_of) and its plots, in report order;
#: a family adds its plots here, and the report draws them beside the family's table.
FAMILY_PLOTTERS: dict[str, tuple[Plotter, ...]] = {
    "test_ceilings": (plot_ceilings,),
    "test_vector_add": (plot_vector_add,),
    "test_layers": (plot_layers,),
    "test_vgg_swap": (plot_vgg_swap,),
    "test_model_memory": (plot_memory_breakdown,),
    "test_ppp": (plot_roofline, plot_ppp),
    "test_data_parallel": (plot_speedup, plot_compute_comm, plot_busbw),
    "test_capacity": (plot_layer_capacity,),
    "test_batch_sweep": (plot_batch_sweep,),
    "test_time_to_accuracy": (plot_time_to_accuracy,),
    "test_large_batch": (plot_large_batch,),
}
