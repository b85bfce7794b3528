"""History: pytest-benchmark's own storage read back as series, trends with change points, baselines from
it."""

from __future__ import annotations

import html
import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfkit import SCHEMA_VERSION, cli
from perfkit.errors import BaselineError, UsageError
from perfkit.store import storage_folder
from perfkit.verdict import trends

MACHINE = "Linux-CPython-3.11-64bit"
COPY = "benches/test_ceilings.py::test_copy_bandwidth"
ADD = "benches/test_vector_add.py::test_vector_add[explicit-1M]"


@pytest.fixture(autouse=True)
def _rows_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """`perfkit history` prints each row whole on one line, as a log holds it, whatever COLUMNS the shell
    exports (a narrow one shortens and wraps the rows these tests read; tests/test_cli.py checks that)."""
    monkeypatch.delenv("COLUMNS", raising=False)


def _run(times: dict[str, float], when: str, hardware_id: str = "cpu-test", data: bool = True,
         gbps: float | None = None) -> dict[str, Any]:
    """One stored perfkit run as autosave writes it: each benchmark's median ``times[name]``."""
    benches = []
    for name, median in times.items():
        stats: dict[str, Any] = {"median": median, "mean": median, "min": median, "max": median, "rounds": 5}
        if data:
            stats["data"] = [median] * 5
        extra = (
            {"metrics": {"bandwidth_gbps": {"value": gbps, "unit": "GB/s", "better": "higher"}}}
            if gbps
            else {}
        )
        benches.append({"fullname": name, "name": name.split("::")[-1], "group": None, "extra_info": extra,
                        "stats": stats})
    info = {"schema_version": SCHEMA_VERSION, "hardware_id": hardware_id, "fingerprint": {}, "ceilings": {}}
    return {"machine_info": {"perfkit": info}, "commit_info": {"id": f"c{when[8:10]}{when[11:13]}abcdef"},
            "benchmarks": benches, "datetime": when, "version": "5.3.1"}


def _store(storage: Path, runs: list[dict[str, Any]], machine: str = MACHINE, first: int = 1) -> list[Path]:
    """Write runs where ``--benchmark-autosave`` puts them:
    ``<storage>/<machine-id>/NNNN_<commit>_<date>.json``."""
    folder = storage / machine
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for number, run in enumerate(runs, first):
        stamp = (
            run.get("datetime", "2026-01-01T00:00:00")[:19]
            .replace("-", "")
            .replace(":", "")
            .replace("T", "_")
        )
        path = folder / f"{number:04d}_{run.get('commit_info', {}).get('id', 'unversioned')}_{stamp}.json"
        path.write_text(json.dumps(run, indent=4))
        paths.append(path)
    return paths


def _day(i: int) -> str:
    """Night ``i`` from 2026-01-01, 02:00 UTC (past the month's end: a date perfkit reads)."""
    night = datetime(2026, 1, 1, 2, tzinfo=timezone.utc) + timedelta(days=i)
    return night.isoformat(timespec="microseconds")


def _stepped(storage: Path, n: int = 24, at: int = 12, factor: float = 1.10, seed: int = 4) -> None:
    """``n`` nightly runs of two benchmarks; ``ADD`` gets ``factor`` slower from run ``at`` (0-based) on."""
    rng = np.random.default_rng(seed)
    runs = [_run({COPY: 1e-3 * (1 + 0.01 * rng.standard_normal()),
                  ADD: 2e-4 * (factor if i >= at else 1.0) * (1 + 0.01 * rng.standard_normal())},
                 _day(i), gbps=4200 * (1 + 0.01 * rng.standard_normal())) for i in range(n)]
    _store(storage, runs)


def test_runs_are_read_oldest_first_across_machine_id_folders_and_other_tools_left_out(tmp_path):
    _store(
        tmp_path, [_run({COPY: 1.0}, _day(0)), _run({COPY: 2.0}, _day(2))], machine="Linux-CPython-3.10-64bit"
    )
    _store(
        tmp_path, [_run({COPY: 1.5}, _day(1)), _run({COPY: 3.0}, _day(3))]
    )  # numbering restarts: 0001, 0002
    plain = {"machine_info": {"node": "x"}, "benchmarks": [], "datetime": _day(4)}
    (tmp_path / MACHINE / "0003_other_20260105_020000.json").write_text(json.dumps(plain))
    (tmp_path / MACHINE / "notes.json").write_text("{}")
    kept = storage_folder.load_history(tmp_path)
    assert [r.benchmarks[0].median for r in kept.runs] == [1.0, 1.5, 2.0, 3.0]
    assert [p.parent.name for p in kept.paths] == ["Linux-CPython-3.10-64bit", MACHINE] * 2
    assert kept.skipped == () and kept.hardware_ids() == ["cpu-test"]


def test_a_damaged_run_is_skipped_with_its_reason_and_the_rest_still_read(tmp_path):
    paths = _store(
        tmp_path, [_run({COPY: 1.0}, _day(0)), _run({COPY: 2.0}, _day(1)), _run({COPY: 3.0}, _day(2))]
    )
    paths[1].write_text('{"benchmarks": [')  # a run killed while it was written
    old = _run({COPY: 4.0}, _day(3))
    old["machine_info"]["perfkit"]["schema_version"] = 0
    _store(tmp_path, [old], first=4)
    kept = storage_folder.load_history(tmp_path)
    assert len(kept) == 2
    assert len(kept.skipped) == 2
    assert str(paths[1]) in kept.skipped[0] and "unreadable" in kept.skipped[0]
    assert "perfkit schema 0" in kept.skipped[1]


def test_only_the_runs_of_the_hardware_asked_for(tmp_path):
    _store(tmp_path, [_run({COPY: 1.0}, _day(0), "nvidia-h200-x1"), _run({COPY: 2.0}, _day(1), "cpu-test")])
    assert storage_folder.load_history(tmp_path).hardware_ids() == ["cpu-test", "nvidia-h200-x1"]
    assert [storage_folder.load_history(tmp_path, "nvidia-h200-x1").runs[0].benchmarks[0].median] == [1.0]


def test_series_of_the_time_and_of_a_metric_per_matching_benchmark(tmp_path):
    _store(
        tmp_path, [_run({COPY: 1.0, ADD: 5.0}, _day(0), gbps=4000.0), _run({COPY: 1.1}, _day(1), gbps=4100.0)]
    )
    kept = storage_folder.load_history(tmp_path).runs
    assert trends.series(kept) == {COPY: [(_day(0), 1.0), (_day(1), 1.1)], ADD: [(_day(0), 5.0)]}
    assert trends.series(kept, "*copy*", "bandwidth_gbps") == {COPY: [(_day(0), 4000.0), (_day(1), 4100.0)]}
    assert list(trends.series(kept, "vector_add")) == [ADD]  # no glob characters: a substring
    assert trends.series(kept, "*", "no_such_metric") == {}
    assert trends.unit_of(kept, COPY, "bandwidth_gbps") == "GB/s" and trends.unit_of(kept, COPY) == "s"


KERNEL = "benches/test_vector_add.py::test_gpu_explicit[K1-grid]"


def kernel_runs(old: int, new: int, slower_from: int, factor: float = 1.10) -> list[dict[str, Any]]:
    """Nightly runs of the K1 grid, gated on its kernel_s: ``old`` runs timed at the launch pace (method 1,
    25 us, 20% between runs), then ``new`` timed alone after an L2 flush (method 2, 8.4 us, 1%), ``factor``
    slower from run ``slower_from`` on."""
    rng = np.random.default_rng(6)
    runs = []
    for i in range(old + new):
        run = _run({KERNEL: 2e-3 * (1 + 0.01 * rng.standard_normal())}, _day(i))
        alone = i >= old
        kernel = (8.4e-6 * (factor if i >= slower_from else 1.0) if alone else 25e-6) * (
            1 + (0.01 if alone else 0.2) * rng.standard_normal())
        extra = run["benchmarks"][0]["extra_info"]
        extra.update(metrics={"kernel_s": {"value": kernel, "unit": "s", "better": "lower"}}, gate="kernel_s")
        if alone:
            extra["methods"] = {"kernel_s": 2}
        runs.append(run)
    return runs


def test_a_trend_breaks_where_its_figure_is_measured_another_way_and_finds_change_points_apart(tmp_path,
                                                                                              capsys):
    _store(tmp_path / "store", kernel_runs(6, 24, slower_from=18))
    kept = storage_folder.load_history(tmp_path / "store")
    (trend,) = trends.trends(kept.runs, figure="kernel_s")
    assert trend.methods == (1,) * 6 + (2,) * 24 and trend.breaks == [6]
    assert [c.index for c in trend.changes] == [18]  # the +10%, not the method's -66%
    (time,) = trends.trends(kept.runs)
    assert time.breaks == [] and time.changes == ()  # the whole step was measured one way all along
    assert cli.main(["history", "--storage", str(tmp_path / "store"), "--figure", "kernel_s",
                     "--out", str(tmp_path / "charts")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(KERNEL))
    assert "run 7 (2026-01-07 02:00, c0702abcde) measured by method 2 from here: a new series; run 19" in row
    (chart,) = (tmp_path / "charts").glob("*.png")
    assert chart.stat().st_size > 10_000


def test_storage_given_as_pytest_benchmarks_url_or_found_from_a_subfolder(tmp_path):
    assert storage_folder.storage_path(f"file://{tmp_path}") == tmp_path
    with pytest.raises(UsageError, match="only file://"):
        storage_folder.storage_path("elasticsearch+https://host/index")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / ".benchmarks").mkdir()
    (tmp_path / "benches" / "deep").mkdir(parents=True)
    assert storage_folder.find_storage(tmp_path / "benches" / "deep") == tmp_path / ".benchmarks"


def test_no_storage_folder_is_one_error_that_says_what_to_run(tmp_path):
    with pytest.raises(BaselineError, match="--benchmark-autosave"):
        storage_folder.load_history(tmp_path / "missing")


def test_a_baseline_from_history_takes_the_last_n_runs(tmp_path):
    _store(tmp_path, [_run({COPY: v}, _day(i)) for i, v in enumerate((9.0, 1.0, 1.01, 0.99))])
    baseline = storage_folder.baseline_from_history(tmp_path, None, 3)
    assert baseline.info.runs[COPY]["time"] == [1.0, 1.01, 0.99]
    assert baseline.info.run_dates == (_day(1), _day(2), _day(3))


@pytest.mark.parametrize(("runs", "n", "hardware_id", "error", "message"), [
    (2, 3, None, BaselineError, "holds 2 perfkit run(s) of cpu-test, fewer than the 3 asked for"),
    (3, 1, None, UsageError, "at least 2 runs"),
    (3, 3, "nvidia-h200-x1", BaselineError, "holds 0 perfkit run(s) of nvidia-h200-x1"),
])
def test_a_baseline_from_too_few_runs_is_refused(tmp_path, runs, n, hardware_id, error, message):
    _store(tmp_path, [_run({COPY: 1.0}, _day(i)) for i in range(runs)])
    with pytest.raises(error) as raised:
        storage_folder.baseline_from_history(tmp_path, hardware_id, n)
    assert message in str(raised.value)


def test_a_baseline_from_runs_of_several_machines_needs_the_hardware_id(tmp_path):
    _store(
        tmp_path,
        [_run({COPY: 1.0}, _day(i), hw) for i, hw in enumerate(("cpu-a", "cpu-b", "cpu-a", "cpu-a"))],
    )
    with pytest.raises(UsageError, match=r"several machines \(cpu-a, cpu-b\); pass --hardware-id"):
        storage_folder.baseline_from_history(tmp_path, None, 3)
    assert storage_folder.baseline_from_history(tmp_path, "cpu-a", 3).hardware_id == "cpu-a"


def test_a_baseline_needs_the_raw_samples_of_its_newest_run(tmp_path):
    _store(tmp_path, [_run({COPY: 1.0}, _day(i), data=i < 2) for i in range(3)])
    with pytest.raises(BaselineError, match="no raw samples .*--benchmark-save-data"):
        storage_folder.baseline_from_history(tmp_path, None, 3)


def test_history_prints_each_benchmarks_trend_and_the_step_with_its_run_and_size(tmp_path, capsys):
    _stepped(tmp_path)
    assert cli.main(["history", "--storage", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "24 stored run(s) of cpu-test" in out
    add = next(line for line in out.splitlines() if line.startswith(ADD))
    assert " 24 " in add and "run 13 (2026-01-13 02:00, c1302abcde) +" in add
    assert float(add.split(") +")[1].split("%")[0]) == pytest.approx(10.0, abs=1.5)
    copy = next(line for line in out.splitlines() if line.startswith(COPY))
    assert copy.rstrip().endswith("none")


def test_a_change_point_is_numbered_as_the_benchmarks_own_run_in_the_history_its_chart_and_the_dashboard(
        tmp_path, capsys):
    """ADD is first measured in run 11 of the kept runs: its step in its own run 13 (the kept runs' 23rd) is
    "run 13" in `perfkit history`, on its chart's axis and on the dashboard's page alike."""
    from perfkit.render import dashboard, dashboard_html

    rng = np.random.default_rng(4)
    runs = [_run({COPY: 1e-3 * (1 + 0.01 * rng.standard_normal())}, _day(i)) for i in range(10)]
    runs += [_run({COPY: 1e-3 * (1 + 0.01 * rng.standard_normal()),
                   ADD: 2e-4 * (1.1 if i >= 22 else 1.0) * (1 + 0.01 * rng.standard_normal())}, _day(i))
             for i in range(10, 34)]
    _store(tmp_path / "store", runs)
    assert cli.main(["history", "--storage", str(tmp_path / "store")]) == 0
    add = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(ADD))
    said = "run 13 (2026-01-23 02:00, c2302abcde) +"
    assert said in add and " 24 " in add
    kept = storage_folder.load_history(tmp_path / "store")
    (group,) = dashboard.build(kept).groups
    bench = next(b for b in group.benchmarks if b.name == ADD)
    dashboard_html.write(dashboard.Dashboard((group,)), tmp_path / "site")
    page = (tmp_path / "site" / dashboard_html.page_name(group, bench)).read_text()
    assert f"from {said}" in page
    assert [r.when for r in bench.runs][12] == _day(22)  # its Runs table's 13th row, its chart's 13th point


def _on_cpu(run: dict[str, Any], signature: str) -> dict[str, Any]:
    """``run`` as a CPU run on a host of CPU ``signature``."""
    run["machine_info"]["perfkit"].update(device="cpu")
    run["machine_info"]["perfkit"]["fingerprint"].update(cpu_signature=signature)
    return run


def test_a_trend_across_two_cpus_under_one_hardware_id_breaks_there_and_says_the_step(tmp_path, capsys):
    """The issue's trend: nine runs of the committed baseline's CPU at about 3.3 s, then one of another CPU
    generation under the same id at 82.6 s (+2400%): not "change points: none", but another machine's new
    series, said with its step, on the table, the chart and the dashboard; no change point across it."""
    from perfkit.render import dashboard, dashboard_html

    rng = np.random.default_rng(5)
    runs = [_on_cpu(_run({ADD: 3.3 * (1 + 0.02 * rng.standard_normal())}, _day(i)), "family 26 model 2")
            for i in range(9)]
    runs.append(_on_cpu(_run({ADD: 82.6}, _day(9)), "family 25 model 1"))
    runs += [_on_cpu(_run({ADD: 82.6 * (1 + 0.02 * rng.standard_normal())}, _day(i)), "family 25 model 1")
             for i in range(10, 14)]
    _store(tmp_path / "store", runs)
    kept = storage_folder.load_history(tmp_path / "store")
    (trend,) = trends.trends(kept.runs)
    assert trend.breaks == [9] and trend.changes == ()  # two series, each flat
    assert cli.main(["history", "--storage", str(tmp_path / "store"), "--out", str(tmp_path / "charts")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(ADD))
    said = ("run 10 (2026-01-10 02:00, c1002abcde) on another machine from here (cpu_signature family 26 "
            "model 2 -> family 25 model 1): a new series, not a change; its median +24")
    assert said in row and "none" not in row
    assert float(row.split("its median ")[1].split("%")[0]) == pytest.approx(2400, abs=60)
    (group,) = dashboard.build(kept).groups
    dashboard_html.write(dashboard.Dashboard((group,)), tmp_path / "site")
    page = (tmp_path / "site" / dashboard_html.page_name(group, group.benchmarks[0])).read_text()
    assert f"from {html.escape(said)}" in page
    (chart,) = (tmp_path / "charts").glob("*.png")
    assert chart.stat().st_size > 10_000


def test_history_of_a_metric_selected_with_k(tmp_path, capsys):
    _stepped(tmp_path)
    assert (
        cli.main(["history", "--storage", f"file://{tmp_path}", "-k", "*copy*", "--figure", "bandwidth_gbps"])
        == 0
    )
    out = capsys.readouterr().out
    assert COPY in out and ADD not in out and "GB/s" in out


def test_history_out_writes_a_chart_per_benchmark(tmp_path, capsys):
    _stepped(tmp_path / "store")
    assert cli.main(["history", "--storage", str(tmp_path / "store"), "--out", str(tmp_path / "charts")]) == 0
    charts = sorted((tmp_path / "charts").glob("*.png"))
    assert [p.name for p in charts] == ["history_test_ceilings.py__test_copy_bandwidth.png",
                                        "history_test_vector_add.py__test_vector_add_explicit-1M_.png"]
    assert all(p.stat().st_size > 10_000 for p in charts)
    assert "wrote 2 chart(s)" in capsys.readouterr().out


@pytest.mark.parametrize(("setup", "args", "message"), [
    ("none", ["history", "--storage", "{tmp}/missing"], "no such storage folder"),
    ("empty", ["history", "--storage", "{tmp}"], "holds no perfkit runs"),
    ("mixed", ["history", "--storage", "{tmp}"], "several machines (cpu-a, cpu-b)"),
    ("two", ["history", "--storage", "{tmp}", "-k", "nothing"], "no stored benchmark matches"),
    ("two", ["history", "--storage", "{tmp}", "--hardware-id", "cpu-b"],
     "holds no runs of cpu-b; it holds runs of cpu-test: pass one of them as --hardware-id"),
    ("two", ["history", "--storage", "{tmp}", "--figure", "gbps"],
     "no stored benchmark has a figure 'gbps'; they hold time: pass one as --figure"),
    ("two", ["baseline", "save", "--from-history", "3", "--storage", "{tmp}", "--dir", "{tmp}/b"],
     "fewer than the 3 asked for"),
    ("two", ["baseline", "save", "{tmp}/x.json", "--from-history", "2", "--storage", "{tmp}"], "not both"),
    ("two", ["baseline", "save"], "or --from-history N"),
])
def test_history_errors_are_one_line_exit_2(tmp_path, setup, args, message):
    if setup == "mixed":
        _store(tmp_path, [_run({COPY: 1.0}, _day(0), "cpu-a"), _run({COPY: 1.0}, _day(1), "cpu-b")])
    elif setup == "two":
        _store(tmp_path, [_run({COPY: 1.0}, _day(i)) for i in range(2)])
    done = subprocess.run([sys.executable, "-m", "perfkit.cli", *[a.format(tmp=tmp_path) for a in args]],
                          capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and message in done.stderr and "Traceback" not in done.stderr


TINY = """
import time
from perfkit.resultfile.metrics import MetricSpec
def test_sleep(benchmark, perfkit_metrics):
    benchmark.pedantic(time.sleep, args=(0.002,), rounds=5, warmup_rounds=1)
    perfkit_metrics.record(MetricSpec("naps_per_s", "1/s", "higher"), 500.0)
"""


@pytest.fixture(scope="module")
def autosaved(tmp_path_factory) -> Path:
    """Three real runs kept by pytest-benchmark's autosave (fresh processes: torch is imported once per
    process)."""
    root = tmp_path_factory.mktemp("autosaved")
    (root / "test_tiny.py").write_text(TINY)
    for _ in range(3):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "perfkit.plugin",
                "--perfkit-device=cpu",
                "--perfkit-baseline=none",
                "-p",
                "no:cacheprovider",
                "--benchmark-autosave",
                "--benchmark-save-data",
                f"--benchmark-storage=file://{root / 'store'}",
                "test_tiny.py",
            ],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root


@pytest.mark.slow
def test_runs_kept_by_autosave_are_read_back(autosaved):
    kept = storage_folder.load_history(autosaved / "store")
    assert len(kept) == 3 and kept.skipped == ()
    assert [p.name[:4] for p in kept.paths] == ["0001", "0002", "0003"]
    ((name, points),) = trends.series(kept.runs).items()
    assert (
        name == "test_tiny.py::test_sleep" and len(points) == 3 and all(0.002 <= v < 0.05 for _, v in points)
    )


def test_baseline_save_from_history_of_three_autosaved_runs(autosaved, tmp_path, capsys):
    args = [
        "baseline",
        "save",
        "--from-history",
        "3",
        "--storage",
        str(autosaved / "store"),
        "--dir",
        str(tmp_path),
    ]
    assert cli.main(args) == 0
    assert "the last 3 runs" in capsys.readouterr().out
    (saved,) = tmp_path.glob("*.json")
    runs = json.loads(saved.read_text())["machine_info"]["perfkit"]["runs"]["test_tiny.py::test_sleep"]
    assert set(runs) == {"time", "naps_per_s"} and all(len(values) == 3 for values in runs.values())
    assert cli.main([*args, "--force"]) == 0  # the usual save modes apply


def test_the_report_shows_the_kept_runs_trends_and_charts_the_ones_that_changed(tmp_path, capsys):
    _stepped(tmp_path / "store")
    results = json.loads((Path(__file__).parent / "data" / "cpu-quick.json").read_text())
    results["machine_info"]["perfkit"].update(hardware_id="cpu-test", profile="full")  # as the kept runs are
    (tmp_path / "results.json").write_text(json.dumps(results))
    assert cli.main(["report", str(tmp_path / "results.json"), "--out", str(tmp_path / "r"),
                     "--history", str(tmp_path / "store")]) == 0
    text = (tmp_path / "r" / "report.md").read_text()
    section = text.split("## History: 24 kept run(s) of cpu-test")[1]
    assert f"| {ADD} | 24 |" in section and "run 13 (2026-01-13 02:00, c1302abcde) +" in section
    assert f"| {COPY} | 24 |" in section and "| none |" in section
    assert [p.name for p in (tmp_path / "r").glob("history_*.png")] == [
        "history_test_vector_add.py__test_vector_add_explicit-1M_.png"]  # only the benchmark that changed
    page = (tmp_path / "r" / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == text.count("![") and 'alt="' + ADD + '"' in page


def test_a_report_whose_history_is_empty_is_still_written_and_says_why(tmp_path, capsys):
    results = tmp_path / "results.json"
    results.write_text((Path(__file__).parent / "data" / "cpu-quick.json").read_text())
    (tmp_path / "store").mkdir()
    assert (
        cli.main(["report", str(results), "--out", str(tmp_path / "r"), "--history", str(tmp_path / "store")])
        == 0
    )
    assert "report without history" in capsys.readouterr().err and (tmp_path / "r" / "report.html").exists()


def test_a_quick_runs_report_takes_no_trend_from_full_profile_runs(tmp_path, capsys):
    _stepped(tmp_path / "store")  # full-profile runs
    results = json.loads((Path(__file__).parent / "data" / "cpu-quick.json").read_text())
    results["machine_info"]["perfkit"]["hardware_id"] = "cpu-test"
    (tmp_path / "results.json").write_text(json.dumps(results))
    assert cli.main(["report", str(tmp_path / "results.json"), "--out", str(tmp_path / "r"),
                     "--history", str(tmp_path / "store")]) == 0
    assert "holds no kept runs of the quick profile" in capsys.readouterr().err
    assert "## History" not in (tmp_path / "r" / "report.md").read_text()
