"""Confirmation by re-run in fresh processes, and the injected-slowdown testing aid."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfkit.errors import PerfkitError, UsageError
from perfkit.resultfile import figures, inject
from tests.conftest import three_runs

PLUGIN = ("-p", "perfkit.plugin", "--perfkit-device=cpu")
#: Two benchmarks that a busy host does not flag: a neighbour once made a 5 ms sleep read 12 ms. A wake-up
#: delay that size stays well inside a 90% minimum effect on 50 ms sleeps, while a slowdown worth a verdict
#: here (a first run six times slower, an injected 3x) stays far beyond it.
SLEEPY = """
import time
from pathlib import Path
def test_steady(benchmark, perfkit_metrics):
    perfkit_metrics.tolerance(0.9)
    benchmark.pedantic(time.sleep, args=(0.05,), rounds=7, warmup_rounds=1)
def test_once_slow(benchmark, perfkit_metrics):
    perfkit_metrics.tolerance(0.9)
    flag = Path("slow-once")
    seconds = 0.3 if flag.exists() else 0.05
    flag.unlink(missing_ok=True)
    benchmark.pedantic(time.sleep, args=(seconds,), rounds=7, warmup_rounds=1)
"""


def _baseline(pytester) -> None:
    """A three-run baseline of this machine, stored where the plugin looks for it."""
    pytester.makepyfile(test_sleepy=SLEEPY)
    pytester.runpytest_subprocess(
        *PLUGIN, "--perfkit-baseline=none", "--benchmark-json=one.json"
    ).assert_outcomes(passed=2)
    one = json.loads((pytester.path / "one.json").read_text())
    hardware_id = one["machine_info"]["perfkit"]["hardware_id"]
    (pytester.path / "baselines").mkdir()
    (pytester.path / "baselines" / f"{hardware_id}-quick.json").write_text(
        json.dumps(three_runs(one).to_json())
    )


def _second_rerun(monkeypatch, cpu_results, second: str) -> list:
    """subprocess.run for confirm.rerun: the first re-run writes its results, the second crashes (writes
    nothing) or is stopped by Ctrl-C; the files each was to write, in order."""
    import subprocess
    import types

    from perfkit.resultfile import partial

    calls = []

    def run(command, **kwargs):
        out = Path(next(arg for arg in command if arg.startswith("--benchmark-json=")).split("=", 1)[1])
        calls.append(out)
        if len(calls) == 2 and second == "stopped":
            out.write_text("")  # pytest-benchmark opened it before the signal came, and its partial file
            partial.path_for(out).write_text("{}")
            raise KeyboardInterrupt
        if len(calls) == 1:
            out.write_text(json.dumps(cpu_results))
        return types.SimpleNamespace(stdout="", stderr="boom", returncode=1)

    monkeypatch.setattr(subprocess, "run", run)
    return calls


def test_a_confirmation_whose_re_run_crashed_leaves_none_of_its_re_runs_beside_the_night(
        tmp_path, monkeypatch, cpu_results):
    """The night then keeps its first look's verdicts, so no finished re-run may stay beside it: `perfkit
    compare BASELINE night.json` judges a night with the re-runs it finds there."""
    from perfkit import confirm

    calls = _second_rerun(monkeypatch, cpu_results, "crashed")
    with pytest.raises(PerfkitError, match="re-run 2 wrote no results"):
        confirm.rerun(["x::test_a"], 3, [], tmp_path, keep=tmp_path / "results.json",
                      label=confirm.CONFIRM_LABEL)
    assert len(calls) == 2 and list(tmp_path.iterdir()) == []


def test_a_confirmation_stopped_midway_hands_back_and_keeps_the_re_runs_that_finished(tmp_path, monkeypatch,
                                                                                      cpu_results):
    """Ctrl-C in re-run 2 of 3: re-run 1 is handed back to be judged (CutShort) and its file stays beside
    the night, so `perfkit compare` judges the night as the run did; the stopped one's empty file goes."""
    from perfkit import confirm

    results = tmp_path / "results.json"
    calls = _second_rerun(monkeypatch, cpu_results, "stopped")
    with pytest.raises(confirm.CutShort) as cut:
        confirm.rerun(["x::test_a"], 3, [], tmp_path, keep=results, label=confirm.CONFIRM_LABEL)
    assert len(calls) == 2 and len(cut.value.finished) == 1
    assert [b.fullname for b in cut.value.finished[0].benchmarks] == [b["fullname"] for b in
                                                                      cpu_results["benchmarks"]]
    assert [p.name for p in tmp_path.iterdir()] == ["results.confirm-1.json"]
    assert confirm.kept_beside(results) == [tmp_path / "results.confirm-1.json"]


@pytest.mark.slow
def test_an_injected_slowdown_is_flagged_and_holds_over_fresh_process_reruns(pytester, monkeypatch):
    _baseline(pytester)
    monkeypatch.setenv(inject.ENV, "*test_steady=3")
    result = pytester.runpytest_subprocess(*PLUGIN, "--perfkit-confirm=2", "--perfkit-fail-on-regression",
                                           "--benchmark-json=now.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*regressed*test_steady*time*+*%*3/2*",
                                 ("*confirmation: 1 flagged benchmark(s) re-run 2 time(s) in fresh processes "
                                 "(2 run(s) finished); 1 regression(s) held: *test_steady*; the re-runs' "
                                 "files: *now.confirm-1.json to now.confirm-2.json"),
                                 ("*wall time * s from start-up (* s outside the tests: *; * s of it the "
                                  "confirmation's re-runs)*")])
    steady = next(b for b in json.loads((pytester.path / "now.json").read_text())["benchmarks"]
                  if b["name"] == "test_steady")
    assert steady["extra_info"]["injected_slowdown"] == 3
    # the re-runs stay beside the run's file, so the night can be judged again from its files alone
    for name in ("now.confirm-1.json", "now.confirm-2.json", "now.explain-1.json"):
        rerun = json.loads((pytester.path / name).read_text())
        assert [b["name"] for b in rerun["benchmarks"]] == ["test_steady"]
        assert rerun["benchmarks"][0]["extra_info"]["injected_slowdown"] == 3


@pytest.mark.slow
def test_an_interrupted_run_keeps_its_verdict_and_starts_no_re_runs(pytester, monkeypatch):
    """Ctrl-C, or a deadline's SIGINT, after a flagged benchmark: the verdict is the run's, and nothing more
    runs."""
    _baseline(pytester)
    pytester.makepyfile(test_zz_stop="def test_stop():\n    raise KeyboardInterrupt\n")
    monkeypatch.setenv(inject.ENV, "*test_steady=3")
    result = pytester.runpytest_subprocess(*PLUGIN, "--perfkit-confirm=2", "--benchmark-json=now.json",
                                           "--perfkit-summary=summary.md")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    said = "perfkit: confirmation not started: the run was interrupted; the verdicts are this run's alone"
    result.stdout.fnmatch_lines(["*regressed*test_steady*", said])
    assert "regressed" in (pytester.path / "summary.md").read_text()
    assert not list(pytester.path.glob("now.confirm-*"))


def test_a_re_run_stopped_by_ctrl_c_leaves_no_file_behind(tmp_path, monkeypatch):
    """subprocess.run kills the child on Ctrl-C, before it can tidy up: its empty JSON (pytest-benchmark opens
    it at the start) and its partial file go, so `perfkit compare BASELINE results.confirm-*.json` reads only
    re-runs that finished."""
    import subprocess

    from perfkit import confirm
    from perfkit.resultfile import partial

    results = tmp_path / "results.json"
    out = confirm.kept_as(results, confirm.CONFIRM_LABEL, 0)

    def stopped(*args, **kwargs):
        out.write_text("")
        partial.path_for(out).write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(subprocess, "run", stopped)
    with pytest.raises(KeyboardInterrupt):
        confirm.rerun(["x::test_a"], 2, [], tmp_path, keep=results, label=confirm.CONFIRM_LABEL)
    assert list(tmp_path.iterdir()) == []


def test_a_slowdown_rule_that_matches_nothing_is_said_at_the_end(pytester, monkeypatch):
    """A rule written for another id (a typo, a benchmark not selected) slows nothing: the run says so."""
    pytester.makepyfile(test_sleepy=SLEEPY)
    monkeypatch.setenv(inject.ENV, "*test_steady=3,*test_layer[conv-forward]=1.1")
    result = pytester.runpytest(*PLUGIN, "--perfkit-baseline=none", "-k", "steady", "--benchmark-json=o.json")
    said = "perfkit: PERFKIT_INJECT_SLOWDOWN: '*test_layer[conv-forward]' matched no benchmark of this run"
    assert said in result.stdout.str()
    assert "'*test_steady' matched no" not in result.stdout.str()
    conv = {inject.ENV: "*test_layer[conv-forward]=1.1"}
    assert inject.unmatched(["a::test_layer[conv-forward]"], conv) == []


@pytest.mark.slow
def test_a_slow_first_run_that_the_reruns_do_not_repeat_fails_nothing(pytester):
    _baseline(pytester)
    (pytester.path / "slow-once").write_text("")
    result = pytester.runpytest_subprocess(*PLUGIN, "--perfkit-confirm=2", "--perfkit-fail-on-regression")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["*confirmation: 1 flagged benchmark(s) re-run 2 time(s)*0 regression(s) held"]
    )
    assert not list(pytester.path.glob("*confirm-*.json"))  # a run that writes no JSON leaves no re-run files


@pytest.mark.slow
def test_compare_judges_a_night_again_with_the_confirmation_kept_beside_it(pytester, capsys):
    """``perfkit compare BASELINE night.json`` ends as the night did: with its re-runs kept beside it, at the
    night's level; a re-run file given alone is judged alone, which it says."""
    from perfkit import cli

    _baseline(pytester)
    (pytester.path / "slow-once").write_text("")
    pytester.runpytest_subprocess(*PLUGIN, "--perfkit-confirm=2", "--benchmark-json=night.json")
    baseline = str(next((pytester.path / "baselines").glob("*.json")))
    night = pytester.path / "night.json"
    kept = sorted(pytester.path.glob("night.confirm-*.json"))
    assert [path.name for path in kept] == ["night.confirm-1.json", "night.confirm-2.json"]
    capsys.readouterr()
    assert cli.main(["compare", "--fail", baseline, str(night)]) == 0
    out, err = capsys.readouterr()
    assert ("judged with its confirmation's 2 re-run(s) kept beside it (night.confirm-1.json, "
            "night.confirm-2.json), as the night was") in err
    assert "regressed" not in out.split("\n\n")[0]
    confirmed = _steady_mde(cli, baseline, night, capsys)
    for path in kept:  # the first run alone flags what the re-runs did not repeat
        path.rename(path.with_suffix(".moved"))
    assert cli.main(["compare", "--fail", baseline, str(night)]) == 1
    # a figure no re-run measured has the MDE of both looks on the confirmed night, of one look alone
    assert _steady_mde(cli, baseline, night, capsys) != confirmed
    kept[0].with_suffix(".moved").rename(kept[0])
    capsys.readouterr()
    cli.main(["compare", baseline, str(kept[0])])
    assert "is a re-run of a night's flagged benchmarks: judged alone" in capsys.readouterr().err
    # a later night into the same file, without a confirmation: the earlier night's re-runs are not its own
    pytester.runpytest_subprocess(*PLUGIN, "--benchmark-json=night.json")
    assert not list(pytester.path.glob("night.confirm-*.json"))


def _steady_mde(cli, baseline: str, night: Path, capsys) -> float:
    """The MDE ``perfkit compare`` prints for test_steady's time (never re-run: it never moves)."""
    capsys.readouterr()
    cli.main(["compare", "--format", "json", baseline, str(night)])
    rows = json.loads(capsys.readouterr().out)["rows"]
    return next(r["mde"] for r in rows if r["benchmark"].endswith("test_steady") and r["gating"])


@pytest.mark.parametrize("text", ["*copy*", "*copy*=fast", "=1.1", "*copy*=-2"])
def test_a_malformed_injection_is_a_usage_error_that_shows_the_form(text):
    with pytest.raises(UsageError, match="PATTERN=FACTOR"):
        inject.rules({inject.ENV: text})


def test_injection_scales_times_up_and_rates_down_once():
    bench = {
        "fullname": "benches/test_ceilings.py::test_copy_bandwidth",
        "stats": {"median": 2.0, "data": [2.0, 2.0], "ops": 0.5},
        "extra_info": {
            "metrics": {
                "copy_bandwidth_gbps": {"value": 100.0, "unit": "GB/s", "better": "higher"},
                "kernel_s": {"value": 1.0, "unit": "s", "better": "lower", "samples": [1.0, 1.0]},
                "peak_allocated_mib": {"value": 5.0, "unit": "MiB", "better": "lower"},
                "predicted_s": {"value": 3.0, "unit": "s", "better": "none"},  # a model's, not measured
            }
        },
    }
    env = {inject.ENV: "*test_copy*=1.25"}
    inject.apply(bench, env)
    inject.apply(bench, env)
    metrics = bench["extra_info"]["metrics"]
    assert bench["stats"]["median"] == 2.5 and bench["stats"]["data"] == [2.5, 2.5]
    assert metrics["copy_bandwidth_gbps"]["value"] == 80.0 and metrics["kernel_s"]["samples"] == [1.25, 1.25]
    assert metrics["peak_allocated_mib"]["value"] == 5.0 and metrics["predicted_s"]["value"] == 3.0


@pytest.mark.parametrize("name, reference, ratio", [
    ("test_cpu_loop[K100]", figures.HOST_COPY_S, figures.OVER_HOST_COPY),
    ("test_gpu_managed[K1-grid-first]", figures.FIRST_TOUCH_S, figures.OVER_FIRST_TOUCH),
    ("test_gpu_managed[K100-one_block-warm]", figures.ONE_SM_COPY_S, figures.OVER_ONE_SM_COPY),
])
def test_an_injected_slowdown_scales_the_figure_over_its_reference_and_leaves_the_reference(
        name, reference, ratio):
    """The code got slower, not the machine (the host's memory pace, the page work, one multiprocessor's): the
    gated ratio moves by the factor, the reference timed beside it stays."""
    metrics = {reference.name: {"value": 0.04, "unit": "s", "better": "lower", "samples": [0.04]},
               ratio.name: {"value": 2.5, "unit": "ratio", "better": "lower", "samples": [2.5, 2.4]}}
    bench = {"fullname": f"benches/test_vector_add.py::{name}", "stats": {"median": 0.1},
             "extra_info": {"metrics": metrics}}
    inject.apply(bench, {inject.ENV: f"*{name}=1.10"})
    assert bench["stats"]["median"] == pytest.approx(0.11)
    assert metrics[ratio.name]["value"] == pytest.approx(2.75)
    assert metrics[ratio.name]["samples"] == pytest.approx([2.75, 2.64])
    assert metrics[reference.name]["value"] == 0.04 and metrics[reference.name]["samples"] == [0.04]


@pytest.mark.slow
def test_the_final_verdict_is_written_as_markdown_for_a_job_summary(pytester, monkeypatch):
    _baseline(pytester)
    monkeypatch.setenv(inject.ENV, "*test_steady=3")
    pytester.runpytest_subprocess(*PLUGIN, "--perfkit-confirm=1", "--perfkit-summary=summary.md")
    text = (pytester.path / "summary.md").read_text()
    assert text.startswith("## same hardware") and "1 regressed" in text
    assert "| regressed | test_sleepy.py::test_steady | time |" in text and "confirmation: 1 flagged" in text
