"""The plugin as a user meets it: options, markers, skips, metrics in the JSON, baselines at the end of a
run."""

from __future__ import annotations

import json
import shlex

import pytest
import torch

from perfkit import SCHEMA_VERSION, cpus
from perfkit.measure import host_load
from tests.conftest import slowed, three_runs

PLUGIN = ("-p", "perfkit.plugin")


@pytest.fixture
def run(pytester, monkeypatch):
    """pytest in this process, its output as a CI log holds it: without COLUMNS, whose export in a developer's
    shell would wrap the end-of-run lines (test_the_end_of_run_lines_wrap_to_columns_and_lose_no_word checks
    that wrapping)."""
    monkeypatch.delenv("COLUMNS", raising=False)

    def run_pytest(*args):
        return pytester.runpytest(*PLUGIN, "--perfkit-device=cpu", *args)

    return run_pytest


# 10 ms: on CI's busy 2-core host a 2 ms sleep's rounds spread 5% (2026-12-04), near a disturbance's spread
SLEEPY = """
import time
from perfkit.resultfile.metrics import MetricSpec
def test_sleep(benchmark, perfkit_metrics):
    benchmark.pedantic(time.sleep, args=(0.01,), rounds=10, warmup_rounds=1)
    perfkit_metrics.record(MetricSpec("items", "count", "none"), 100)
"""


def test_gpu_markers_and_full_only_skip_with_a_reason_on_a_cpu_run(pytester, run):
    pytester.makepyfile("""
        import pytest
        @pytest.mark.gpu
        def test_needs_gpu(): pass
        @pytest.mark.gpus(2)
        def test_needs_two(): pass
        @pytest.mark.full_only
        def test_full(): pass
        def test_cpu(perfkit_device, perfkit_profile):
            assert perfkit_device.type == "cpu" and perfkit_profile.name == "quick"
    """)
    result = run("-rs")
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines(["*needs a CUDA GPU*", "*full profile only (--perfkit-profile=full)*"])


def test_the_full_profile_runs_full_only_tests(pytester, run):
    pytester.makepyfile("""
        import pytest
        @pytest.mark.full_only
        def test_full(perfkit_profile):
            assert perfkit_profile.pick(quick=1, full=2) == 2
    """)
    run("--perfkit-profile=full").assert_outcomes(passed=1)


def test_unknown_markers_are_errors(pytester, run):
    pytester.makepyfile("""
        import pytest
        @pytest.mark.gpux
        def test_typo(): pass
    """)
    result = run("--strict-markers")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*'gpux' not found in `markers`*"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without a GPU")
def test_asking_for_cuda_without_a_gpu_is_a_one_line_usage_error(pytester):
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(*PLUGIN, "--perfkit-device=cuda")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no CUDA GPU is visible; use auto or cpu*"])


def test_an_unknown_device_is_refused(pytester):
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(*PLUGIN, "--perfkit-device=tpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*invalid choice: 'tpu'*"])


def test_the_json_holds_the_fingerprint_the_metrics_and_the_synchronizing_timer(pytester, run, monkeypatch):
    monkeypatch.delenv(host_load.IGNORE_ENV)
    pytester.makepyfile(SLEEPY)
    run("--benchmark-json=r.json").assert_outcomes(passed=1)
    data = json.loads((pytester.path / "r.json").read_text())
    info = data["machine_info"]["perfkit"]
    assert info["schema_version"] == SCHEMA_VERSION
    assert info["hardware_id"].startswith("cpu-") and info["profile"] == "quick"
    assert {"driver", "cuda", "torch", "numba", "python", "cpu_model"} <= set(info["fingerprint"])
    bench = data["benchmarks"][0]
    assert bench["extra_info"]["metrics"]["items"] == {"value": 100.0, "unit": "count", "better": "none"}
    assert bench["options"]["timer"] == "synchronized_clock"
    assert len(bench["stats"]["data"]) == 10
    load = bench["extra_info"][
        "host_load"
    ]  # what others did to the CPUs meanwhile (perfkit.measure.host_load)
    assert load["cpus"] == cpus.usable_cpus() and load["other_cpus"] >= 0


def test_a_run_is_read_once_for_its_json_file_and_its_verdicts(pytester, run, monkeypatch):
    """pytest-benchmark's --benchmark-json and perfkit's judging each build the run's JSON through the hooks;
    the run is read (derived) once, and the file holds the figures the verdicts were made from."""
    from perfkit.resultfile import load
    from perfkit.session import Session

    path = _saved_baseline(pytester, run)
    reads, judged = [], []
    parse, finish = load.parse, Session.finish

    def counted_parse(raw, where, *args, **kwargs):
        reads.append(where)
        return parse(raw, where, *args, **kwargs)

    def kept_finish(self, results, **how):
        judged.append(results)
        return finish(self, results, **how)

    monkeypatch.setattr(load, "parse", counted_parse)
    monkeypatch.setattr(Session, "finish", kept_finish)
    result = run("--benchmark-json=r.json")
    result.stdout.fnmatch_lines([f"*compared with {path}*"])
    assert reads.count("this run") == 1
    reads.clear()
    judged.clear()
    # pytest-benchmark's autosave keeps no samples by default: a JSON of its own, read once too
    run("--benchmark-json=r.json", "--benchmark-autosave").assert_outcomes(passed=1)
    assert reads.count("this run") == 2
    assert judged[0] is not None and judged[0].benchmarks[0].raw["stats"]["data"]  # judged with its samples
    (results,) = judged
    written = json.loads((pytester.path / "r.json").read_text())
    assert [b["extra_info"] for b in written["benchmarks"]] == [b.extra for b in results.benchmarks]


def test_a_second_ctrl_c_while_the_run_ends_prints_a_line_not_a_traceback(pytester, run, monkeypatch):
    """Ctrl-C again while perfkit judges or saves (after the handlers of the first): the run stops with
    pytest's interrupted status and one line."""
    from perfkit.session import Session

    def stopped(self, results, **how):
        raise KeyboardInterrupt

    pytester.makepyfile(test_sleepy=SLEEPY)
    monkeypatch.setattr(Session, "finish", stopped)
    result = run("--perfkit-baseline=none")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    said = "perfkit: interrupted again while ending the run; what is said above stands"
    result.stdout.fnmatch_lines([said])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_without_a_baseline_the_summary_says_so(pytester, run):
    pytester.makepyfile(SLEEPY)
    run().stdout.fnmatch_lines([("*no verdicts: no baseline of this machine (cpu-*-quick.json is in neither "
                                "baselines/ nor .perfkit/baselines/)*")])


@pytest.mark.slow
def test_a_run_whose_every_benchmark_failed_after_timing_reports_the_failure_not_a_traceback(pytester):
    """pytest-benchmark keeps no failed benchmark: perfkit read the empty run as a damaged file, and its
    traceback at the session's end replaced pytest's own report of why the benchmark failed (a process of
    its own: the order pytest-benchmark's hooks run in is a real run's)."""
    pytester.makepyfile("""
        def test_wrong_sum(benchmark):
            benchmark(sum, range(100))
            assert False, "587322 of 1000000 elements differ from the host sum"
    """)
    result = pytester.runpytest_subprocess(*PLUGIN, "--perfkit-device=cpu", "--benchmark-json=r.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: 587322 of 1000000 elements differ from the host sum",
                                 "*no benchmark finished*nothing to compare, report or store*",
                                 "FAILED *::test_wrong_sum*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def _saved_baseline(pytester, run):
    pytester.makepyfile(SLEEPY)
    result = run("--perfkit-save-baseline")
    result.stdout.fnmatch_lines(["*perfkit: saved baseline*"])
    (path,) = (pytester.path / "baselines").glob("cpu-*.json")
    return path


def test_appending_where_no_baseline_is_yet_saves_a_new_one_and_says_nothing_of_an_append(pytester, run):
    pytester.makepyfile(SLEEPY)
    said = run("--perfkit-save-baseline=append").stdout.str()
    (path,) = (pytester.path / "baselines").glob("cpu-*.json")
    assert f"perfkit: saved baseline {path}\n" in said and "appended" not in said


def test_save_then_compare_then_refuse_to_overwrite(pytester, run):
    path = _saved_baseline(pytester, run)
    before = path.read_bytes()
    result = run("--perfkit-save-baseline")
    result.stdout.fnmatch_lines([f"*compared with {path}*", "*baseline not saved*--force*--merge*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert path.read_bytes() == before


def test_the_end_of_run_lines_wrap_to_columns_and_lose_no_word(pytester, run, monkeypatch):
    path = _saved_baseline(pytester, run)
    monkeypatch.setenv("COLUMNS", "60")
    lines = run("--perfkit-save-baseline").stdout.lines
    start = next(i for i, line in enumerate(lines) if line.startswith("=") and " perfkit " in line)
    end = next(i for i, line in enumerate(lines) if i > start and line.startswith("="))
    section = lines[start + 1:end]
    assert len(section) > 4 and all(len(line) <= 60 or len(line.split()) == 1 for line in section), section
    said = " ".join(" ".join(section).split())
    assert f"perfkit: baseline not saved: {path} exists; pass --force to replace it, --merge to update its " \
           "benchmarks or --append to add runs to them" in said


def test_a_significant_regression_fails_the_run_when_asked(pytester, run):
    path = _saved_baseline(pytester, run)
    data = json.loads(path.read_text())
    fast = slowed(
        data, data["benchmarks"][0]["fullname"], 0.5
    )  # the baseline was twice as fast, over three runs
    path.write_text(json.dumps(three_runs(fast).to_json()))
    assert run().ret == pytest.ExitCode.OK
    result = run("--perfkit-fail-on-regression")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*1 regressed*", "*regressed*test_sleep*time*"])


def test_the_job_summary_opens_with_the_verdict_line_then_the_rows_to_read_within_its_budget(pytester, run):
    from perfkit.render import verdicts

    path = _saved_baseline(pytester, run)
    data = json.loads(path.read_text())
    path.write_text(json.dumps(three_runs(slowed(data, data["benchmarks"][0]["fullname"], 0.5)).to_json()))
    run("--perfkit-summary=summary.md").assert_outcomes(passed=1)
    summary = (pytester.path / "summary.md").read_text()
    first, _, rest = summary.partition("\n\n")
    assert first.startswith("## same hardware (cpu-") and "1 regressed" in first
    # the MDE at 80% power: the 5% minimum effect plus 0.84 standard errors
    assert first.endswith("; fingerprint unchanged; MDE ≤ 5% for 0 of 1 gating figures, worst 5.4%")
    # the baseline's three runs are of this machine, minutes before: the caution stands by the verdict
    caution, _, rest = rest.partition("\n\n")
    assert caution.startswith("1 of 1 benchmarks are judged against baseline runs of one sitting of this")
    rows = rest.split("\n\n")[0]
    assert rows.startswith("| verdict | benchmark |") and "::test_sleep | time |" in rows.splitlines()[2]
    assert len(summary.encode()) <= verdicts.SUMMARY_BYTES


def test_a_corrupt_baseline_stops_the_run_before_it_starts_and_stays_untouched(pytester, run):
    path = _saved_baseline(pytester, run)
    path.write_text("{ not json")
    result = run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*not valid JSON*restore it from git*"])
    assert path.read_text() == "{ not json"
    run("--perfkit-baseline=none").assert_outcomes(passed=1)


@pytest.mark.parametrize("args, said", [
    (["--perfkit-baseline={latin1}"], "*latin1.json: not a text file (not UTF-8)*"),
    (["--perfkit-baseline={latin1}.partial"], "*latin1.json.partial: not a text file (not UTF-8)*"),
    (["--perfkit-baseline=nope.json"], "*nope.json: no such file; give the path of a saved baseline*"),
    (["--perfkit-timeout", "-1"], "*--perfkit-timeout takes seconds (0 for no limit), not -1*"),
    (["--perfkit-confirm=1000000000000"], "*--perfkit-confirm takes how many re-runs (0 to 100: *)*"),
])
def test_bad_perfkit_options_are_one_usage_error_line_before_anything_runs(pytester, run, args, said):
    latin1 = pytester.path / "latin1.json"
    for path in (latin1, pytester.path / "latin1.json.partial"):
        path.write_bytes('{"benchmarks": [], "machine_info": {"node": "caf\xe9"}}'.encode("latin-1"))
    pytester.makepyfile(SLEEPY)
    result = run(*[a.format(latin1=latin1) for a in args])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([said])
    assert "INTERNALERROR" not in result.stderr.str() and "--benchmark-json" not in result.stderr.str()
    assert "passed" not in result.stdout.str()  # nothing ran


TIMED = """
import os
import time
def test_sleep(benchmark):
    benchmark.pedantic(time.sleep, args=(float(os.environ["SLEEP_S"]),), rounds=10, warmup_rounds=1)
"""


def _perfkit_section(result) -> list[str]:
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if line.startswith("=") and " perfkit " in line)
    end = next(i for i, line in enumerate(lines) if i > start and line.startswith("="))
    return lines[start + 1:end]


@pytest.mark.slow
def test_a_first_run_ends_with_the_line_that_gets_verdicts_and_the_next_run_is_judged(pytester, run,
                                                                                       monkeypatch):
    monkeypatch.setenv("SLEEP_S", "0.002")
    pytester.makepyfile(TIMED)
    first = run("--benchmark-json=results.json")
    first.assert_outcomes(passed=1)
    said = _perfkit_section(first)[-1]
    assert said.startswith("perfkit: no verdicts: no baseline of this machine (cpu-") and said.endswith(
        "as this machine's own baseline in .perfkit/baselines/ (not committed)")
    command = shlex.split(said.split("`")[1])  # what the line says to run, run as it says
    assert command[0] == "pytest" and command[-1] == "--perfkit-save-baseline=local"

    results = (pytester.path / "results.json").read_bytes()
    saving = pytester.runpytest(*command[1:])  # this run and two more in fresh processes
    assert saving.ret == pytest.ExitCode.OK
    assert (pytester.path / "results.json").read_bytes() == results  # the first run's, not written over
    (own,) = (pytester.path / ".perfkit" / "baselines").glob("cpu-*-quick.json")
    saving.stdout.fnmatch_lines([f"*saved this machine's own baseline {own} (3 run(s)*"])
    (runs,) = json.loads(own.read_text())["machine_info"]["perfkit"]["runs"].values()
    assert len(runs["time"]) == 3

    judged = run("--benchmark-json=results.json")
    section = " ".join(_perfkit_section(judged))
    assert f"compared with {own}: same hardware" in section and "no verdicts" not in section
    monkeypatch.setenv("SLEEP_S", "0.01")  # five times slower: the judge's verdict, and --fail fires
    slower = run("--perfkit-fail-on-regression")
    assert slower.ret == pytest.ExitCode.TESTS_FAILED
    slower.stdout.fnmatch_lines(["*same hardware*1 regressed*", "*regressed*test_sleep*time*"])


def test_a_baseline_of_other_hardware_is_refused(pytester, run, h200_results):
    other = pytester.path / "h200.json"
    other.write_text(json.dumps(h200_results))
    pytester.makepyfile(SLEEPY)
    result = run(f"--perfkit-baseline={other}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    said = "*is from nvidia-h200-x1*compare with a baseline of nvidia-h200-x1 of the quick profile's sizes*"
    result.stderr.fnmatch_lines([said])


@pytest.mark.slow
def test_a_crashing_rank_fails_its_benchmark_in_one_sentence_and_external_times_become_its_stats(
    pytester, run
):
    pytester.makepyfile("""
        from perfkit.parallel.records import AllreduceJob
        from perfkit.pbench import inject_samples
        def test_crash(perfkit_torchrun):
            perfkit_torchrun(AllreduceJob((-4,), repetitions=1, device="cpu"), 2)  # a buffer of -1 elements
        def test_external(benchmark):
            inject_samples(benchmark, [0.25, 0.5, 0.75])
    """)
    result = run("--benchmark-json=out.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*rank ? of 2 failed: RuntimeError: *negative dimension*(at collectives.py:*)"]
    )
    result.stdout.no_fnmatch_line("*Traceback*")
    stats = json.loads((pytester.path / "out.json").read_text())["benchmarks"][0]["stats"]
    assert stats["median"] == 0.5 and stats["rounds"] == 3


def test_torchrun_args_naming_a_program_are_a_usage_error(pytester):
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(*PLUGIN, "--perfkit-device=cpu", "--perfkit-torchrun-args=--nnodes 2 -m evil")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*takes torchrun's rendezvous options*"])


def test_the_json_is_derived_with_the_ceilings_the_baseline_lends_and_stays_what_perfkit_reads(pytester, run):
    from perfkit.resultfile import load

    path = _saved_baseline(pytester, run)
    data = json.loads(path.read_text())
    data["machine_info"]["perfkit"]["ceilings"] = {
        "matmul_tflops_fp32": 2.0
    }  # a ceiling this run does not measure
    path.write_text(json.dumps(data))
    run("--benchmark-json=r.json").assert_outcomes(passed=1)
    written = json.loads((pytester.path / "r.json").read_text())
    assert written["machine_info"]["perfkit"]["baseline_ceilings"] == {"matmul_tflops_fp32": 2.0}
    assert (
        load.load(pytester.path / "r.json").to_json()["benchmarks"] == written["benchmarks"]
    )  # read as written


def test_the_ceilings_fixtures_are_gone(pytester, run):
    pytester.makepyfile("""
        def test_old(perfkit_ceilings): pass
    """)
    run().stdout.fnmatch_lines(["*fixture 'perfkit_ceilings' not found*"])


def test_progress_of_a_long_benchmark_reaches_the_terminal_without_flooding_it(pytester):
    pytester.makepyfile("""
def test_long(perfkit_progress):
    for epoch in range(50):
        perfkit_progress(f"epoch {epoch}")
""")
    shown = pytester.runpytest("-p", "perfkit.plugin", "--perfkit-device=cpu").stdout.lines
    assert [line for line in shown if "test_long: epoch" in line] == ["perfkit: test_long: epoch 0"]
    quiet = pytester.runpytest("-p", "perfkit.plugin", "--perfkit-device=cpu", "-qq").stdout.lines
    assert not [line for line in quiet if "test_long: epoch" in line]


JITTERY = """
import itertools, os, time
def test_steady(benchmark):
    benchmark.pedantic(time.sleep, args=(0.01,), rounds=8)
def test_unsettled(benchmark):
    pace = itertools.cycle([0.01, 0.03] if os.environ.get("PERFKIT_TEST_JITTER") else [0.01])
    benchmark.pedantic(lambda: time.sleep(next(pace)), rounds=8)
"""


def test_saving_with_append_leaves_out_a_benchmark_whose_rounds_did_not_settle(pytester, run, monkeypatch):
    """The same rule as ``perfkit baseline save --append``: a run whose rounds spread as a disturbed one's
    is said and left out, the steady benchmark beside it appended; a run left out whole saves nothing. The
    baseline's rounds are written so, as a busy host may not give them: the jittery benchmark's within 0.1%,
    the steady one's spread 40% (a baseline as spread is never read as settled, so its next run is never left
    out)."""
    pytester.makepyfile(JITTERY)
    run("--perfkit-save-baseline").stdout.fnmatch_lines(["*perfkit: saved baseline*"])
    (path,) = (pytester.path / "baselines").glob("cpu-*.json")
    saved = json.loads(path.read_text())
    for bench in saved["benchmarks"]:
        spread = 0.001 if bench["name"] == "test_unsettled" else 0.4
        bench["stats"]["data"] = [bench["stats"]["median"] * (1 + spread * (i % 2)) for i in range(8)]
    path.write_text(json.dumps(saved))
    monkeypatch.setenv("PERFKIT_TEST_JITTER", "1")
    said = " ".join(" ".join(run("--perfkit-save-baseline=append").stdout.lines).split())
    assert "left out 1 benchmark(s) of this run whose rounds did not settle" in said
    assert "test_unsettled: its time rounds spread" in said
    assert f"saved baseline {path} (1 run appended: 1 benchmark, now 2 runs)" in said

    def times() -> dict[str, int]:
        runs = json.loads(path.read_text())["machine_info"]["perfkit"]["runs"]
        return {name.split("::")[-1]: len(figures["time"]) for name, figures in runs.items()}

    assert times() == {"test_steady": 2, "test_unsettled": 1}
    said = " ".join(" ".join(run("--perfkit-save-baseline=append", "-k", "unsettled").stdout.lines).split())
    assert "nothing appended: every benchmark of this run was left out" in said
    assert times() == {"test_steady": 2, "test_unsettled": 1}
