"""Speedups across hardware in words and tables: each benchmark's speedup beside the speedup expected of it
(a comparison of two machines), the model checked against a device that was measured and its prediction for
one that was not (``perfkit predict``), and the two machines' names."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from perfkit.render import document
from perfkit.render.document import Table, Text
from perfkit.render.tables import fmt_time, text_table
from perfkit.verdict.across import AS_EXPECTED, HardwareRow, Prediction
from perfkit.verdict.judge import Comparison

#: What the verdict words mean across hardware, printed under a comparison of two machines.
ACROSS_MEANINGS = (
    f"Across hardware: as expected: the speedup lies within x{HardwareRow.NEAR} of the speedup expected of "
    f"it (a kernel's ceiling ratio, else the per-layer roofline model's); faster/slower: beyond that, within "
    f"x{HardwareRow.FAR}, or where nothing is expected, faster or slower on this machine beyond the minimum "
    f"effect and the noise; FAR from expected: beyond x{HardwareRow.FAR}; info: a gating figure other than "
    "a time (SM cycles, a memory peak) that differs on the other machine beyond the minimum effect and the "
    "noise, shown, not judged: another GPU spends its own on the same code; the across-hardware table gives "
    "each speedup, its expectation and where it came from."
)


def hardware_summary(rows: Sequence[HardwareRow]) -> str:
    """How many benchmarks carry an expected speedup that their speedup checks (HardwareRow.checks), and how
    many of those lie within x1.15 of it; a ceiling's own benchmarks, which agree by definition, apart."""
    expected = [h for h in rows if h.checks]
    near = [h for h in expected if h.verdict == AS_EXPECTED]
    far = [h for h in expected if h.far]
    own = sum(h.by_definition for h in rows)
    return (f"{len(expected)} of {len(rows)} benchmarks carry an expected speedup "
            f"({_share(expected, rows)}); {len(near)} of them lie within x{HardwareRow.NEAR} of it "
            f"({_share(near, expected)}), {len(far)} beyond x{HardwareRow.FAR}"
            + (f"; {own} measure the ceiling they are expected by (their speedup is it)" if own else ""))


def _share(part: Sequence[object], whole: Sequence[object]) -> str:
    return f"{len(part) / len(whole):.0%}" if whole else "-"


def hardware_table(rows: Sequence[HardwareRow]) -> Table:
    """Each benchmark's speedup, its expectation, measured/expected, the word, and where the expectation came
    from (the model's split of the current machine's time into compute, memory and launch) or why none."""
    return Table.of(
        ["benchmark", "speedup", "expected", "measured/expected", "verdict", "expected from"],
        [[h.benchmark, f"{h.speedup:.3g}x", "-" if h.expected is None else f"{h.expected:.3g}x",
          "-" if h.ratio is None else f"x{h.ratio:.3g}", h.verdict or ("-" if h.gpu else "host work"),
          h.source()]
         for h in rows])


def _times(value: float | None) -> str:
    return "-" if value is None else f"x{value:.3g}"


def check_text(rows: Sequence[HardwareRow], reference: str, target: str, notes: Sequence[str] = ()) -> str:
    """``perfkit predict --device RESULTS``: the model checked against a device that was measured: each
    speedup from ``reference`` beside the expected one, and how far each device's measured time lies above
    the model's (its roofs are a lower bound); ``notes``: where the roofs came from."""
    head = ["benchmark", "speedup", "expected", "measured/expected", "verdict", f"measured/model {reference}",
            f"measured/model {target}", "expected from"]
    cells = [[h.benchmark, f"{h.speedup:.3g}x", "-" if h.expected is None else f"{h.expected:.3g}x",
              _times(h.ratio), h.verdict or ("-" if h.gpu else "host work"),
              *(_times(e) for e in (h.errors() or (None, None))), h.source()] for h in rows]
    said = "".join(f"; {note}" for note in notes)
    return "\n\n".join([f"The model from {reference} to {target} (measured): {hardware_summary(rows)}{said}",
                         text_table(head, cells)])


def prediction_text(found: Sequence[Prediction], device: str, notes: Sequence[str], reference: str,
                    checks: Mapping[str, Sequence[HardwareRow]]) -> str:
    """``perfkit predict --device KEY``: each benchmark's time on ``device``, from what ``reference``
    measured and the expected speedup, the model's own time there (a lower bound) and its split; beside it
    the model's speedup error from ``reference`` to each other device at hand (measured/expected)."""
    errors = {other: {h.benchmark: h for h in rows} for other, rows in checks.items()}
    head = ["benchmark", "figure", f"measured on {reference}", "expected speedup", f"predicted on {device}",
            "model's own time (lower bound)", "expected from", *[f"error to {other}" for other in errors]]
    cells = [[p.benchmark, p.expectation.figure, fmt_time(p.reference_s),
              "-" if p.expectation.expected is None else f"{p.expectation.expected:.3g}x",
              fmt_time(p.predicted_s), fmt_time(p.expectation.model.current.seconds if p.expectation.model
                                                else None), p.expectation.source(),
              *(_times(rows[p.benchmark].ratio) if p.benchmark in rows else "-" for rows in errors.values())]
             for p in found]
    gpu = [p for p in found if p.expectation.gpu]
    carried = [p for p in gpu if p.predicted_s is not None]
    lines = [(f"Predicted on {device} from {reference}: {len(carried)} of {len(gpu)} GPU benchmarks "
              f"({_share(carried, gpu)}); {'; '.join(notes)}")]
    lines += [f"The model's error measured from {reference} to {other}: {hardware_summary(rows)}"
              for other, rows in checks.items()]
    return "\n\n".join([*lines, text_table(head, cells)])


def hardware_blocks(cmp: Comparison) -> list[document.Block]:
    """Across hardware: each benchmark's speedup beside the speedup expected of it."""
    if not cmp.hardware_rows:
        return []
    return [
        Text(
            "Across hardware: speedup (baseline time / current time; a ceiling's own benchmark: current "
            "rate / baseline rate; where a benchmark gates on another time or a rate, that figure) beside "
            "the speedup expected of it: a kernel's ceiling ratio on each side, else the per-layer roofline "
            f"model's ratio (perfkit.verdict.expected); {hardware_summary(cmp.hardware_rows)}"
        ),
        hardware_table(cmp.hardware_rows),
    ]


def machine_names(cmp: Comparison) -> tuple[str, str]:
    """The baseline's and the current machine's names: their hardware ids, or where one id names both (CPUs
    of two generations, PerfkitInfo.machine_change) what tells them apart: "cpu-amd-epyc-2cpu over
    cpu-amd-epyc-2cpu" says nothing."""
    if cmp.baseline_id != cmp.current_id:
        return cmp.baseline_id, cmp.current_id
    told = [(str(old), str(new)) for name, old, new in cmp.fingerprint_changes
            if name in ("cpu_model", "cpu_signature")]
    if not told:
        return cmp.baseline_id, cmp.current_id
    return (", ".join(old for old, _ in told), ", ".join(new for _, new in told))
