"""``perfkit memory``, ``perfkit flops`` and ``perfkit predict``: what a model costs, estimated from its
layers (no GPU needed); ``predict --device`` estimates a benchmark family on a device not at hand."""
from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfkit.cli.common import work_of
from perfkit.errors import UsageError
from perfkit.resultfile import figures


def add_parser(sub: Any) -> None:
    mem = _model_command(sub, "memory", "training-memory estimate of a model, term by term (no GPU needed)",
                         _memory, batch_required=True)
    mem.add_argument("--measure", action="store_true", help="also measure a training step's peak on the GPU")

    fl = _model_command(
        sub, "flops", "per-layer FLOPs and MACs of a model (FlopCounterMode + PALEO formulas)", _flops
    )
    fl.add_argument(
        "--per-layer", action="store_true", help="print every layer, not only the totals (--json always)"
    )

    pr = _model_command(sub, "predict", "PALEO-style inference time of one model from FLOPs and datasheet "
                                        "peaks; with --device, a benchmark family's times on a device",
                        _predict, model_required=False)
    pr.add_argument("--gpu", help="datasheet key or device name, e.g. k80, v100-sxm2, h200")
    pr.add_argument("--precision", default="fp32", help="fp32 or fp64 (or tf32/bf16/fp16 where listed)")
    pr.add_argument("--ppp", type=float, default=1.0, help="platform percent of peak in (0, 1] (default 1.0)")
    pr.add_argument("--device", metavar="KEY|RESULTS.json",
                    help="instead of MODEL --gpu: a datasheet key (b200, a100-80gb, ...: its times "
                         "predicted) or a result file (a device measured: the model checked against it), for "
                         "a benchmark family measured on a device at hand, with the model's error there")
    pr.add_argument("--family", metavar="NAME",
                    help="with --device: the benchmark family, its bench file's stem (test_ppp); default all")
    pr.add_argument("--from", dest="at_hand", type=Path, action="append", metavar="RESULTS.json",
                    help="with --device, once or more: the results measured at hand (default: the baselines "
                         "of one-GPU machines in baselines/); the one holding most of the family is "
                         "predicted from, each other measures the model's error")
    pr.add_argument("--held-out", type=Path, metavar="RESULTS.json",
                    help="with --device KEY: a run of that device, kept out of the prediction (leave one "
                         "out: only its datasheet and the results at hand predict it), each benchmark's "
                         "measured speedup set against the expected one, the share within x1.10 and x1.25")


def _model_command(sub: Any, name: str, help_text: str, func: Callable[[argparse.Namespace], int],
                   batch_required: bool = False, model_required: bool = True) -> argparse.ArgumentParser:
    """A subcommand about one model: the model, one image's shape (C,H,W), the batch and --json; the same
    convention for every model command. A required --batch is checked by the command, after the model name
    (:func:`_batch`): argparse would ask for it before saying the model is unknown."""
    parser = sub.add_parser(name, help=help_text)
    parser.add_argument("model", nargs=None if model_required else "?",
                        help="a registered model name or package.module:function")
    parser.add_argument("--input", default="3,224,224", metavar="C,H,W",
                        help="one image's shape, channels first (default 3,224,224); the batch is --batch")
    parser.add_argument("--batch", type=int, default=None if batch_required else 1,
                        help="images per batch" + (" (required)" if batch_required else " (default 1)"))
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=func)
    return parser


def _memory(args: argparse.Namespace) -> int:
    _check_model(args.model)  # the model first: an unknown one is the mistake, not a missing --batch
    from perfkit import console  # renders torch-side objects: imported only by the commands that need them
    from perfkit.measure.memory import MiB
    from perfkit.workloads import models  # imports torch (seconds)
    from perfkit.workloads.estimate import estimate_training_memory, measure_training_peak

    estimate = estimate_training_memory(args.model, _batch(args), models.parse_shape(args.input, 3))
    measured = measure_training_peak(args.model, args.batch, estimate.input_shape) if args.measure else None
    if args.json:
        payload = estimate.to_json()
        if measured is not None:
            payload["measured"] = {figures.PEAK_ALLOCATED_MIB.name: measured.allocated / MiB,
                                   figures.PEAK_RESERVED_MIB.name: measured.reserved / MiB,
                                   figures.ACTUAL_OVER_ESTIMATE.name: measured.allocated / estimate.total}
        print(json.dumps(payload, indent=2))
    else:
        print(console.render_memory(estimate, measured))
    return 0


def _flops(args: argparse.Namespace) -> int:
    _check_model(args.model)
    from perfkit import console  # renders torch-side objects: imported only by the commands that need them
    from perfkit.workloads import flops, models

    table = flops.flop_table(args.model, (_batch(args), *models.parse_shape(args.input, 3)))
    if args.json:
        print(json.dumps(table.to_json(per_layer=True), indent=2))
    else:
        print(console.render_flops(table, args.per_layer))
    return 0


def _predict(args: argparse.Namespace) -> int:
    """Its usage checked before anything heavy is imported: a mistyped command is told so at once, not after
    the seconds torch takes to import."""
    if args.device is not None:
        if args.model is not None or args.gpu is not None:
            raise UsageError("--device predicts a benchmark family; MODEL and --gpu predict one model: give "
                             "one or the other")
        from perfkit import predict

        # a family is its bench file's stem; "ppp" names test_ppp as plainly
        family = (args.family if args.family is None or args.family.startswith("test_")
                  else f"test_{args.family}")
        if args.held_out is not None:
            print(predict.held_out(args.device, args.held_out, family, args.at_hand, work_of, args.json))
        else:
            print(predict.family(args.device, family, args.at_hand, work_of, args.json))
        return 0
    if args.model is None or args.gpu is None:
        raise UsageError("give MODEL and --gpu KEY (one model's PALEO estimate), or --device "
                         "KEY|RESULTS.json (a benchmark family's times on a device)")
    if args.family is not None or args.at_hand or args.held_out is not None:
        raise UsageError("--family, --from and --held-out choose what --device predicts; pass --device too")
    _check_model(args.model)
    from perfkit import console  # renders torch-side objects: imported only by the commands that need them
    from perfkit.workloads import flops, models, paleo

    spec = paleo.gpu_spec(args.gpu)
    table = flops.flop_table(args.model, (_batch(args), *models.parse_shape(args.input, 3)))
    prediction = paleo.predict(table, spec, args.precision, args.ppp)
    if args.json:
        print(json.dumps(prediction.to_json(per_layer=True), indent=2))
    else:
        print(console.render_prediction(prediction))
    return 0


def _check_model(name: str) -> None:
    """Refuse an unknown model before torch is imported (seconds); imported here, not at the top, so that the
    commands that never name a model load nothing of perfkit.workloads."""
    from perfkit.workloads.model_names import check_name

    check_name(name)


def _batch(args: argparse.Namespace) -> int:
    if args.batch is None:  # perfkit memory's, asked for once its model is known
        raise UsageError(f"{args.command} needs --batch N, the images per batch to estimate for")
    if args.batch < 1:
        raise UsageError(f"--batch must be at least 1, not {args.batch}")
    return int(args.batch)
