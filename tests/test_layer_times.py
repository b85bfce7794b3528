"""Per-layer timing pools its timings over passes through the layer sequence, so a disturbance lasting a few
milliseconds, which in one pass lifts several consecutive small layers, does not move their times."""
from __future__ import annotations

import itertools
from collections.abc import Container

import pytest
import torch
from torch import nn

from perfkit.measure import timing
from perfkit.workloads import layer_times

#: The true time of each leaf module per call (seconds), as the stand-in event timer reports it.
TRUE_S = {"fc1": 3e-3, "fc2": 2e-3, "act": 1e-4}
SLOWER = 15


class Shared(nn.Module):
    """fc1, act, fc2, act: one ReLU module called twice, as torchvision's ResNet blocks do."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.act = nn.Linear(4, 4), nn.Linear(4, 4), nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.fc2(self.act(self.fc1(x))))


class EventTimer:
    """Stands in for CUDA events on this GPU-less machine: runs the module on its captured input and reads
    its true time, SLOWER times that for the timed blocks (counted from 0 over the run) in ``disturbed``."""

    def __init__(self, model: Shared, disturbed: Container[int]) -> None:
        self.names = {id(m): n for n, m in model.named_modules()}
        self.disturbed, self.blocks = disturbed, itertools.count()

    def __call__(self, fn, repetitions: int, warmup_iterations: int) -> timing.Samples:
        fn()
        seconds = TRUE_S[self.names[id(fn.func)]] * (SLOWER if next(self.blocks) in self.disturbed else 1)
        return timing.Samples((seconds,) * repetitions)


def time_layers(monkeypatch: pytest.MonkeyPatch, disturbed: Container[int] = frozenset(),
                **kwargs: int) -> dict[str, layer_times.LayerTime]:
    model = Shared()
    monkeypatch.setattr(layer_times.timing, "time_cuda_events", EventTimer(model, disturbed))
    return {t.name: t for t in layer_times.time_layers(model, torch.ones(2, 4), **kwargs)}


def test_every_call_of_a_shared_module_is_summed(monkeypatch):
    times = time_layers(monkeypatch)
    assert [(n, t.calls) for n, t in times.items()] == [("fc1", 1), ("act", 2), ("fc2", 1)]
    assert times["act"].seconds == pytest.approx(2 * TRUE_S["act"])
    assert times["fc1"].seconds == pytest.approx(TRUE_S["fc1"])


def test_a_disturbance_across_consecutive_layers_of_one_pass_leaves_their_times(monkeypatch):
    times = time_layers(monkeypatch, disturbed={1, 2, 3})  # the first pass's act, fc2, act
    assert times["fc2"].seconds == pytest.approx(TRUE_S["fc2"])
    assert times["act"].seconds == pytest.approx(2 * TRUE_S["act"])


def test_one_pass_reports_the_disturbance(monkeypatch):
    times = time_layers(monkeypatch, disturbed={1, 2, 3}, passes=1)
    assert times["fc2"].seconds == pytest.approx(SLOWER * TRUE_S["fc2"])
