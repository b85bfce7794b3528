"""The run report on the committed H200 baseline: every family's plot and the PPP table; the verdict line
and the rows to read first, the rest folded, each family's table beside its plots, trends of the kept runs;
the job summary within GitHub's size limit."""
from __future__ import annotations

import dataclasses
import html
import json
import re
import statistics

import pytest

from perfkit import SCHEMA_VERSION, cli
from perfkit.render import (
    families,
    family_tables,
    hardware_chart,
    plots_kernels,
    plots_models,
    plots_training,
    report,
    speedups,
    tables,
    verdicts,
)
from perfkit.render.tables import fmt_time
from perfkit.resultfile import derived, load, payloads
from perfkit.resultfile.ceilings import Ceilings
from perfkit.store import baseline_runs
from perfkit.verdict.judge import Comparison, Row, Verdict
from tests.conftest import DATA, INJECTED, ROOT, all_slowed, judged, one_run, typed


@pytest.mark.slow
def test_the_h200_report_has_every_familys_chart(tmp_path, h200_results):
    path = report.write_report(typed(h200_results), tmp_path)
    text = path.read_text()
    for png in ("layers.png", "vgg_swap.png", "memory_breakdown.png", "roofline.png", "ceilings.png",
                "ppp.png"):
        assert (tmp_path / png).stat().st_size > 10_000 and f"]({png})" in text


@pytest.mark.slow
def test_the_ppp_table_lists_every_model_and_batch(tmp_path, h200_results):
    text = report.write_report(typed(h200_results), tmp_path).read_text()
    section = text.split("## Platform percent of peak (forward)")[1].split("\n## ")[0]
    for model in ("vgg16", "vgg19", "resnet18", "resnet50"):
        assert f"| {model} | 1 |" in section and f"| {model} | 64 |" in section
    assert "the 8 slowest layers" in section and "multiply-add as 2" in section


def test_roofline_points_carry_the_ncu_bytes_and_each_model_sits_under_its_roof(h200_results):
    runs = list(typed(h200_results).family(payloads.Roofline))
    assert {p.bytes_source for _, rec in runs for p in rec.points} == {"analytic minimum", "ncu dram"}
    assert all(0 < (bench.value("share_of_roof") or 0) <= 1 for bench, _ in runs)


def test_roofline_cli_draws_the_chart(tmp_path, h200_results):
    results = tmp_path / "h200.json"
    results.write_text(json.dumps(h200_results))
    assert cli.main(["roofline", str(results), "--out", str(tmp_path / "r" / "roof.png")]) == 0
    assert (tmp_path / "r" / "roof.png").stat().st_size > 10_000


def test_roofline_cli_without_ppp_results_says_what_to_run(tmp_path, cpu_results, capsys):
    results = tmp_path / "cpu.json"
    results.write_text(json.dumps(cpu_results))
    assert cli.main(["roofline", str(results), "--out", str(tmp_path / "roof.png")]) == cli.EXIT_USAGE
    assert "run benches/test_ppp.py on a GPU" in capsys.readouterr().err


@pytest.mark.parametrize("plotter", [p for family in families.REGISTRY.values() for p in family.plots])
def test_plotters_draw_nothing_for_a_run_without_their_family(tmp_path, plotter):
    info = {"perfkit": {"schema_version": SCHEMA_VERSION}}
    empty = load.typed({"benchmarks": [], "machine_info": info}, "no benchmarks")
    assert list(plotter(empty, tmp_path)) == []


def _moved(raw: dict, files: dict[str, str]) -> dict:
    """``raw`` with the benchmarks of each bench file of ``files`` moved to the file named beside it (in every
    place the results name a benchmark: its entry, its stored runs, its noise)."""
    text = json.dumps(raw)
    for old, new in files.items():
        text = text.replace(f'"benches/{old}.py::', f'"benches/{new}.py::')
    return json.loads(text)


def test_a_renamed_bench_file_keeps_its_plots_and_its_section(tmp_path):
    """The vector add's benchmarks in a file of another name, carrying the same records: the report finds its
    plots by the records (perfkit.render.families), where it once looked them up by the file's name."""
    raw = one_run(json.loads((ROOT / "baselines" / "nvidia-h200-x1.json").read_text()))
    raw["benchmarks"] = [b for b in raw["benchmarks"] if "/test_vector_add.py::" in b["fullname"]]
    text = report.write_report(typed(_moved(raw, {"test_vector_add": "test_renamed"})), tmp_path).read_text()
    assert "test_vector_add" not in text
    section = text.split("\n## test_renamed\n")[1].split("\n## ")[0]
    assert "| test_cpu_loop[K1] |" in section  # benches/test_renamed.py::test_cpu_loop[K1]
    for png in ("vector_add_explicit.png", "vector_add_managed.png"):
        assert f"]({png})" in section and (tmp_path / png).stat().st_size > 10_000


#: Every bench file of the quick H200 baseline (every family but the all-reduce's), and of the two-GPU one
#: (the nightly's families, the batch sweep aside).
_FAMILY_FILES = {
    "nvidia-h200-x1-quick": ["test_ceilings", "test_vector_add", "test_layers", "test_vgg_swap",
                             "test_model_memory", "test_ppp", "test_data_parallel", "test_capacity",
                             "test_batch_sweep", "test_time_to_accuracy", "test_large_batch", "test_flops",
                             "test_timer_fidelity"],
    "nvidia-h200-x2": ["test_ceilings", "test_vector_add", "test_layers", "test_vgg_swap",
                       "test_model_memory", "test_ppp", "test_data_parallel", "test_capacity",
                       "test_time_to_accuracy", "test_large_batch", "test_flops", "test_timer_fidelity"],
}


@pytest.mark.parametrize("baseline", sorted(_FAMILY_FILES))
def test_every_family_goes_where_its_records_are_whatever_its_files_are_named(baseline):
    """Each bench file moved to an unrelated name: every family's plots and tables land in the same file's
    section, in the same order (the registry's, then the run's) as under its own name."""
    raw = json.loads((ROOT / "baselines" / f"{baseline}.json").read_text())
    names = {old: f"moved_{i}" for i, old in enumerate(_FAMILY_FILES[baseline])}
    placed = families.placed(typed(raw))
    moved = families.placed(typed(_moved(raw, names)))
    assert [title for title in placed if title in names] == _FAMILY_FILES[baseline]  # the registry's order
    assert {names.get(title, title): found for title, found in placed.items()} == moved
    held = [family for key, family in families.REGISTRY.items()
            if any(families.carries(bench, key) for bench in typed(raw).benchmarks)]
    assert [family for title in moved if title.startswith("moved_") for family in moved[title]] == held


@pytest.mark.slow
def test_a_report_of_renamed_bench_files_is_the_same_report(tmp_path):
    """The quick H200 baseline under its own file names and under others: the same report, names aside."""
    raw = json.loads((ROOT / "baselines" / "nvidia-h200-x1-quick.json").read_text())
    names = {old: f"moved_{i}" for i, old in enumerate(_FAMILY_FILES["nvidia-h200-x1-quick"])}
    text = report.write_report(typed(raw), tmp_path / "own").read_text()
    moved = report.write_report(typed(_moved(raw, names)), tmp_path / "moved").read_text()
    for old, new in sorted(names.items(), key=lambda item: -len(item[1])):  # moved_10 before moved_1
        moved = re.sub(rf"\b{new}\b", old, moved)
    assert moved == text
    assert sorted(p.name for p in (tmp_path / "own").glob("*.png")) == sorted(
        p.name for p in (tmp_path / "moved").glob("*.png")) != []


def test_ceilings_a_run_did_not_measure_still_get_their_section(tmp_path):
    """A run without the ceilings' benchmarks that still holds ceilings (kept in the file, or lent by its
    baseline) shows them under the family's own name."""
    raw = one_run(json.loads((ROOT / "baselines" / "nvidia-h200-x1.json").read_text()))
    raw["benchmarks"] = [b for b in raw["benchmarks"] if "/test_layers.py::" in b["fullname"]]
    text = report.write_report(typed(raw), tmp_path).read_text()
    section = text.split("\n## ceilings\n")[1].split("\n## test_layers\n")[0]
    assert "](ceilings.png)" in section and "\n### Ceilings\n" in section


def test_the_4gpu_report_draws_scaling_and_tabulates_ddp_beside_dataparallel(tmp_path):
    results = typed(json.loads((ROOT / "baselines" / "nvidia-h200-x4.json").read_text()))
    text = report.write_report(results, tmp_path).read_text()
    for png in ("speedup.png", "compute_comm.png", "busbw.png"):
        assert (tmp_path / png).stat().st_size > 10_000 and f"]({png})" in text
    section = text.split("## Data-parallel scaling")[1].split("\n## ")[0]
    for method in ("DDP", "DataParallel"):
        for gpus in (1, 2, 4):
            assert f"| {method} | resnet50-224-b64 | {gpus} |" in section


def test_the_scaling_table_gives_a_baselines_median_and_range_where_its_runs_disagree(tmp_path):
    """Three runs of one 4xH100 machine: the NCCL kernel time of DDP ResNet-50 on 4 GPUs moved 30x between
    them, so no one run's value stands for the job; ResNet-50's step agreed within 1%: its median alone."""
    results = typed(json.loads((ROOT / "baselines" / "nvidia-h100-80gb-hbm3-x4.json").read_text()))
    section = report.write_report(results, tmp_path).read_text().split("## Data-parallel scaling")[1]
    kept = results.runs()["benches/test_data_parallel.py::test_ddp[resnet50-224-b64-gpus4]"]["nccl_kernel_ms"]
    assert len(kept) == 3 and max(kept) > 10 * min(kept)
    row = next(line for line in section.splitlines() if line.startswith("| DDP | resnet50-224-b64 | 4 |"))
    cells = row.split(" | ")
    assert cells[9] == f"{statistics.median(kept):.3g} ({min(kept):.3g} to {max(kept):.3g})"
    steps = results.runs()["benches/test_data_parallel.py::test_ddp[resnet50-224-b64-gpus4]"]["time"]
    assert cells[3] == fmt_time(statistics.median(steps))  # three runs within 10%: their median alone
    third = load.typed(baseline_runs.unpack(results).runs[2], "third data-parallel run")  # [3]: large batch
    plain = report.write_report(third, tmp_path / "one").read_text().split("## Data-parallel scaling")[1]
    table = plain.split("\n## ")[0].split("|---|")[-1]
    assert "| DDP | resnet50-224-b64 | 4 |" in table and " to " not in table  # one run: its own values
    name = "benches/test_data_parallel.py::test_ddp[resnet50-224-b64-gpus4]"
    assert results.median(name, "nccl_kernel_ms") == statistics.median(kept)  # what the plots draw too
    assert third.median(name, "nccl_kernel_ms") == third.by_name()[name].value("nccl_kernel_ms")
    assert third.median(name, "no such figure") is None


def test_the_large_batch_table_gives_each_runs_gpus_batch_rule_and_rate(tmp_path):
    # the four-GPU baseline's large-batch entries of 2026-11-22 (ids of before the harder synthetic set), kept
    # by `perfkit baseline save <that file> --only '*test_large_batch*' --merge --dir <an empty folder>` when
    # the baseline dropped them
    results = typed(json.loads((ROOT / "tests" / "data" / "h200-x4-large-batch.json").read_text()))
    text = report.write_report(results, tmp_path).read_text()
    table = text.split("## Large-batch training (same epochs)")[1].split("\n## ")[0]
    assert "| 1 | 128 | same | 0.1 |" in table and "| 4 | 2048 | linear-warmup | 1.6 |" in table


def test_scaling_runs_are_read_back_from_their_records():
    results = typed(json.loads((ROOT / "baselines" / "nvidia-h200-x2.json").read_text()))
    runs = derived.scaling_runs(results)
    assert {(r.method, r.gpus) for _, r in runs} == {(m, n) for m in ("DDP", "DataParallel") for n in (1, 2)}
    bench, _ = next(
        (b, r) for b, r in runs if r.method == "DDP" and r.workload == "resnet50-224-b64" and r.gpus == 2
    )
    assert bench.value("speedup") == pytest.approx(2 * (bench.value("scaling_efficiency") or 0))


def test_the_end_of_run_summary_lists_verdicts_worth_reading_and_counts_the_rest(cpu_results):
    from tests.conftest import slowed, three_runs

    matmul = "benches/test_ceilings.py::test_matmul_flops[fp32]"
    current = slowed(cpu_results, matmul, 1.5)
    current["benchmarks"] = [b for b in current["benchmarks"] if "copy" not in b["fullname"]]
    lines = verdicts.summary_lines(judged(three_runs(cpu_results), current), "baselines/x.json")
    assert "1 regressed" in lines[0] and any(
        line.strip().startswith("regressed") and matmul in line for line in lines
    )
    assert any("2 missing benchmark(s): in the baseline, not in this run" in line for line in lines)
    assert not any(line.strip().startswith(("missing", "info")) for line in lines)
    assert any(line.strip().startswith("regressed/improved:") for line in lines)
    head = next(i for i, line in enumerate(lines) if line.strip().startswith("verdict"))
    assert lines[head + 2].index(matmul) == lines[head].index("benchmark")  # the detail lines are columns
    narrow = verdicts.summary_lines(judged(three_runs(cpu_results), current), "baselines/x.json", width=80)
    table = narrow[1:narrow.index(next(line for line in narrow if "missing benchmark(s)" in line))]
    assert max(map(len, table)) <= 80 and any("test_matmul_flops[fp32]" in line for line in table)


@pytest.mark.slow
def test_the_end_of_a_run_says_where_the_results_went_and_why_tests_skipped(pytester):
    pytester.makepyfile("""
import pytest
def test_a(benchmark):
    benchmark(lambda: None)
@pytest.mark.gpus(8)
def test_b():
    pass
""")
    result = pytester.runpytest("-p", "perfkit.plugin", "--perfkit-device=cpu", "--benchmark-json=r.json")
    result.stdout.fnmatch_lines(
        [
            "perfkit: 1 skipped: needs a CUDA GPU*",
            "perfkit: results in r.json",
        ]
    )


def test_capacity_and_batch_sweep_from_an_h200_run_are_tabulated_and_drawn(tmp_path):
    results = typed(json.loads((ROOT / "tests" / "data" / "h200-x4-capacity.json").read_text()))
    text = report.write_report(results, tmp_path).read_text()
    capacity = text.split("## Layer-stack capacity (seed 000 Task 1)")[1].split("\n## ")[0]
    assert "| split | whole card | 2838 | 2838 | out of memory | 24 |" in capacity
    assert re.search(
        r"peaks [0-9.]+ / [0-9.]+ GiB; GPU 0 \+ copy \+ GPU 1: [0-9.e+]+ \+ [0-9.]+ \+ [0-9.e+]+ ms", capacity
    )
    assert "61 conv + 62 fc: 109.2 ms" in capacity
    sweep = text.split("## Epoch time vs batch size (seeds 003 Q1, 004 2.1)")[1].split("\n## ")[0]
    assert "| resident | 32 | 13.4 s |" in sweep and "| 14.2 s |" in sweep and "| resident | 8192 |" in sweep
    for png in ("layer_capacity.png", "batch_sweep.png"):
        assert (tmp_path / png).stat().st_size > 10_000 and f"]({png})" in text


def test_a_cpu_run_draws_no_empty_memory_panel(tmp_path):
    from matplotlib.image import imread

    results = typed(
        json.loads((ROOT / "tests" / "data" / "cpu-quick-families.json").read_text())
    )  # every family
    [(_, swap)] = plots_models.plot_vgg_swap(results, tmp_path)
    assert imread(swap).shape[1] < 800  # one panel: the time; peak memory needs a GPU and is left out
    text = report.write_report(results, tmp_path / "all").read_text()
    assert all(
        (tmp_path / "all" / png).stat().st_size > 10_000 for png in re.findall(r"\]\(([^)]+\.png)\)", text)
    )


@pytest.mark.slow
def test_across_hardware_the_report_draws_speedup_against_the_ceiling_ratio(tmp_path, h200_results):
    other = json.loads(json.dumps(h200_results))  # a machine with 70% of the copy bandwidth, as an H100 has
    info = other["machine_info"]["perfkit"]
    info["hardware_id"] = "nvidia-h100-x1"
    info["ceilings"] = {
        k: v * (0.7 if k == "copy_bandwidth_gbps" else 1.0) for k, v in info["ceilings"].items()
    }
    for bench in other["benchmarks"]:
        stored = info["runs"].get(bench["fullname"], {})  # each run's figures, which a comparison reads
        if (bench.get("extra_info") or {}).get("bound") == "copy_bandwidth_gbps":
            bench["stats"]["median"] /= 0.7
            stored["time"] = [t / 0.7 for t in stored.get("time", [])]
        measured = (bench.get("extra_info") or {}).get("metrics", {}).get("copy_bandwidth_gbps")
        if measured:  # the copy ceiling this run measured
            measured["value"] *= 0.7
            stored["copy_bandwidth_gbps"] = [v * 0.7 for v in stored.get("copy_bandwidth_gbps", [])]
    comparison = judged(h200_results, other)
    text = report.write_report(
        typed(other), tmp_path, comparison, "baselines/nvidia-h200-x1.json"
    ).read_text()
    assert "## Across hardware: measured vs expected speedup" in text
    assert (tmp_path / "hardware.png").stat().st_size > 10_000
    copies = [r for r in comparison.hardware_rows if r.bound == "copy_bandwidth_gbps"]
    assert copies and all(r.speedup == pytest.approx(r.expected, rel=1e-6) for r in copies)


@pytest.mark.parametrize(("mde", "text"), [(None, "-"), (0.052, "5.2%"), (9.5, "950.0%"), (1.3e25, ">1000%")])
def test_an_mde_past_a_thousand_percent_is_not_spelled_out(mde, text):
    assert verdicts.fmt_mde(mde) == text


def test_the_swap_memory_panel_leaves_out_the_cpu_cases_that_have_no_peak(tmp_path, monkeypatch):
    drawn: dict[str, list[str]] = {}
    real = plots_models.grouped_bars

    def record(ax, cases, series, label, spread=None):
        drawn[label] = list(cases)
        return real(ax, cases, series, label, spread)

    monkeypatch.setattr(plots_models, "grouped_bars", record)
    results = typed(
        json.loads((ROOT / "baselines" / "nvidia-h200-x1.json").read_text())
    )  # cpu and cuda cases
    plots_models.plot_vgg_swap(results, tmp_path)
    times = {label: cases for label, cases in drawn.items() if label.startswith("median time on")}
    # one linear time panel per device: on one log axis a GPU's forward beside a CPU's hid the swap
    assert {label.split()[3]: {c.split()[0] for c in cases} for label, cases in times.items()} == {
        "cpu": {"cpu"}, "cuda": {"cuda"}}
    assert drawn["peak allocated (MiB)"] == ["cuda forward", "cuda forward_backward"]


@pytest.fixture
def saved_figures(monkeypatch):
    """Every matplotlib figure a plotter saves during the test, to read its axes back."""
    import matplotlib.figure

    figs = []
    real = matplotlib.figure.Figure.savefig

    def keep(fig, *args, **kwargs):
        figs.append(fig)
        return real(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep)
    return figs


def test_bars_stand_on_linear_axes_from_zero_each_labelled_with_its_value(tmp_path, saved_figures):
    results = typed(json.loads((ROOT / "baselines" / "nvidia-h200-x1.json").read_text()))
    for plotter in (plots_kernels.plot_ceilings, plots_models.plot_layers, plots_models.plot_vgg_swap):
        plotter(results, tmp_path)
    axes = [ax for fig in saved_figures for ax in fig.axes]
    assert axes and all(ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0 for ax in axes)
    labels = [text.get_text() for ax in axes for text in ax.texts]
    assert len(labels) >= sum(len(ax.patches) for ax in axes) // 2 and all(labels)


def test_ceilings_no_datasheet_lists_get_panels_of_their_own_with_no_datasheet_bar(tmp_path, saved_figures):
    raw = json.loads((ROOT / "baselines" / "nvidia-h200-x1.json").read_text())
    measured = {"one_block_copy_k100_gbps": 5.1, "one_block_copy_k1_gbps": 12.0,
                "one_thread_copy_k1_gbps": 0.16, "first_touch_k100_gbps": 9.3, "first_touch_k1_gbps": 6.2}
    ceilings = raw["machine_info"]["perfkit"]["ceilings"]
    for key in measured:  # a run measured before the one-multiprocessor ceilings existed
        ceilings.pop(key, None)
    raw["benchmarks"] = [b for b in raw["benchmarks"]
                         if not b["name"].startswith(("test_one_sm_copy", "test_first_touch"))]
    plots_kernels.plot_ceilings(typed(raw), tmp_path)
    raw["machine_info"]["perfkit"]["ceilings"].update(measured)
    plots_kernels.plot_ceilings(typed(raw), tmp_path)
    before, after = saved_figures
    assert len(before.axes) == 2 and len(after.axes) == 4
    one_sm, touch = after.axes[2:]
    ticks = ["one thread K1", "one block K1", "one block K100"]
    assert [t.get_text() for t in one_sm.get_xticklabels()] == ticks
    assert len(one_sm.patches) == 3 and [t.get_text() for t in one_sm.texts] == ["0.16", "12", "5.1"]
    assert [t.get_text() for t in touch.get_xticklabels()] == ["first touch K1", "first touch K100"]
    assert [t.get_text() for t in touch.texts] == ["6.2", "9.3"]
    for panel in (one_sm, touch):
        assert [t.get_text() for t in panel.get_legend().get_texts()] == ["measured"]


def test_a_cpu_runs_titles_promise_no_datasheet_peak_or_utilisation(tmp_path):
    results = typed(json.loads((ROOT / "tests" / "data" / "cpu-quick-families.json").read_text()))
    titles = [title for family in families.REGISTRY.values() for plotter in family.plots
              for title, _ in plotter(results, tmp_path)]
    assert titles and not any(word in title for title in titles
                              for word in ("datasheet", "actual GPU memory", "GPU utilisation"))


# ---- verdict first: the report and the job summary ------------------------------------------------------


def _rows_table(markdown: str) -> list[str]:
    """The lines of the first table of a markdown page: the rows to read."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| verdict |"))
    return lines[start + 2 : lines.index("", start)]


def test_the_report_opens_with_one_verdict_line_that_carries_the_counts(injected_reports):
    counts = {v.value: n for v, n in injected_reports.comparison.counts().items()}
    assert counts["regressed"] == len(INJECTED) and counts["unknown"] and counts["missing"]
    first = (injected_reports.plain / "report.md").read_text().splitlines()[0]
    assert first.startswith("# same hardware (nvidia-h200-x1): ")
    for verdict in ("regressed", "unknown", "unchanged", "missing"):
        assert f"{counts[verdict]} {verdict}" in first
    assert "fingerprint changed: driver" in first
    assert re.search(r"MDE ≤ 5% for \d+ of \d+ gating figures, worst ", first)
    page = (injected_reports.plain / "report.html").read_text()
    assert re.search(r"<body>\s*<h1>(.*?)</h1>", page).group(1) == html.escape(first[2:])


def test_the_rows_to_read_come_first_worst_first_each_linked_to_its_familys_plot(injected_reports):
    text = (injected_reports.plain / "report.md").read_text()
    read = verdicts.to_read(injected_reports.comparison)
    rows = _rows_table(text)
    assert [line.split(" | ")[0].strip("| ") for line in rows] == [r.verdict.value for r in read]
    assert [r.verdict.value for r in read][:len(INJECTED)] == ["regressed"] * len(INJECTED)
    for line, row in zip(rows, read):
        family = row.benchmark.split("::")[0].removeprefix("benches/").removesuffix(".py")
        assert f"| [{row.benchmark}](#{family}) | {row.figure} |" in line
    order = [text.index(mark) for mark in ("| verdict |", "unchanged benchmark(s)", "missing benchmark(s)",
                                           "## Fingerprint", "| field | value |", "## test_ceilings")]
    assert order == sorted(order)  # the fingerprint no longer opens the page
    page = (injected_reports.plain / "report.html").read_text()
    assert set(re.findall(r'href="#([^"]+)"', page)) <= set(re.findall(r' id="([^"]+)"', page))


def test_unchanged_and_missing_rows_are_folded_inside_details(injected_reports):
    comparison = injected_reports.comparison
    text = (injected_reports.plain / "report.md").read_text()
    page = (injected_reports.plain / "report.html").read_text()
    counts = comparison.counts()
    for verdict in (Verdict.UNCHANGED, Verdict.MISSING):
        rows = [r for r in comparison.rows if r.verdict is verdict]
        summary = f"{counts[verdict]} {verdict.value} benchmark(s), {len(rows)} figure(s)"
        folded = text.split(f"<details><summary>{summary}</summary>")[1].split("</details>")[0]
        assert folded.count(f"\n| {verdict.value} | ") == len(rows)
        assert not any(line.startswith(f"| {verdict.value} |") for line in _rows_table(text))
        html_folded = page.split(f"<details><summary>{summary}</summary>")[1].split("</details>")[0]
        assert html_folded.count(f"<tr><td>{verdict.value}</td>") == len(rows)
    assert "<details open" not in page


def test_each_family_section_puts_its_table_beside_its_plots(injected_reports):
    page = (injected_reports.plain / "report.html").read_text()
    layers = page.split('<h2 id="test_layers">test_layers</h2>')[1].split("<h2")[0]
    assert layers.startswith('\n<div class="columns"><div><table class="benchmarks">')
    table, plots = layers.split("</table></div><div>")
    assert "<td>test_layer[conv-forward]</td><td>regressed</td>" in table
    assert plots.startswith('<figure><img alt="Per-layer memory and power"')
    text = (injected_reports.plain / "report.md").read_text()
    section = text.split("\n## test_layers\n")[1].split("\n## ")[0]
    assert section.index("| test_layer[conv-forward] | regressed |") < section.index("](layers.png)")


def test_with_kept_runs_each_row_shows_its_trend_and_links_its_chart_without_none(injected_reports):
    page = (injected_reports.kept / "report.html").read_text()
    text = (injected_reports.kept / "report.md").read_text()
    read = verdicts.to_read(injected_reports.comparison)
    rows_html = page.split('<table class="verdicts">')[1].split("</table>")[0]
    assert rows_html.count('<svg class="spark"') == len(read)
    chart = "time-of-benchestest_layerspytest_layerconv-forward"
    assert f'<a href="#{chart}"><svg class="spark"' in rows_html and f'<h3 id="{chart}">' in page
    layers = page.split('<h2 id="test_layers">')[1].split('class="benchmarks">')[1].split("</table>")[0]
    assert layers.count('<svg class="spark"') == layers.count("<tr>") - 1 == 8  # one per benchmark
    # each row's sparkline links to its own figure's chart (the time's, or an unsettled row's kernel_s)
    assert all(re.search(r" \| \[[▁▂▃▄▅▆▇█]{5}\]\(#[a-z_]+-of-", line) for line in _rows_table(text))
    section = text.split("\n## test_layers\n")[1].split("\n## ")[0]
    # five kept runs, each 2% slower than the last: a rising trend (8% in all, drawn on a 10% span at least)
    spark = re.search(r"\| test_layer\[conv-forward\] \| regressed \|.* \| ([▁▂▃▄▅▆▇█]{5}) \|", section)
    assert spark and spark[1][0] in "▁▂" and spark[1][-1] in "▇█" and list(spark[1]) == sorted(spark[1])
    plain = (injected_reports.plain / "report.html").read_text()
    plain_text = (injected_reports.plain / "report.md").read_text()
    assert "<svg" not in plain and "trend" not in plain_text and not re.search("[▁▂▃▄▅▆▇█]", plain_text)


def test_the_job_summary_stays_within_its_byte_budget_cutting_the_folded_rows_first(injected_reports):
    comparison = injected_reports.comparison
    filler = next(r for r in comparison.rows if r.verdict is Verdict.UNCHANGED)
    big = dataclasses.replace(comparison, rows=comparison.rows + tuple(
        dataclasses.replace(filler, benchmark=f"benches/test_many.py::test_case[{i}]") for i in range(9000)))
    assert len(verdicts.render(big, "markdown", show_unchanged=False).encode()) > verdicts.SUMMARY_BYTES
    note = "perfkit: confirmation: 3 flagged benchmark(s) re-run 3 time(s)"
    summary = verdicts.summary_markdown(big, [note])
    assert len(summary.encode()) <= verdicts.SUMMARY_BYTES
    assert summary.startswith(f"## {verdicts.verdict_line(big)}\n\nperfkit: confirmation:")
    read = verdicts.to_read(big)
    assert all(f"| {r.verdict.value} | {r.benchmark} | {r.figure} |" in summary for r in read)
    folded = summary.split("unchanged benchmark(s)")[1].split("</details>")[0]
    assert "Rows cut to keep this job summary under 1,000,000 bytes" in folded and "test_many" not in summary
    small = verdicts.summary_markdown(big, budget=3000)
    assert len(small.encode()) <= 3000 and small.startswith(f"## {verdicts.verdict_line(big)}\n")
    assert re.search(r"\n\d+ more row\(s\) to read cut to keep this job summary under 3,000 bytes", small)
    markdown = verdicts.render(comparison, "markdown", show_unchanged=False)
    assert verdicts.summary_markdown(comparison) == markdown


def test_the_verdict_line_counts_the_gating_figures_a_5_percent_change_could_move():
    def row(mde, verdict=Verdict.UNCHANGED):
        return Row("b", "time", "s", "lower", 1.0, 1.0, 0.0, verdict, gating=True, mde=mde)

    rows = (row(0.03), row(0.05), row(0.12), row(None), row(None, Verdict.MISSING))
    line = verdicts.verdict_line(Comparison("hw", "hw", rows))
    assert line.endswith("; fingerprint unchanged; MDE ≤ 5% for 2 of 4 gating figures, worst 12.0%, "
                         "1 without one (no noise known to weigh them)")
    assert verdicts.verdict_line(Comparison("hw", "hw", ())).endswith("; no gating figure compared")


def _hidden_points(fig, marker_px: float = 5.0) -> list[tuple[float, float]]:
    """The data points (lines' markers, scatters) of ``fig`` that a legend's box covers, in pixels: a point
    whose marker (``marker_px`` about its centre) reaches into the box."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # the plotter closed it: drawn again, as it was saved
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = [legend.get_window_extent(renderer) for legend in
             [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]]
    hidden = []
    for ax in fig.axes:
        data = [line.get_xydata() for line in ax.get_lines() if line.get_marker() not in (None, "None", "")]
        data += [c.get_offsets() for c in ax.collections if len(c.get_offsets())]
        for x, y in ax.transData.transform(np.concatenate(data)) if data else ():
            hidden += [(x, y) for box in boxes if box.x0 - marker_px <= x <= box.x1 + marker_px
                       and box.y0 - marker_px <= y <= box.y1 + marker_px]
    return hidden


def test_the_batch_sweep_compares_like_with_like_and_says_what_memory_its_search_had(tmp_path, saved_figures):
    raw = json.loads((ROOT / "tests" / "data" / "cpu-quick-families.json").read_text())
    for bench in raw["benchmarks"]:
        if "batch_capacity" in bench["extra_info"]:
            bench["extra_info"]["batch_capacity"]["room"] = "a 2 MiB synthetic budget"
    plots_training.plot_batch_sweep(typed(raw), tmp_path)
    (fig,) = saved_figures
    left, right = fig.axes
    assert left.get_xlim()[1] < 256 and right.get_xlim()[1] < 256  # measured at 32 and 128: no seed 2048
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("50,000-image epochs" in text for text in legend)  # the seed's throughput, not its epochs
    assert right.get_yscale() == "log" and left.get_yscale() == "linear"
    # the search had a synthetic budget, the sweep the host's memory, and batch 128 ran: no "out of memory
    # above" beside a point at 128
    assert ("largest batch the capacity search fit under a 2 MiB synthetic budget: 47 (the sweep's epochs "
            "had more memory: batch 128 ran)") in legend
    assert _hidden_points(fig) == []


def test_the_committed_cpu_batch_sweep_neither_contradicts_its_points_nor_hides_one(tmp_path, saved_figures):
    plots_training.plot_batch_sweep(load.load(ROOT / "baselines" / "cpu-amd-epyc-2cpu-quick.json"), tmp_path)
    (fig,) = saved_figures
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert not any("out of memory above" in text for text in legend)
    # the quick search on a CPU: 96 MiB from batch 8 since 2026-11-27 (256 MiB from 32 found 47 before)
    said = ("largest batch the capacity search fit under 96 MiB synthetic budget: 11 (the sweep's epochs had "
            "more memory: batch 128 ran)")
    assert said in legend
    # the report's table above it says the same (it read "largest batch that fits: 11 (out of memory)")
    cpu = load.load(ROOT / "baselines" / "cpu-amd-epyc-2cpu-quick.json")
    (text, _) = family_tables.batch_sweep_section(cpu, Ceilings({}))[0].blocks
    assert said in text.text and "(out of memory)" not in text.text
    assert _hidden_points(fig) == [] and not any(ax.get_legend() for ax in fig.axes)


def test_the_largest_batch_above_every_batch_swept_is_where_memory_ran_out(tmp_path, saved_figures):
    raw = json.loads((ROOT / "tests" / "data" / "cpu-quick-families.json").read_text())
    raw["benchmarks"] = [b for b in raw["benchmarks"] if "b128" not in b["fullname"]]
    plots_training.plot_batch_sweep(typed(raw), tmp_path)
    legend = [t.get_text() for t in saved_figures[0].legends[0].get_texts()]
    assert "largest batch that fits its search's memory: 47 (out of memory above)" in legend


def test_log_axes_carry_dots_not_bars_and_the_roofline_promises_no_ncu_points_it_lacks(tmp_path,
                                                                                      saved_figures):
    raw = json.loads((ROOT / "baselines" / "nvidia-h200-x1.json").read_text())
    for bench in raw["benchmarks"]:  # a run without ncu: every point's bytes are the analytic minimum
        for point in (bench["extra_info"].get("roofline") or {}).get("points", []):
            point["bytes_source"] = "analytic minimum"
    results = typed(raw)
    plots_models.plot_ppp(results, tmp_path)
    plots_models.roofline_chart(results, tmp_path / "roof.png")
    ppp, roof = saved_figures
    assert all(ax.get_xscale() == "log" and not ax.patches for ax in ppp.axes if ax.get_visible())
    assert "hollow" not in roof.axes[0].get_title() and roof.axes[0].collections


def _drawn(fig):
    """``fig`` drawn again as it was saved (the plotter closed it), and its renderer."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _plotted(ax) -> int:
    """How many points ``ax``'s scatters draw."""
    from matplotlib.collections import PathCollection

    return sum(len(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection))


def _overlapping_labels(ax, renderer, marker_px: float = 4.0) -> list[tuple[str, str]]:
    """Pairs of ``ax``'s point labels (annotations) whose text boxes overlap each other or a point's
    marker."""
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    notes = [a for a in ax.texts if a.get_text()]
    boxes = [Text.get_window_extent(a, renderer) for a in notes]  # the text, not its leader line
    from matplotlib.collections import PathCollection

    points = [xy for c in ax.collections if isinstance(c, PathCollection)
              for xy in ax.transData.transform(c.get_offsets())]
    markers = [Bbox.from_extents(x - marker_px, y - marker_px, x + marker_px, y + marker_px)
               for x, y in points]
    found = [(notes[i].get_text(), notes[j].get_text()) for i in range(len(notes))
             for j in range(i + 1, len(notes)) if boxes[i].overlaps(boxes[j])]
    return found + [(a.get_text(), "a point") for a, box in zip(notes, boxes) if any(box.overlaps(m)
                                                                                    for m in markers)]


@pytest.mark.parametrize("name", ["nvidia-h200-x1", "nvidia-h100-80gb-hbm3-x1"])
def test_the_rooflines_point_labels_cover_no_other_label_and_no_point(tmp_path, saved_figures, name):
    plots_models.roofline_chart(load.load(ROOT / "baselines" / f"{name}.json"), tmp_path / "roof.png")
    (fig,) = saved_figures
    (ax,) = fig.axes
    renderer = _drawn(fig)
    assert len(ax.texts) == len(ax.collections) >= 4  # one label per point
    assert _overlapping_labels(ax, renderer) == []
    inside = ax.get_window_extent(renderer)
    assert all(inside.contains(b.x0, b.y0) and inside.contains(b.x1, b.y1)
               for b in (t.get_window_extent(renderer) for t in ax.texts))


def test_across_two_cpus_under_one_id_the_plot_names_each_cpu_and_leaves_out_the_ceilings_own_points(
        tmp_path, saved_figures):
    from perfkit.cli import judge_files

    raw = json.loads((ROOT / "baselines" / "cpu-amd-epyc-2cpu-quick.json").read_text())
    other = all_slowed(one_run(raw), 2.5, raw["datetime"])
    other["machine_info"]["perfkit"]["fingerprint"].update(cpu_signature="family 25 model 1",
                                                           cpu_model="AMD EPYC 7B13")
    (tmp_path / "other.json").write_text(json.dumps(other))
    _, current, comparison = judge_files(ROOT / "baselines" / "cpu-amd-epyc-2cpu-quick.json",
                                         tmp_path / "other.json", None)
    assert speedups.machine_names(comparison) == ("AMD EPYC, family 26 model 2",
                                                "AMD EPYC 7B13, family 25 model 1")
    own = {r.benchmark for r in comparison.hardware_rows if r.by_definition}
    assert own == {"benches/test_ceilings.py::test_copy_bandwidth",
                   "benches/test_ceilings.py::test_matmul_flops[fp32]"}
    report.write_report(current, tmp_path / "report", comparison, "cpu.json")
    (fig,) = [f for f in saved_figures if f.axes[0].get_xlabel().startswith("expected speedup")]
    ax = fig.axes[0]
    assert ax.get_xlabel() == ("expected speedup of AMD EPYC 7B13, family 25 model 1 over AMD EPYC, "
                               "family 26 model 2")
    assert "cpu-amd-epyc-2cpu" not in ax.get_xlabel() + ax.get_ylabel()
    plotted = _plotted(ax)
    expected = [r for r in comparison.hardware_rows if r.expected and not r.by_definition]
    assert plotted == len(expected) == 8  # the eight layers; the two ceilings' own benchmarks not
    assert "2 ceiling benchmark(s) not shown" in ax.get_title()
    assert _overlapping_labels(ax, _drawn(fig)) == []


def test_the_h100_against_h200_plot_leaves_out_the_benchmarks_that_set_their_own_expectation(tmp_path,
                                                                                            saved_figures):
    from perfkit.cli import judge_files

    _, _, comparison = judge_files(ROOT / "baselines" / "nvidia-h200-x1.json",
                                   ROOT / "baselines" / "nvidia-h100-80gb-hbm3-x1.json", None)
    names = speedups.machine_names(comparison)
    hardware_chart.hardware_chart(comparison.hardware_rows, *names, tmp_path / "hw.png")
    ax = saved_figures[0].axes[0]
    own = [r for r in comparison.hardware_rows if r.by_definition]
    assert own and all(r.speedup == r.expected for r in own)  # the ceilings and the launch cost measured
    assert _plotted(ax) == sum(
        1 for r in comparison.hardware_rows if r.expected and not r.by_definition)
    assert ax.get_ylabel() == "measured speedup (nvidia-h200-x1 / nvidia-h100-80gb-hbm3-x1 time)"
    assert _overlapping_labels(ax, _drawn(saved_figures[0])) == []


def test_the_time_to_accuracy_chart_puts_training_time_on_its_x_axis(tmp_path, saved_figures):
    # the H200's runs keep each evaluation's training time (since 2026-11-23); the CPU file's runs kept only
    # their whole training time, their epochs spread evenly over it and drawn dotted
    timed_results = load.load(ROOT / "baselines" / "nvidia-h200-x1.json")
    untimed_results = load.load(DATA / "cpu-tta.json")
    for results, out in ((timed_results, tmp_path / "timed"), (untimed_results, tmp_path / "untimed")):
        out.mkdir()
        plots_training.plot_time_to_accuracy(results, out)
    timed_axis, untimed_axis = (fig.axes[0] for fig in saved_figures)
    assert timed_axis.get_xlabel().startswith("training time (s)") and "dotted" not in timed_axis.get_xlabel()
    timed = next(run for _, rec in timed_results.family(payloads.TimeToAccuracy) for run in rec.runs)
    line = next(line for line in timed_axis.get_lines() if list(line.get_ydata()) == list(timed.accuracies))
    assert list(line.get_xdata()) == list(timed.trained_s) and line.get_linestyle() == "-"
    assert untimed_axis.get_xlabel().startswith("training time (s)") and "dotted" in untimed_axis.get_xlabel()
    spread = next(run for _, rec in untimed_results.family(payloads.TimeToAccuracy) for run in rec.runs)
    assert not spread.trained_s
    line = next(ln for ln in untimed_axis.get_lines() if list(ln.get_ydata()) == list(spread.accuracies))
    assert line.get_xdata()[-1] == pytest.approx(spread.train_s) and line.get_linestyle() == ":"
    assert all("epoch" not in fig._suptitle.get_text() for fig in saved_figures)


def test_the_large_batch_section_answers_seed_003_q4_with_accuracy_per_epoch(tmp_path):
    # a real run on four H100s (pytest benches/test_large_batch.py -m "weekly or not weekly", 2026-11-26): the
    # linear rule's learning rate of 1.6 left both warm-ups at chance on the harder synthetic set
    raw = json.loads((ROOT / "tests" / "data" / "h100-x4-large-batch.json").read_text())
    text = report.write_report(typed(raw), tmp_path).read_text()
    assert (tmp_path / "large_batch.png").stat().st_size > 10_000 and "](large_batch.png)" in text
    lines = text.split("## Large-batch training (same epochs)")[1].split("\n## ")[0].splitlines()
    same_1gpu = next(line for line in lines if line.startswith("| 1 | 128 | same |"))
    assert "| 53% 90% 93% 94% 94% |" in same_1gpu and "| 84.7% (61.9%) |" in same_1gpu
    same_4gpu = next(line for line in lines if line.startswith("| 4 | 2048 | same |"))
    assert "| 38.9% (30.6%) |" in same_4gpu and "(chance)" not in same_4gpu
    for warmup in ("24", "48"):
        line = next(line for line in lines if line.startswith("| 4 | 2048 | linear-warmup |")
                    and f"| {warmup} |" in line)
        epochs = line.split(" | ")[5]
        assert epochs.endswith("(chance)") and len(epochs.split()) == 6  # five epochs' accuracies, the mark


def test_the_large_batch_section_quotes_the_seed_only_beside_a_run_of_its_epochs(tmp_path):
    # the quick profile trains 2 epochs: the seed's 5-epoch averages are not its figures; a record without
    # any epoch shows dashes, not a crash
    raw = json.loads((ROOT / "tests" / "data" / "h100-x4-large-batch.json").read_text())
    for bench in raw["benchmarks"]:
        history = bench["extra_info"]["large_batch"]["history"]
        del history[2 if "gpus1" in bench["name"] else 0:]
    text = report.write_report(typed(raw), tmp_path).read_text()
    lines = text.split("## Large-batch training (same epochs)")[1].split("\n## ")[0].splitlines()
    short = next(line for line in lines if line.startswith("| 1 | 128 | same |"))
    assert "| 53% 90% | 71.3% |" in short  # (52.97% + 89.58%) / 2, no seed figure beside it
    empty = next(line for line in lines if line.startswith("| 4 | 2048 | same |"))
    assert empty.split(" | ")[5:8] == ["-", "-", "-"]


def test_a_large_value_reads_whole_with_its_thousands_separated():
    assert tables.fmt_value(30990.4, "images") == "30,990 images"  # was 3.099e+04 on the dashboard
    assert tables.fmt_value(1234.6, "MiB") == "1235 MiB" and tables.fmt_value(0.01234, "") == "0.01234"
    assert tables.fmt_value(2e-3, "s") == fmt_time(2e-3)


def test_the_headline_says_how_many_unknowns_only_got_better():
    """A fresh H100's nightly read 14 unknown, 13 of them faster than the baseline (a quicker host): the one
    worth a re-run should not hide among them."""
    def row(name: str, change: float | None, better: str = "lower", figure: str = "time") -> Row:
        return Row(name, figure, "s", better, 1.0, None if change is None else 1.0 + change, change,
                   Verdict.UNKNOWN, gating=True)

    rows = (row("faster", -0.2), row("slower", 0.2), row("higher_rate", 0.2, "higher", "busbw_gbps"),
            row("only_here", None), row("mixed", -0.2), row("mixed", 0.2, figure="peak_allocated_mib"),
            row("still", 0.0))
    cmp = Comparison("gpu-x1", "gpu-x1", rows)
    # faster, higher_rate; a figure without a change, or one that did not move (a baseline compared with
    # itself read "36 unknown (36 of them better)"), is not called better
    assert cmp.unknown_better() == 2
    # one phrase, the noun said once: it read "6 unknown (2 of them better) (benchmarks)"
    assert verdicts.headline(cmp) == "same hardware (gpu-x1): of 6 benchmarks, 6 unknown (2 of them better)"
    worse_only = Comparison("gpu-x1", "gpu-x1", (row("slower", 0.2),))
    assert verdicts.headline(worse_only) == "same hardware (gpu-x1): of 1 benchmark, 1 unknown"


def test_the_legend_says_the_minimum_effects_and_alpha_the_comparison_was_judged_by():
    """A user who passes --threshold 0.1 reads 10% in the legend, not the default policy's 3% and 5%."""
    from perfkit.verdict.judge import Policy

    raw = load.read_json(ROOT / "baselines" / "cpu-amd-epyc-2cpu-quick.json")
    default = verdicts.meanings(judged(raw, raw))
    assert ("(3% for a GPU-bound benchmark, 2% where 20 or more runs of its own let its tails be read, "
            "else 5%, or a benchmark's own tolerance; wider where") in default
    assert "held at 5%" in default and "90% interval" in default
    wider = verdicts.meanings(judged(raw, raw, Policy(0.10, 0.10, 0.01, bound_threshold_shown=0.10)))
    assert "(10%, or a benchmark's own tolerance; wider where" in wider and "3% for a GPU-bound" not in wider
    assert "held at 1%" in wider and "98% interval" in wider


@pytest.mark.parametrize("baseline, seed_line",
                         [("cpu-amd-epyc-2cpu-quick", False), ("nvidia-h200-x1", True)])
def test_the_seeds_gtx_1080_ti_stack_is_drawn_only_beside_a_search_capped_to_a_gpu_memory(
        baseline, seed_line, tmp_path, saved_figures):
    """A CPU's 2 and 8 MiB synthetic budgets are no card's: the seed's 123 layers on 11 GB drawn over them
    compared nothing (a newcomer's trial, 2026-12-04)."""
    plots_training.plot_layer_capacity(load.load(ROOT / "baselines" / f"{baseline}.json"), tmp_path)
    legend = [t.get_text() for t in saved_figures[0].axes[0].get_legend().get_texts()]
    assert any("GTX 1080 Ti" in text for text in legend) == seed_line
