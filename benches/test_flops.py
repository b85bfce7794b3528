"""FLOP accounting (seed 002, Problem 1.2): totals and the convolution share of forward FLOPs.

Counts, not speeds: every metric is a count that should not change (better "none"), so a change in
torchvision's architectures or in FlopCounterMode shows up as a "changed" row. Headline: the time to
count (a meta-device forward, no arithmetic). Lu et al. found ~99% of VGG16's forward FLOPs in
convolutions; the course asks the same of VGG19.
"""
from __future__ import annotations

import pytest

from perfkit.resultfile import figures
from perfkit.workloads import flops, models

MODEL_NAMES = ("vgg16", "vgg19", "resnet18", "resnet50", "googlenet", "alexnet")


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in MODEL_NAMES])
def test_flop_count(benchmark, name, perfkit_metrics):
    shape = (1, *models.DEFAULT_INPUT)
    table = benchmark.pedantic(flops.flop_table, args=(name, shape), rounds=2, warmup_rounds=0)
    for spec, value in ((figures.TOTAL_FLOPS, table.total_flops), (figures.TOTAL_MACS, table.total_macs),
                        (figures.COUNTED_FLOPS, table.counted_flops), (figures.PARAMS, table.params),
                        (figures.FORWARD_BACKWARD_FLOPS, table.forward_backward_flops),
                        (figures.CONV_FLOP_SHARE, table.conv_flop_share)):
        perfkit_metrics.record(spec, value)
    perfkit_metrics.info("flops", table.to_json(per_layer=False))
    perfkit_metrics.informational("counts, not speeds: the time to count is Python on a meta device; "
                                  "each count is judged as a count that should not change")
