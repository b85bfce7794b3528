"""``perfkit predict --device``: a benchmark family's times on a device, from a device at hand.

On a device never measured (a datasheet key: a B200, an A100) each benchmark's time is what the device at
hand that holds most of the family measured, over the speedup the roofline model expects from there
(perfkit.verdict.across); the model's own time, a lower bound, beside it; and the model's speedup error from
that device to each other device at hand, measured. Given a result file instead, the device was measured:
each benchmark's speedup is set against its expectation, and each device's time against the model's.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

from perfkit.errors import UsageError
from perfkit.render import report
from perfkit.resultfile import datasheet, load
from perfkit.resultfile.model import ResultSet, family_of
from perfkit.store import baselines
from perfkit.verdict import across
from perfkit.verdict.expected import Roofs, Workloads


def family(device: str, name: str | None, at_hand: Sequence[Path] | None, workloads: Workloads,
           as_json: bool = False) -> str:
    """The text (or JSON) of ``name``'s benchmarks (every family's where None) on ``device``, from the results
    ``at_hand`` (default: the baselines of one-GPU machines)."""
    target = load.load(device) if device.endswith(".json") or Path(device).is_file() else None
    spec = None if target is not None else datasheet.by_key(device)
    if target is None and spec is None:
        keys = ", ".join(s.key for s in datasheet.GPUS)
        raise UsageError(f"unknown device {device!r}: give a datasheet key ({keys}) or a result file")
    measured = [load.load(p) for p in at_hand] if at_hand else _one_gpu_baselines()
    measured = [r for r in measured if target is None or r.hardware_id != target.hardware_id]
    if not measured:
        raise UsageError("no results at hand to predict from: pass --from RESULTS.json (a device measured)")
    reference = max(measured, key=lambda r: sum(_in(b.fullname, name) for b in r.benchmarks))
    names = [b.fullname for b in reference.benchmarks if _in(b.fullname, name)]
    if not names:
        held = ", ".join(sorted({b.family for b in reference.benchmarks}))
        raise UsageError(f"{reference.source} holds no benchmark of the family {name!r}; it holds {held}")
    for results in (reference, target):
        if results is not None and not Roofs.of(results).ceilings:
            raise UsageError(f"{results.source} holds no ceilings and its GPU is not in the datasheet: run "
                             "benches/test_ceilings.py there first")
    if target is not None:
        return _checked(reference, target, names, workloads, as_json)
    assert spec is not None
    roofs = Roofs.of_datasheet(spec, Roofs.of(reference))
    found = across.predictions(reference, roofs, names, workloads)
    if as_json:
        return json.dumps([dataclasses.asdict(p) | {"predicted_s": p.predicted_s} for p in found], indent=2)
    checks = {other.hardware_id: across.hardware_rows(reference, other, _held(other, names), workloads)
              for other in measured if other is not reference and other.profile == reference.profile}
    notes = (*roofs.notes, *Roofs.of(reference).notes)
    return report.prediction_text(found, f"{spec.key} ({spec.name})", notes, reference.hardware_id, checks)


def _checked(reference: ResultSet, target: ResultSet, names: Sequence[str], workloads: Workloads,
             as_json: bool) -> str:
    """The model against a device that was measured."""
    if target.profile != reference.profile:
        raise UsageError(f"{target.source} holds the {target.profile} profile's sizes, {reference.source} "
                         f"the {reference.profile} profile's; compare runs of the same profile")
    rows = across.hardware_rows(reference, target, _held(target, names), workloads)
    if as_json:
        return json.dumps([dataclasses.asdict(h) | {"ratio": h.ratio, "verdict": h.verdict,
                                                     "errors": h.errors()} for h in rows], indent=2)
    notes = (*Roofs.of(reference).notes, *Roofs.of(target).notes)
    return report.check_text(rows, reference.hardware_id, target.hardware_id, notes)


def _in(benchmark: str, name: str | None) -> bool:
    return name is None or family_of(benchmark) == name


def _held(results: ResultSet, names: Sequence[str]) -> list[str]:
    held = {b.fullname for b in results.benchmarks}
    return [n for n in names if n in held]


def _one_gpu_baselines() -> list[ResultSet]:
    """The full-profile baselines in baselines/ of machines with one GPU: the devices at hand."""
    found = []
    for path in sorted(baselines.BaselineStore.find(Path.cwd()).directory.glob("*.json")):
        results = load.load(path)
        one_gpu = results.info.device == "cuda" and results.info.fingerprint.gpu_count == 1
        if results.profile == "full" and one_gpu:
            found.append(results)
    return found
