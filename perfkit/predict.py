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
from dataclasses import dataclass
from pathlib import Path

from perfkit.errors import UsageError
from perfkit.render import speedups
from perfkit.render.tables import text_table
from perfkit.resultfile import datasheet, load
from perfkit.resultfile.model import ResultSet, family_of
from perfkit.store import baselines
from perfkit.verdict import across, multigpu
from perfkit.verdict.expected import Roofs, Workloads, launch_costs


def family(device: str, name: str | None, at_hand: Sequence[Path] | None, workloads: Workloads,
           as_json: bool = False) -> str:
    """The text (or JSON) of ``name``'s benchmarks (every family's where None) on ``device``, from the results
    ``at_hand`` (default: the baselines of one-GPU machines)."""
    target = load.load(device) if device.endswith(".json") or Path(device).is_file() else None
    spec = None if target is not None else datasheet.by_key(device)
    if target is None and spec is None:
        keys = ", ".join(s.key for s in datasheet.GPUS)
        raise UsageError(f"unknown device {device!r}: give a datasheet key ({keys}) or a result file")
    if target is not None and target.info.device != "cuda":
        raise UsageError(f"{target.source} ran on the CPU: predict models GPU benchmarks from a GPU's "
                         "ceilings; give a GPU run's result file or a datasheet key")
    measured = [load.load(p) for p in at_hand] if at_hand else one_gpu_baselines()
    measured = [r for r in measured if target is None
                or (r.hardware_id != target.hardware_id and r.profile == target.profile)]
    lenders = lenders_for(*measured, *([target] if target is not None else []))
    if not measured:
        of = f" of the {target.profile} profile" if target is not None else ""
        looked = "" if at_hand else (f" (no one-GPU baseline in "
                                     f"{baselines.BaselineStore.find(Path.cwd()).directory})")
        raise UsageError(f"no results{of} at hand to predict from{looked}: run it in a perfkit checkout, or "
                         f"pass --from RESULTS.json (a device measured{', the same profile' if of else ''})")
    reference = max(measured, key=lambda r: sum(_in(b.fullname, name) for b in r.benchmarks))
    names = [b.fullname for b in reference.benchmarks if _in(b.fullname, name)]
    if not names:
        held = ", ".join(sorted({b.family for results in measured for b in results.benchmarks}))
        looked = ", ".join(Path(results.source).name for results in measured)
        raise UsageError(f"no benchmark of the family {name!r} in the results at hand ({looked}); they hold "
                         f"{held}")
    for results in (reference, target):
        if results is not None and not Roofs.of(results).ceilings:
            raise UsageError(f"{results.source} holds no ceilings and its GPU is not in the datasheet: run "
                             "benches/test_ceilings.py there first")
    if target is not None:
        return _checked(reference, target, names, workloads, as_json, lenders)
    assert spec is not None
    own = multigpu.roofs_of(reference, lenders)
    roofs = Roofs.of_datasheet(spec, own)
    found = across.predictions(reference, roofs, names, workloads, lenders)
    if as_json:
        return json.dumps([dataclasses.asdict(p) | {"predicted_s": p.predicted_s} for p in found], indent=2)
    checks = {other.hardware_id: across.hardware_rows(reference, other, _held(other, names), workloads,
                                                      lenders=lenders)
              for other in measured if other is not reference and other.profile == reference.profile}
    notes = (*roofs.notes, *own.notes)
    return speedups.prediction_text(found, f"{spec.key} ({spec.name})", notes, reference.hardware_id, checks)


def held_out(device: str, measured: Path, name: str | None, at_hand: Sequence[Path] | None,
             workloads: Workloads, as_json: bool = False) -> str:
    """Leave one out: the device of ``measured`` predicted from its datasheet key ``device`` and the results
    at hand alone (its own run kept out, its measured ceilings too), each benchmark's measured speedup set
    against that expectation, and the share within x1.10 and x1.25."""
    spec = datasheet.by_key(device)
    if spec is None:
        keys = ", ".join(s.key for s in datasheet.GPUS)
        raise UsageError(f"--held-out checks a prediction from a datasheet: give --device one of {keys}, not "
                         f"{device!r}")
    target = load.load(measured)
    others = [load.load(p) for p in at_hand] if at_hand else one_gpu_baselines()
    reference, rows = held_out_rows(spec, target, others, name, workloads, lenders_for(*others))
    summary = held_out_summary(rows)
    if as_json:
        return json.dumps({"summary": summary, "rows": [
            {"benchmark": h.benchmark, "figure": h.figure, "speedup": h.speedup, "expected": h.expected,
             "ratio": h.ratio, "gpu": h.gpu, "expected_from": h.source()} for h in rows]}, indent=2)
    head = ["benchmark", "figure", "measured speedup", "expected from the datasheet", "measured/expected",
            "expected from"]
    cells = [[h.benchmark, h.figure, f"{h.speedup:.3g}x", "-" if h.expected is None else f"{h.expected:.3g}x",
              "-" if h.ratio is None else f"x{h.ratio:.3g}", h.source() if h.gpu else "host work"]
             for h in rows]
    title = (f"{target.hardware_id} predicted from {reference.hardware_id} and the {spec.key} datasheet, its "
             f"own run held out: {summary}")
    return "\n\n".join([title, text_table(head, cells)])


def held_out_rows(spec: datasheet.GpuSpec, target: ResultSet, others: Sequence[ResultSet], name: str | None,
                  workloads: Workloads,
                  lenders: Sequence[ResultSet] = ()) -> tuple[ResultSet, list[across.HardwareRow]]:
    """The results ``target`` is predicted from (of another machine, the same profile, holding most of the
    family ``name``), and each benchmark both hold: its measured speedup beside the one expected from
    ``spec``'s datasheet and the reference alone (a reference of several GPUs with the launch costs of the
    one-GPU run of its GPU among ``lenders``, :func:`lenders_for`)."""
    sheet = target.info.datasheet
    if sheet is not None and sheet.key != spec.key:
        raise UsageError(f"{target.source} ran on {sheet.key} ({sheet.name}), not {spec.key}: give --device "
                         f"{sheet.key} to predict it held out")
    others = [r for r in others if r.hardware_id != target.hardware_id and r.profile == target.profile
              and (r.info.datasheet is None or r.info.datasheet.key != spec.key)]
    if not others:
        raise UsageError(f"no results of another machine to predict {target.hardware_id} from: pass --from "
                         "RESULTS.json (a device measured, the same profile)")
    reference = max(others, key=lambda r: sum(_in(b.fullname, name) for b in r.benchmarks))
    names = _held(target, [b.fullname for b in reference.benchmarks if _in(b.fullname, name)])
    if not names:
        raise UsageError(f"{reference.source} and {target.source} share no benchmark"
                         + (f" of the family {name!r}" if name else ""))
    roofs = Roofs.of_datasheet(spec, multigpu.roofs_of(reference, lenders))
    return reference, list(across.hardware_rows(reference, target, names, workloads, roofs, lenders))


@dataclass(frozen=True)
class HeldOutCounts:
    """A held-out prediction counted: its GPU benchmarks, those with an expectation, how many lie within
    x1.10 and x1.25 of it, and the names beyond x1.25 (and those of them within their own runs' spread)."""

    gpu: int
    carried: int
    near: int
    within: int
    beyond: tuple[str, ...]
    explained: tuple[str, ...] = ()  # those of ``beyond`` within their own runs' spread (HardwareRow.reason)

    @classmethod
    def of(cls, rows: Sequence[across.HardwareRow]) -> HeldOutCounts:
        ratios = [(h.benchmark.split("::")[-1], h.ratio) for h in rows if h.gpu and h.ratio is not None]

        def inside(factor: float) -> int:
            return sum(1 / factor <= ratio <= factor for _, ratio in ratios)

        beyond = tuple(name for name, ratio in ratios if not 1 / 1.25 <= ratio <= 1.25)
        spread = {h.benchmark.split("::")[-1] for h in rows if h.within_spread}
        return cls(sum(h.gpu for h in rows), len(ratios), inside(1.10), inside(1.25), beyond,
                   tuple(name for name in beyond if name in spread))

    def named(self, quote: str = "") -> str:
        """The benchmarks beyond x1.25, each whose own runs spread as far saying so."""
        said = " (within its runs' spread)"
        return ", ".join(f"{quote}{name}{quote}" + (said if name in self.explained else "")
                         for name in self.beyond)

    def share(self, count: int) -> str:
        return f"{count / self.carried:.0%}" if self.carried else "-"


def held_out_summary(rows: Sequence[across.HardwareRow]) -> str:
    """How many GPU benchmarks a held-out prediction covers, and how many lie within x1.10 and x1.25 of it."""
    counts = HeldOutCounts.of(rows)
    beyond = f": {counts.named()}" if counts.beyond else ""
    return (f"{counts.carried} of {counts.gpu} GPU benchmarks carry an expectation; {counts.near} of them "
            f"within x1.10 ({counts.share(counts.near)}), {counts.within} within x1.25, {len(counts.beyond)} "
            f"beyond{beyond}")


def _checked(reference: ResultSet, target: ResultSet, names: Sequence[str], workloads: Workloads,
             as_json: bool, lenders: Sequence[ResultSet]) -> str:
    """The model against a device that was measured."""
    if target.profile != reference.profile:
        raise UsageError(f"{target.source} holds the {target.profile} profile's sizes, {reference.source} "
                         f"the {reference.profile} profile's; compare runs of the same profile")
    rows = across.hardware_rows(reference, target, _held(target, names), workloads, lenders=lenders)
    if as_json:
        return json.dumps([dataclasses.asdict(h) | {"ratio": h.ratio, "verdict": h.verdict,
                                                     "errors": h.errors()} for h in rows], indent=2)
    notes = (*multigpu.roofs_of(reference, lenders).notes, *multigpu.roofs_of(target, lenders).notes)
    return speedups.check_text(rows, reference.hardware_id, target.hardware_id, notes)


def _in(benchmark: str, name: str | None) -> bool:
    return name is None or family_of(benchmark) == name


def _held(results: ResultSet, names: Sequence[str]) -> list[str]:
    held = {b.fullname for b in results.benchmarks}
    return [n for n in names if n in held]


def one_gpu_baselines(directory: Path | None = None, profile: str | None = "full") -> list[ResultSet]:
    """The baselines in ``directory`` (default: the baselines/ found from here) of machines with one GPU, of
    ``profile`` (None: any): the devices at hand, and the runs that lend a run of several GPUs their launch
    costs (perfkit.verdict.multigpu)."""
    found = []
    for path in sorted((directory or baselines.BaselineStore.find(Path.cwd()).directory).glob("*.json")):
        results = load.load(path)
        one_gpu = results.info.device == "cuda" and results.info.fingerprint.gpu_count == 1
        if profile in (None, results.profile) and one_gpu:
            found.append(results)
    return found


def lenders_for(*sides: ResultSet, directory: Path | None = None) -> list[ResultSet]:
    """The one-GPU baselines that may lend launch costs, read only where a GPU run among ``sides`` measured
    none (a run of several GPUs runs no one-element kernel); none otherwise."""
    if all(launch_costs(r) or r.info.device != "cuda" for r in sides):
        return []
    return one_gpu_baselines(directory, profile=None)
