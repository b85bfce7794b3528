"""The measured numbers the docs quote, computed from the committed baselines (and the simulated error rates
kept in docs/data/) and kept between markers.

Why: numbers typed into a README go stale the night a baseline is re-saved (the H200's GEMM rates and vector
add times the README quoted were a week old). A doc holds ``<!-- numbers: NAME -->`` and
``<!-- /numbers -->`` around each block; ``python -m perfkit.docnumbers`` rewrites every block from
``baselines/``, and tests/test_docs.py fails where a block differs from what the committed files give now.
Each number is the median over the baseline's runs.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

from perfkit import simulate
from perfkit.render.tables import fmt_time
from perfkit.resultfile import datasheet, figures, load
from perfkit.resultfile.ceilings import Ceilings
from perfkit.resultfile.figures import TIME
from perfkit.resultfile.metrics import Method
from perfkit.resultfile.model import ResultSet
from perfkit.store import baselines
from perfkit.verdict.judge import MIN_BASELINE_RUNS, Verdict, judge
from perfkit.verdict.noise import Noise

ROOT = Path(__file__).resolve().parents[1]
#: The single-GPU baselines whose numbers the docs quote, by the name the tables give them.
GPUS = {"H200": "nvidia-h200-x1.json", "H100": "nvidia-h100-80gb-hbm3-x1.json"}
DOCS = ("README.md", "docs/*.md")
BLOCK = re.compile(r"(<!-- numbers: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /numbers -->)", re.DOTALL)


def _median(results: ResultSet, benchmark: str, figure: str) -> float | None:
    values = results.runs().get(f"benches/{benchmark}", {}).get(figure)
    return statistics.median(values) if values else None


def _runs(results: ResultSet, benchmark: str) -> int:
    return len(results.runs().get(f"benches/{benchmark}", {}).get(TIME, ()))


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows]) + "\n"


def _num(value: float | None, digits: str = ".3g", scale: float = 1.0) -> str:
    return "-" if value is None else f"{value * scale:{digits}}"


def ceilings(baselines: dict[str, ResultSet]) -> str:
    """Each GPU's measured copy and matmul ceilings beside its datasheet share."""
    rows = []
    for gpu, results in baselines.items():
        own = Ceilings.of(results)
        cells = [gpu, _num(own.value(datasheet.COPY), ".3g", 1e-3)]
        cells += [_num(own.value(datasheet.matmul_key(p)), ".3g") for p in datasheet.PRECISIONS]
        copy = _median(results, "test_ceilings.py::test_copy_bandwidth", figures.SHARE_OF_DATASHEET.name)
        cells += [_num(copy, ".0%"), str(_runs(results, "test_ceilings.py::test_copy_bandwidth"))]
        rows.append(cells)
    head = ["GPU", "copy TB/s", *(f"{p} TFLOP/s" for p in datasheet.PRECISIONS), "copy of datasheet", "runs"]
    return _table(head, rows)


VECTOR_ADD = (
    ("CPU loop (numba, one thread)", "test_cpu_loop[K{k}]", TIME),
    ("numpy", "test_cpu_numpy[K{k}]", TIME),
    ("grid, explicit copies: whole step", "test_gpu_explicit[K{k}-grid]", TIME),
    ("grid kernel alone", "test_gpu_explicit[K{k}-grid]", figures.KERNEL_S.name),
    ("tuned kernel alone", "test_gpu_explicit[K{k}-tuned]", figures.KERNEL_S.name),
    ("grid, managed: first launch", "test_gpu_managed[K{k}-grid-first]", TIME),
    ("grid, managed: warm kernel", "test_gpu_managed[K{k}-grid-warm]", figures.KERNEL_S.name),
)


def _older_method(results: ResultSet, name: str, figure: str) -> Method | None:
    """The code's method of ``figure`` where ``results`` measured it by an older one (a baseline not yet
    re-saved), else None."""
    entry, code = results.by_name().get(name), figures.newest_method(name, figure)
    return code if entry is not None and code is not None and entry.method(figure) < code.version else None


def vector_add(baselines: dict[str, ResultSet]) -> str:
    """The vector add's headline times at both nightly sizes, per GPU; a value measured by an older method
    than the code's says which."""
    head = ["vector add"] + [f"{gpu} K={k} M" for gpu in baselines for k in (1, 100)]
    rows = []
    for label, benchmark, figure in VECTOR_ADD:
        cells = [label]
        for results in baselines.values():
            for k in (1, 100):
                name = "test_vector_add.py::" + benchmark.format(k=k)
                newer = _older_method(results, f"benches/{name}", figure)
                cells.append(fmt_time(_median(results, name, figure))
                             + (f" (the method before {newer.since[:10]})" if newer else ""))
        rows.append(cells)
    return _table(head, rows)



LAYERS = (("ReLU", "relu"), ("MaxPool2d", "maxpool"), ("Conv2d 3→128", "conv"),
          ("Linear 25088→4096", "linear"))


def layers(baselines: dict[str, ResultSet]) -> str:
    """The course's single layers at batch 256: time, rate, memory and power, per GPU."""
    rows = []
    for gpu, results in baselines.items():
        for label, layer in LAYERS:
            for run_pass, words in (("forward", "forward"), ("forward_backward", "fwd + bwd")):
                name = f"test_layers.py::test_layer[{layer}-{run_pass}]"
                rate = _median(results, name, figures.TFLOPS.name)
                rate_text = (f"{_num(rate)} TFLOP/s" if rate is not None else
                             f"{_num(_median(results, name, figures.BANDWIDTH.name), '.3g', 1e-3)} TB/s")
                rows.append([gpu, label, words, fmt_time(_median(results, name, TIME)), rate_text,
                             f"{_num(_median(results, name, figures.PEAK_ALLOCATED_MIB.name), ',.0f')} MiB",
                             f"{_num(_median(results, name, figures.AVG_POWER_W.name), '.0f')} W",
                             f"{_num(_median(results, name, figures.ENERGY_J.name), '.3g')} J"])
    return _table(["GPU", "layer", "pass", "time", "rate", "peak allocated", "power", "energy / call"], rows)


def not_judged(results: ResultSet) -> int:
    """The benchmarks a verdict against ``results`` cannot judge, as the judge says of the baseline's own
    runs: a figure that began to gate after a benchmark's first runs holds fewer runs than the benchmark's
    time, so the runs of the time alone do not tell."""
    rows = judge(results, results, Noise.of(results)).rows
    return len({row.benchmark for row in rows if row.verdict is Verdict.NOT_JUDGED})


def committed_files(_: dict[str, ResultSet]) -> str:
    """Every committed baseline: its benchmarks, the runs they hold (fewest and most), those not judged for
    want of runs, the machines and the dates of those runs."""
    rows = []
    for path in sorted((ROOT / "baselines").glob("*.json")):
        results = load.load(path)
        held = baselines.held_in(results)
        dates = held.dates
        when = "-" if not dates else dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
        rows.append([f"`{path.stem}`", str(held.benchmarks), f"{held.runs[0]}-{held.runs[-1]}",
                     str(not_judged(results)), str(held.machines or "-"), when])
    thin = f"not judged (< {MIN_BASELINE_RUNS} runs)"
    return _table(["baseline", "benchmarks", "runs each", thin, "machines", "runs dated"], rows)


def _simulation(name: str) -> Callable[[dict[str, ResultSet]], str]:
    """The error-rate table that ``python -m perfkit.simulate --save docs/data/NAME.json`` kept, with
    its date and the spreads it drew from."""
    def block(_: dict[str, ResultSet]) -> str:
        kept = json.loads((ROOT / "docs" / "data" / f"{name}.json").read_text())
        source = ROOT / "baselines" / kept["spreads"]
        made_from = kept.get("spreads_sha256")
        if made_from and hashlib.sha256(source.read_bytes()).hexdigest() != made_from:
            raise ValueError(f"docs/data/{name}.json was simulated on another {source.name} than the one "
                             f"committed; run python -m perfkit.simulate --nights 400 --baseline "
                             f"baselines/{source.name} --night docs/data/{name}.json --save "
                             f"docs/data/{name}.json (--night: that file's nightly selection, or a "
                             "nightly's results.json on that hardware)")
        night = f", those of the {len(kept['night_benchmarks'])} benchmarks of {kept['night']}" if (
            "night" in kept) else ""
        return (f"Simulated {kept['date']} (seed {kept['seed']}, {kept['gating_figures']} gating "
                f"figures{night}; spreads: {kept['spreads']}):\n\n{simulate.table(kept['rows'])}\n")
    return block


def simulation_summary(_: dict[str, ResultSet]) -> str:
    """The synthetic error-rate table of docs/data/simulation.json folded for the README: each scenario's one
    run beside the same nights with ``--perfkit-confirm 3``."""
    kept = json.loads((ROOT / "docs" / "data" / "simulation.json").read_text())
    confirmed = {found[1]: (row, found[2]) for row in kept["rows"]
                 if (found := re.fullmatch(r"(.*), (--perfkit-confirm \d+)", row["scenario"]))}
    rows = [[row["scenario"], str(row["nights"]), f"{row['false_alarm']:.1%}", f"{row['power']:.0%}",
             f"{again['false_alarm']:.1%} ({option})", f"{again['power']:.0%}"]
            for row in kept["rows"] if row["scenario"] in confirmed
            for again, option in [confirmed[row["scenario"]]]]
    if not rows:
        raise ValueError("docs/data/simulation.json holds no scenario both alone and confirmed; re-make it "
                         "with python -m perfkit.simulate --nights 400 --save docs/data/simulation.json")
    head = ["synthetic nights", "nights", "one run: nights with a false verdict",
            "a change of its MDE flagged", "confirmed: false", "flagged"]
    return f"Simulated {kept['date']} (seed {kept['seed']}):\n\n" + _table(head, rows)


#: Leave-one-out pairs: each kind predicted from its datasheet and the other kind's baseline of as many GPUs.
HELD_OUT = (("1", "nvidia-h100-80gb-hbm3-x1", "h100-sxm", "nvidia-h200-x1"),
            ("1", "nvidia-h200-x1", "h200", "nvidia-h100-80gb-hbm3-x1"),
            ("2", "nvidia-h100-80gb-hbm3-x2", "h100-sxm", "nvidia-h200-x2"),
            ("2", "nvidia-h200-x2", "h200", "nvidia-h100-80gb-hbm3-x2"),
            ("4", "nvidia-h100-80gb-hbm3-x4", "h100-sxm", "nvidia-h200-x4"),
            ("4", "nvidia-h200-x4", "h200", "nvidia-h100-80gb-hbm3-x4"))


def held_out(_: dict[str, ResultSet]) -> str:
    """``perfkit predict --device KEY --from OTHER --held-out TARGET`` over the committed baselines: the GPU
    benchmarks that carry a datasheet-only expectation, and how many lie within x1.10 and x1.25 of it."""
    from perfkit import predict  # the work counts: no torch, the committed FLOP cache
    from perfkit.workloads import benchwork

    rows = []
    for gpus, target, key, reference in HELD_OUT:
        spec = datasheet.by_key(key)
        assert spec is not None, key
        measured, reference_set = (load.load(ROOT / "baselines" / f"{n}.json") for n in (target, reference))
        lenders = predict.lenders_for(reference_set, directory=ROOT / "baselines")
        counts = predict.HeldOutCounts.of(
            predict.held_out_rows(spec, measured, [reference_set], None, benchwork.work_of, lenders)[1])

        def counted(count: int, counts: predict.HeldOutCounts = counts) -> str:
            return f"{count} ({counts.share(count)})" if counts.carried else "-"

        rows.append([gpus, f"`{target}`", f"`{reference}`", f"{counts.carried} of {counts.gpu}",
                     counted(counts.near), counted(counts.within),
                     counts.named("`") or "-"])
    return _table(["GPUs", "predicted", "from (with its datasheet)", "GPU benchmarks with an expectation",
                   "within x1.10", "within x1.25", "beyond x1.25"], rows)


BLOCKS: dict[str, Callable[[dict[str, ResultSet]], str]] = {
    "baselines": committed_files, "ceilings": ceilings, "vector-add": vector_add, "layers": layers,
    "simulation": _simulation("simulation"), "simulation-h100": _simulation("simulation-h100"),
    "simulation-summary": simulation_summary,
    "held-out": held_out,
}


def committed(root: Path = ROOT) -> dict[str, ResultSet]:
    """The single-GPU baselines the tables quote, loaded by the one loader."""
    return {gpu: load.load(root / "baselines" / name) for gpu, name in GPUS.items()}


def rewritten(text: str, baselines: dict[str, ResultSet]) -> str:
    """``text`` with every numbers block rebuilt; an unknown block name is an error that lists the known."""
    def block(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in BLOCKS:
            raise KeyError(f"unknown numbers block {name!r}; known: {', '.join(BLOCKS)}")
        return match[1] + BLOCKS[name](baselines) + match[4]
    return BLOCK.sub(block, text)


def doc_files(root: Path = ROOT) -> list[Path]:
    """The README and every page under docs/."""
    return [path for pattern in DOCS for path in sorted(root.glob(pattern))]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m perfkit.docnumbers", description=__doc__)
    parser.parse_args(argv)
    baselines = committed()
    for path in doc_files():
        text = path.read_text(encoding="utf-8")
        new = rewritten(text, baselines)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"rewrote the numbers of {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
