"""Nothing lost when a run dies: the partial results file, a per-benchmark time limit, the nightly
selection."""

from __future__ import annotations

import json

import pytest

from perfkit import cli
from perfkit.errors import BaselineError
from perfkit.resultfile import load, partial

PLUGIN = ("-p", "perfkit.plugin", "--perfkit-device=cpu", "--perfkit-baseline=none")
THREE_THEN_KILLED = """
import os, signal, time
from perfkit.resultfile.metrics import MetricSpec
def test_a(benchmark):
    benchmark.pedantic(time.sleep, args=(0.001,), rounds=5)
def test_b(benchmark, perfkit_metrics):
    benchmark.pedantic(time.sleep, args=(0.002,), rounds=5)
    perfkit_metrics.record(MetricSpec("items", "count", "none"), 3)
def test_killed(benchmark):
    benchmark.pedantic(time.sleep, args=(0.001,), rounds=2)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_partial_lines_load_back_and_a_half_written_line_is_dropped(tmp_path):
    path = partial.path_for(tmp_path / "r.json")
    writer = partial.PartialFile(path)
    header = {"machine_info": {"perfkit": {"hardware_id": "cpu-x"}}, "commit_info": {}}
    for name in ("a", "b"):
        writer.append({"fullname": name, "stats": {"median": 1.0}}, lambda: header)
    path.write_text(path.read_text() + '{"fullname": "c", "sta')  # killed mid-write
    results = load.read_json(path)
    assert [b["fullname"] for b in results["benchmarks"]] == ["a", "b"]
    assert results["machine_info"]["perfkit"]["hardware_id"] == "cpu-x"
    writer.remove_if_complete()
    assert path.exists()  # no final JSON yet
    (tmp_path / "r.json").write_text("")  # pytest-benchmark 5.2 creates it empty when the run starts
    writer.remove_if_complete()
    assert path.exists()
    (tmp_path / "r.json").write_text("{}")
    writer.remove_if_complete()
    assert not path.exists()


def test_compare_says_a_partial_file_is_a_run_cut_short_and_that_its_torn_line_was_dropped(tmp_path, capsys,
                                                                                            cpu_results):
    path = partial.path_for(tmp_path / "r.json")
    writer = partial.PartialFile(path)
    header = {key: cpu_results[key] for key in ("machine_info", "commit_info", "datetime")}
    for bench in cpu_results["benchmarks"][:2]:
        writer.append(bench, lambda: header)
    assert cli.main(["compare", str(path), str(path)]) == 0
    said = f"perfkit: {path}: a run cut short (a partial results file): only the 2 benchmark(s) it finished"
    assert capsys.readouterr().err == f"{said}\n{said}\n"
    path.write_text(path.read_text() + json.dumps(cpu_results["benchmarks"][2])[:80])  # killed mid-write
    assert cli.main(["report", str(path), "--out", str(tmp_path / "report")]) == 0
    assert capsys.readouterr().err == (f"{said}; its half-written last line, from when the run was stopped, "
                                       "is left out\n")
    assert partial.TORN not in load.load(path).to_json()  # a note of this reading, never stored


def test_a_file_that_is_not_a_partial_file_says_so(tmp_path):
    path = tmp_path / "x.json.partial"
    path.write_text('{"benchmarks": []}\n')
    with pytest.raises(BaselineError, match="not a perfkit partial results file"):
        load.load(path)


def test_a_run_killed_midway_keeps_every_finished_benchmark(pytester, capsys):
    pytester.makepyfile(THREE_THEN_KILLED)
    result = pytester.runpytest_subprocess(*PLUGIN, "--benchmark-json=out.json")
    assert result.ret != 0
    final, unfinished = pytester.path / "out.json", pytester.path / "out.json.partial"
    assert not final.exists() and unfinished.exists()
    results = load.load(unfinished)
    assert [b.name for b in results.benchmarks] == ["test_a", "test_b"] and results.partial
    assert results.benchmarks[1].value("items") == 3
    assert len(results.benchmarks[0].samples) == 5
    with pytest.raises(BaselineError, match="did not finish.*out.json.partial"):
        load.load(final)
    assert cli.main(["compare", str(unfinished), str(unfinished)]) == 0
    assert "2 not judged" in capsys.readouterr().out  # compared, each a one-run entry


@pytest.mark.slow
def test_a_finished_run_leaves_no_partial_file_and_records_family_wall_time(pytester):
    pytester.makepyfile(test_fam=THREE_THEN_KILLED.split("def test_killed")[0])
    result = pytester.runpytest_subprocess(*PLUGIN, "--benchmark-json=out.json")
    result.assert_outcomes(passed=2)
    assert not (pytester.path / "out.json.partial").exists()
    info = json.loads((pytester.path / "out.json").read_text())["machine_info"]["perfkit"]
    assert info["family_wall_s"]["test_fam"] > 0.01 and info["wall_s"] >= info["family_wall_s"]["test_fam"]
    result.stdout.fnmatch_lines(["*perfkit: wall time * s from start-up*"])


@pytest.mark.slow
def test_a_results_path_in_a_folder_not_made_yet_gets_its_folder_and_a_folder_as_the_path_stops_the_run(
        pytester):
    """pytest-benchmark opens --benchmark-json only at the end: a folder that did not exist errored every
    benchmark and lost the run (a newcomer's trial, 2026-12-04)."""
    pytester.makepyfile(test_fam=THREE_THEN_KILLED.split("def test_killed")[0])
    result = pytester.runpytest_subprocess(*PLUGIN, "--benchmark-json=new/dir/out.json")
    result.assert_outcomes(passed=2)
    assert len(json.loads((pytester.path / "new" / "dir" / "out.json").read_text())["benchmarks"]) == 2
    (pytester.path / "adir").mkdir()
    result = pytester.runpytest_subprocess(*PLUGIN, "--benchmark-json=adir")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    said = ("*--benchmark-json=adir is a folder; give the path of a file in it, e.g. "
            "--benchmark-json=adir/results.json")
    result.stderr.fnmatch_lines([said])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert list((pytester.path / "adir").iterdir()) == []


INTERRUPTED = """
import os, signal, time
def test_a(benchmark):
    benchmark.pedantic(time.sleep, args=(0.001,), rounds=3)
def test_interrupted():
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, as `timeout -s INT` sends it
    time.sleep(30)
"""


@pytest.mark.parametrize("finished", [0, 1])
@pytest.mark.slow
def test_an_interrupted_run_names_only_files_that_exist(pytester, finished):
    body = INTERRUPTED if finished else INTERRUPTED.split("def test_a")[0] + "def test_interrupted" + \
        INTERRUPTED.split("def test_interrupted")[1]
    pytester.makepyfile(body)
    result = pytester.runpytest_subprocess(*PLUGIN, "--benchmark-json=out.json")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    final, unfinished = pytester.path / "out.json", pytester.path / "out.json.partial"
    said = [line for line in result.outlines if line.startswith("perfkit: ") and "out.json" in line]
    if finished:  # pytest-benchmark writes what finished when the session ends on Ctrl-C
        assert final.exists() and not unfinished.exists()
        assert said == ["perfkit: results in out.json"]
        assert [b.name for b in load.load(final).benchmarks] == ["test_a"]
    else:
        assert not final.exists() and not unfinished.exists()
        assert said == ["perfkit: no benchmark finished, so nothing was written to out.json"]


def test_the_end_of_a_run_names_the_partial_file_only_while_no_final_json_is_written(tmp_path):
    from perfkit.resultfile.partial import where_results

    final, unfinished = tmp_path / "r.json", partial.path_for(tmp_path / "r.json")
    assert where_results(final) == f"perfkit: no benchmark finished, so nothing was written to {final}"
    unfinished.write_text("{}\n")
    assert f"the benchmarks it finished are in {unfinished}" in where_results(final)
    final.write_text("")  # pytest-benchmark 5.2 creates it empty when the run starts
    assert str(unfinished) in where_results(final)
    final.write_text("{}")
    assert where_results(final) == f"perfkit: results in {final}"


@pytest.mark.slow
def test_a_stuck_benchmark_fails_with_a_sentence_and_the_run_goes_on(pytester):
    pytester.makepyfile("""
        import time
        def test_stuck(benchmark):
            benchmark.pedantic(time.sleep, args=(30,), rounds=1)
        def test_after(benchmark):
            benchmark.pedantic(time.sleep, args=(0.001,), rounds=3)
    """)
    result = pytester.runpytest_subprocess(*PLUGIN, "--perfkit-timeout=1", "--benchmark-json=out.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*stopped after 1 s (--perfkit-timeout); the other benchmarks go on*"])
    assert [b["name"] for b in json.loads((pytester.path / "out.json").read_text())["benchmarks"]] == [
        "test_after"
    ]


@pytest.mark.slow
def test_weekly_benchmarks_stay_out_of_the_nightly_selection_unless_asked(pytester):
    pytester.makepyfile("""
        import pytest
        def test_nightly(): pass
        @pytest.mark.weekly
        def test_weekly(): pass
    """)
    full = pytester.runpytest_subprocess(*PLUGIN, "--perfkit-profile=full")
    full.assert_outcomes(passed=1, deselected=1)
    full.stdout.fnmatch_lines(
        ["*1 weekly benchmark(s) left out of this nightly selection; run them with -m weekly*"]
    )
    pytester.runpytest_subprocess(*PLUGIN, "--perfkit-profile=full", "-m", "weekly").assert_outcomes(passed=1,
                                                                                                    deselected=1)
    pytester.runpytest_subprocess(*PLUGIN, "--perfkit-profile=quick").assert_outcomes(passed=2)


CHECKED_AFTER_TIMING = '''
def test_wrong_answer(benchmark):
    answer = benchmark.pedantic(sum, args=([1, 2],), rounds=3)
    assert answer == 4, "a fast wrong answer"


def test_right(benchmark):
    assert benchmark.pedantic(sum, args=([1, 2],), rounds=3) == 3


def test_after(benchmark):
    assert benchmark.pedantic(sum, args=([1, 2],), rounds=3) == 3
'''
#: Copies the partial results as they stand when the next test starts (the failed one's teardown done).
PARTIAL_SEEN = """
import pathlib

def pytest_runtest_setup(item):
    partial = pathlib.Path("out.json.partial")
    seen = partial.read_text() if partial.exists() else ""
    pathlib.Path(f"partial-before-{item.name}.txt").write_text(seen)
"""


@pytest.mark.slow
def test_a_benchmark_whose_answer_is_wrong_after_its_timing_is_in_neither_json(pytester):
    """Its time was measured, then its check failed: neither the partial lines written as the run goes nor
    the final JSON hold it, so no comparison judges it and no baseline keeps it."""
    pytester.makepyfile(test_checked=CHECKED_AFTER_TIMING)
    pytester.makeconftest(PARTIAL_SEEN)
    result = pytester.runpytest_subprocess(*PLUGIN, "--benchmark-json=out.json")
    result.assert_outcomes(passed=2, failed=1)
    names = [b["name"] for b in json.loads((pytester.path / "out.json").read_text())["benchmarks"]]
    assert names == ["test_right", "test_after"]
    seen = (pytester.path / "partial-before-test_after.txt").read_text()
    assert "test_right" in seen and "test_wrong_answer" not in seen
