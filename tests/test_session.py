"""A run's settings, baseline policy, verdict and saving (perfkit.session), without pytest."""
from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from perfkit import SCHEMA_VERSION, wall_clock
from perfkit.errors import BaselineError, PerfkitError, UsageError
from perfkit.measure.hardware import Fingerprint
from perfkit.options import RunOptions
from perfkit.session import Outcome, Session
from perfkit.settings import Profile, Settings
from perfkit.store.baselines import BaselineStore
from tests.conftest import ROOT, slowed, three_runs, typed

MATMUL = "benches/test_ceilings.py::test_matmul_flops[fp32]"


def _settings(
    fingerprint: dict[str, Any], device: str = "cpu", profile: str = "quick", gpus: int = 0
) -> Settings:
    return Settings(torch.device(device), Profile(profile), gpus, Fingerprint(**fingerprint))


@pytest.fixture
def settings(cpu_results) -> Settings:
    """The settings of the machine that measured tests/data/cpu-quick.json."""
    return _settings(cpu_results["machine_info"]["perfkit"]["fingerprint"])


@pytest.fixture
def store(tmp_path) -> BaselineStore:
    return BaselineStore(tmp_path / "baselines")


def _stored(store: BaselineStore, results: Any) -> Path:
    return store.save(typed(results))


def _session(settings: Settings, store: BaselineStore, **options: Any) -> Session:
    return Session(settings, store, RunOptions(**options))


def test_without_a_stored_baseline_auto_compares_nothing_and_says_so(settings, store, cpu_results):
    session = Session(settings, store)
    assert session.baseline is None and session.baseline_path is None
    assert session.finish(typed(cpu_results)) is Outcome.OK
    assert session.comparison is None
    assert session.summary_lines() == [session.hint] == [(
        "perfkit: no verdicts: no baseline of this machine (cpu-amd-epyc-quick.json is in neither baselines/ "
        "nor .perfkit/baselines/). To judge later runs against this machine, run `pytest benches/ "
        "--perfkit-save-baseline=local` once: it saves this run and 2 re-runs in fresh processes as this "
        "machine's own baseline in .perfkit/baselines/ (not committed)")]


def test_auto_compares_with_the_stored_baseline_of_this_hardware(settings, store, cpu_results):
    path = _stored(store, cpu_results)
    session = Session(settings, store)
    assert session.baseline_path == path
    assert session.finish(typed(cpu_results)) is Outcome.OK
    assert session.comparison is not None and not session.comparison.regressions
    assert session.summary_lines()[0].startswith(
        f"perfkit: compared with {path}: same hardware (cpu-amd-epyc)"
    )


def test_the_command_for_verdicts_writes_none_of_the_runs_own_files(settings, store, cpu_results):
    """The end's command repeated the run's arguments, ``--benchmark-json`` with them: followed verbatim, it
    wrote over the results it was printed beside. It saves a baseline (.perfkit/baselines/), no other file."""
    session = _session(settings, store, command=("benches/", "--benchmark-json", "results.json", "-k", "mm",
                                                 "--perfkit-summary=summary.md"))
    session.finish(typed(cpu_results))
    assert "run `pytest benches/ -k mm --perfkit-save-baseline=local` once" in session.hint
    stored = _session(settings, store, command=("--junitxml", "j.xml", "--benchmark-autosave",
                                                "--benchmark-save=x", "--benchmark-histogram", "h",
                                                "benches/", "--benchmark-histogram",
                                                "--benchmark-cprofile-dump=prof"))
    stored.finish(typed(cpu_results))
    assert "run `pytest benches/ --perfkit-save-baseline=local` once" in stored.hint
    bare = _session(settings, store, command=("--benchmark-json=results.json",))
    bare.finish(typed(cpu_results))
    assert "run `pytest benches/ --perfkit-save-baseline=local` once" in bare.hint


def test_none_loads_nothing_and_says_nothing(settings, store, cpu_results):
    _stored(store, cpu_results)
    session = _session(settings, store, baseline="none")
    assert session.baseline is None
    assert session.finish(typed(cpu_results)) is Outcome.OK
    assert session.summary_lines() == []


def test_an_explicit_baseline_path_is_used_and_must_exist(settings, store, cpu_results, tmp_path):
    explicit = tmp_path / "elsewhere.json"
    explicit.write_text(json.dumps(cpu_results))
    assert _session(settings, store, baseline=str(explicit)).baseline_path == explicit
    with pytest.raises(BaselineError, match="no such file"):
        _session(settings, store, baseline=str(tmp_path / "missing.json"))


def test_a_baseline_of_other_hardware_is_refused_with_the_command_that_compares_across(
        settings, store, h200_results, tmp_path):
    other = tmp_path / "h200.json"
    other.write_text(json.dumps(h200_results))
    with pytest.raises(BaselineError) as caught:
        _session(settings, store, baseline=str(other))
    assert str(caught.value) == (
        f"baseline {other} is from nvidia-h200-x1, this run is cpu-amd-epyc; across hardware, compare with "
        "a baseline of nvidia-h200-x1 of the quick profile's sizes (nvidia-h200-x1-quick.json), which is in "
        f"neither {tmp_path} nor {store.directory}")
    in_store = store.directory / other.name  # given from the baselines folder: the folder is named once
    in_store.parent.mkdir(parents=True)
    in_store.write_text(other.read_text())
    with pytest.raises(BaselineError) as caught:
        _session(settings, store, baseline=str(in_store))
    assert str(caught.value).endswith(f"(nvidia-h200-x1-quick.json), which is not in {store.directory}")
    # the command it names compares: a baseline of this run's sizes, in the baselines folder or beside the
    # one given (a newcomer was told to compare with the full profile's, which `perfkit compare` refuses)
    stored = store.path_for("nvidia-h200-x1", "quick")
    stored.write_text((ROOT / "baselines" / stored.name).read_text())
    quick = tmp_path / stored.name
    for beside, given, named in ((False, other, stored), (True, other, quick), (True, quick, quick)):
        if beside:
            quick.write_text(stored.read_text())
        with pytest.raises(BaselineError) as caught:
            _session(settings, store, baseline=str(given))
        assert str(caught.value).endswith(
            f"compare across hardware afterwards with `perfkit compare {named} RESULTS.json`")


def test_a_corrupt_stored_baseline_stops_the_session_before_it_starts(settings, store, cpu_results):
    path = _stored(store, cpu_results)
    path.write_text("{ not json")
    with pytest.raises(BaselineError, match="not valid JSON"):
        Session(settings, store)
    assert path.read_text() == "{ not json"


def test_a_regression_fails_the_run_only_when_asked(settings, store, cpu_results):
    _stored(store, three_runs(cpu_results))
    current = slowed(cpu_results, MATMUL, 1.3)
    relaxed = Session(settings, store)
    assert relaxed.finish(typed(current)) is Outcome.OK
    assert relaxed.comparison is not None and relaxed.comparison.regressions
    strict = _session(settings, store, fail_on_regression=True)
    assert strict.finish(typed(current)) is Outcome.REGRESSED
    assert any(MATMUL in line for line in strict.summary_lines())


def test_a_run_where_no_benchmark_ran_decides_nothing(settings, store):
    session = _session(settings, store, fail_on_regression=True, save_mode="new")
    assert session.finish(None) is Outcome.OK
    assert session.summary_lines() == [] and not store.directory.exists()


def test_save_new_then_refuse_then_merge_then_force(settings, store, cpu_results):
    first = _session(settings, store, save_mode="new")
    assert first.finish(typed(cpu_results)) is Outcome.OK
    path = store.path_for("cpu-amd-epyc", "quick")
    assert first.summary_lines()[-1] == f"perfkit: saved baseline {path}"
    before = path.read_bytes()

    again = _session(settings, store, save_mode="new")
    assert again.finish(typed(cpu_results)) is Outcome.NOT_SAVED
    assert again.summary_lines()[-1].startswith("perfkit: baseline not saved:")
    assert "--force" in again.summary_lines()[-1] and "--merge" in again.summary_lines()[-1]
    assert path.read_bytes() == before

    one = dict(cpu_results, benchmarks=cpu_results["benchmarks"][:1])
    assert _session(settings, store, save_mode="merge").finish(typed(one)) is Outcome.OK
    assert len(store.load("cpu-amd-epyc", "quick").benchmarks) == len(cpu_results["benchmarks"])
    assert _session(settings, store, save_mode="force").finish(typed(one)) is Outcome.OK
    assert len(store.load("cpu-amd-epyc", "quick").benchmarks) == 1


def test_an_interrupted_run_never_replaces_a_baseline_and_merges_only_what_finished(
        settings, store, cpu_results):
    """Ctrl-C part-way: --force would keep only what the run holds, so nothing is replaced; a merge keeps the
    baseline's other entries and says the run was cut short; the exit status says it was stopped."""
    _session(settings, store, save_mode="new").finish(typed(cpu_results))
    path = store.path_for("cpu-amd-epyc", "quick")
    before = path.read_bytes()
    one = dict(cpu_results, benchmarks=cpu_results["benchmarks"][:1])
    forced = _session(settings, store, save_mode="force")
    assert forced.finish(typed(one), interrupted=True) is Outcome.INTERRUPTED
    assert path.read_bytes() == before
    assert forced.summary_lines()[-1].startswith("perfkit: baseline not replaced: the run was interrupted")
    merged = _session(settings, store, save_mode="merge")
    assert merged.finish(typed(one), interrupted=True) is Outcome.INTERRUPTED
    assert len(store.load("cpu-amd-epyc", "quick").benchmarks) == len(cpu_results["benchmarks"])
    assert merged.summary_lines()[-1].endswith("(from an interrupted run: the benchmarks it finished)")


def test_a_failed_save_wins_over_a_regression(settings, store, cpu_results):
    _stored(store, cpu_results)
    session = _session(settings, store, fail_on_regression=True, save_mode="new")
    assert session.finish(typed(slowed(cpu_results, MATMUL, 1.3))) is Outcome.NOT_SAVED


def test_machine_info_leaves_ceilings_to_the_derived_pass_and_the_baseline_lends_its_own(
        settings, store, cpu_results):
    alone = typed(cpu_results).to_json()
    for bench in alone["benchmarks"]:
        bench["extra_info"]["metrics"].pop("copy_bandwidth_gbps", None)  # a run that did not measure the copy
    alone["machine_info"]["perfkit"]["ceilings"] = {}
    assert "copy_bandwidth_gbps" not in Session(settings, store).derive(alone).info.lent_ceilings
    _stored(store, cpu_results)
    session = Session(settings, store)
    info = session.machine_info()
    assert info["wall_s"] >= 0 and info.pop("wall_s") is not None
    assert info == {"schema_version": SCHEMA_VERSION, "hardware_id": "cpu-amd-epyc", "device": "cpu",
                    "profile": "quick", "fingerprint": settings.fingerprint.to_json(), "ceilings": {}}
    lent = session.derive(alone).info.lent_ceilings
    assert (
        lent["copy_bandwidth_gbps"]
        == cpu_results["machine_info"]["perfkit"]["ceilings"]["copy_bandwidth_gbps"]
    )


@pytest.mark.parametrize("device, gpus, needs, full_only, reason", [
    ("cpu", 0, [1], False, "needs a CUDA GPU: no CUDA GPU is visible"),
    ("cpu", 2, [2], False, "needs a CUDA GPU: this run uses --perfkit-device=cpu"),
    ("cuda", 1, [1, 4], False, "needs 4 GPUs, 1 visible"),
    ("cuda", 4, [1, 4], False, None),
    ("cuda", 1, [], True, "full profile only (--perfkit-profile=full)"),
    ("cpu", 0, [], False, None),
])
def test_skip_reasons(cpu_results, device, gpus, needs, full_only, reason):
    settings = _settings(cpu_results["machine_info"]["perfkit"]["fingerprint"], device, "quick", gpus)
    assert settings.skip_reason(needs, full_only) == reason


def test_the_full_profile_runs_full_only_tests_and_picks_full_sizes(cpu_results):
    settings = _settings(cpu_results["machine_info"]["perfkit"]["fingerprint"], profile="full")
    assert settings.skip_reason([], full_only=True) is None
    assert settings.profile.pick(quick=1, full=2) == 2


def test_only_the_cuda_device_has_a_datasheet_entry(cpu_results):
    fingerprint = dict(cpu_results["machine_info"]["perfkit"]["fingerprint"], datasheet_key="h200")
    assert _settings(fingerprint).gpu_spec() is None
    spec = _settings(fingerprint, device="cuda", gpus=1).gpu_spec()
    assert spec is not None and spec.key == "h200"


def test_unknown_profiles_save_modes_and_negative_counts_are_usage_errors(settings, store):
    with pytest.raises(UsageError, match="unknown profile 'medium'"):
        Profile("medium")
    with pytest.raises(UsageError, match="unknown save mode 'sideways'; choose new, force, merge, append"):
        _session(settings, store, save_mode="sideways")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="--perfkit-timeout takes seconds"):
        RunOptions(timeout_s=-1)
    with pytest.raises(UsageError, match="--perfkit-confirm takes how many re-runs"):
        RunOptions(confirm=-2)


def test_start_reads_this_machine_and_finds_the_store_from_a_subfolder(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    sub = tmp_path / "benches" / "deeper"
    sub.mkdir(parents=True)
    session = Session.start(RunOptions(device="cpu", baseline="none", torchrun_args="--nnodes 2"), sub)
    assert session.store.directory == tmp_path.resolve() / "baselines"
    assert session.settings.device.type == "cpu" and session.settings.profile.name == "quick"
    assert session.settings.torchrun_args == ("--nnodes", "2")
    assert session.settings.hardware_id.startswith("cpu-")


def test_a_confirmation_that_cannot_run_keeps_the_first_verdicts_and_says_why(settings, store, cpu_results):
    _stored(store, three_runs(cpu_results))

    def broken(nodeids, times, label):
        raise PerfkitError("re-run 1 wrote no results (exit 4): no such benchmark")

    session = Session(settings, store, RunOptions(fail_on_regression=True, confirm=2), broken)
    assert session.finish(typed(slowed(cpu_results, MATMUL, 1.3))) is Outcome.REGRESSED
    assert any("confirmation failed, the verdicts are this run's alone: re-run 1 wrote no results" in line
               for line in session.summary_lines())


@pytest.mark.parametrize("baseline", ["auto", "none"])
@pytest.mark.parametrize("stem", ["results", "night.2026-12-05[1]"])
def test_a_confirming_run_leaves_only_its_own_re_run_files_beside_its_json(settings, store, cpu_results,
                                                                           tmp_path, baseline, stem):
    """An earlier night's re-run files go (and a crashed re-run's partial file), so `results.confirm-*.json`
    beside the JSON are this night's, whether or not the run is judged; files of another name stay."""
    if baseline == "auto":
        _stored(store, three_runs(cpu_results))
    results = tmp_path / "out" / f"{stem}.json"
    results.parent.mkdir()
    stale = [f"{stem}.confirm-1.json", f"{stem}.confirm-12.json", f"{stem}.explain-1.json",
             f"{stem}.confirm-2.json.partial"]
    kept = [f"{stem}.confirm-x.json", "other.confirm-1.json", f"{stem}.json.partial",
            f"{stem}.confirmed.json", f"{stem}.confirm-1.json.bak", f"{stem}X.confirm-1.json"]
    for name in stale + kept:
        (results.parent / name).write_text("{}")
    asked = []
    session = Session(settings, store, RunOptions(confirm=2, results_path=results, baseline=baseline),
                      lambda nodeids, times, label: asked.append(label) or [])
    session.finish(typed(cpu_results))  # the baseline's own run: nothing to re-run
    assert sorted(p.name for p in results.parent.iterdir()) == sorted(kept) and asked == []


def test_an_interrupted_run_starts_no_confirmation_and_says_so(settings, store, cpu_results):
    """Ctrl-C (or a deadline's SIGINT) ends the run: no fresh processes are started after it."""
    _stored(store, three_runs(cpu_results))
    asked = []
    session = Session(settings, store, RunOptions(fail_on_regression=True, confirm=2),
                      lambda nodeids, times, label: asked.append(label) or [])
    assert session.finish(typed(slowed(cpu_results, MATMUL, 1.3)), interrupted=True) is Outcome.INTERRUPTED
    assert asked == [] and ("perfkit: confirmation not started: the run was interrupted; the verdicts are "
                            "this run's alone") in session.summary_lines()
    local = Session(settings, store, RunOptions(save_local=True),
                    lambda nodeids, times, label: asked.append(label) or [])
    assert local.finish(typed(cpu_results), interrupted=True) is Outcome.INTERRUPTED
    said = "perfkit: this machine's own baseline not saved: the run was interrupted"
    assert asked == [] and local.summary_lines()[-1] == said


def _stopped(*args: Any) -> Any:
    """A re-run that Ctrl-C stops: subprocess.run ends the child and raises KeyboardInterrupt."""
    raise KeyboardInterrupt


def _finished(session: Session, results: Any) -> Outcome:
    """``session.finish``, where a KeyboardInterrupt escaping it fails the test instead of stopping pytest."""
    try:
        return session.finish(results)
    except KeyboardInterrupt:
        pytest.fail("a KeyboardInterrupt escaped Session.finish")


def test_ctrl_c_during_the_confirmation_keeps_the_first_look_and_says_so(settings, store, cpu_results,
                                                                          tmp_path):
    """A SIGINT while a re-run runs: no stack trace, the first look's verdicts stand, the job summary says
    the confirmation was cut, no baseline is replaced, and the exit status says the run was stopped."""
    _stored(store, three_runs(cpu_results))
    before = store.path_for("cpu-amd-epyc", "quick").read_bytes()
    summary = tmp_path / "summary.md"
    session = Session(settings, store, RunOptions(fail_on_regression=True, confirm=3, save_mode="force",
                                                  summary=summary), _stopped)
    assert _finished(session, typed(slowed(cpu_results, MATMUL, 1.3))) is Outcome.INTERRUPTED
    assert session.comparison is not None and MATMUL in {r.benchmark for r in session.comparison.regressions}
    said = ("perfkit: confirmation interrupted while re-running 1 flagged benchmark(s): the verdicts are "
            "this run's alone")
    lines = session.summary_lines()
    assert said in lines and said.removeprefix("perfkit: ") in summary.read_text()
    assert any(line.startswith("perfkit: baseline not replaced: the run was interrupted") for line in lines)
    assert store.path_for("cpu-amd-epyc", "quick").read_bytes() == before


@pytest.mark.parametrize("repeats", [True, False])
def test_ctrl_c_after_some_re_runs_judges_those_and_starts_nothing_more(settings, store, cpu_results,
                                                                        repeats):
    """A deadline's SIGINT in re-run 3 of 3: the two that finished decide (a slowdown they repeat holds, one
    they do not is not held), the kernel-reading run is not started, and the run counts as stopped."""
    from perfkit import confirm

    _stored(store, three_runs(cpu_results))
    again = typed(slowed(cpu_results, MATMUL, 1.3) if repeats else cpu_results)
    explained = []

    def cut(nodeids, times, label):
        raise confirm.CutShort([again, again])

    session = Session(settings, store, RunOptions(fail_on_regression=True, confirm=3), cut,
                      lambda nodeids: explained.append(nodeids) or again)
    assert _finished(session, typed(slowed(cpu_results, MATMUL, 1.3))) is Outcome.INTERRUPTED
    assert session.comparison is not None and explained == []
    assert (MATMUL in {r.benchmark for r in session.comparison.regressions}) is repeats
    lines = session.summary_lines()
    assert ("perfkit: confirmation interrupted after 2 of 3 re-run(s): the flagged benchmarks are judged on "
            "those alone, the rest as the first run had them") in lines
    assert any(line.startswith("perfkit: confirmation: 1 flagged benchmark(s) re-run 3 time(s) in fresh "
                               "processes (2 run(s) finished); " + ("1 regression(s) held" if repeats else
                                                                    "0 regression(s) held"))
               for line in lines)


def test_a_second_ctrl_c_while_the_finished_re_runs_are_judged_keeps_the_first_look_and_their_files_go(
        settings, store, cpu_results, tmp_path, monkeypatch):
    """The night's words, its verdict and the re-run files beside it agree: the first look's verdicts stand,
    said so, and no re-run file stays for `perfkit compare` to judge the night otherwise."""
    from perfkit import confirm

    _stored(store, three_runs(cpu_results))
    results = tmp_path / "results.json"
    kept = confirm.kept_as(results, confirm.CONFIRM_LABEL, 0)

    def cut(nodeids, times, label):
        kept.write_text("{}")
        raise confirm.CutShort([typed(cpu_results)])

    def judged_again(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(confirm, "second_look", judged_again)
    session = Session(settings, store, RunOptions(confirm=3, results_path=results), cut)
    assert _finished(session, typed(slowed(cpu_results, MATMUL, 1.3))) is Outcome.INTERRUPTED
    assert session.comparison is not None and MATMUL in {r.benchmark for r in session.comparison.regressions}
    lines = session.summary_lines()
    assert ("perfkit: confirmation interrupted while its re-runs were judged: the verdicts are this run's "
            "alone") in lines
    assert not any("interrupted after" in line for line in lines) and not kept.exists()


def test_ctrl_c_in_the_re_runs_of_a_local_baseline_saves_nothing_whatever_had_finished(settings, store,
                                                                                      cpu_results):
    """A CutShort reaches the local save as any Ctrl-C does: a baseline of fewer runs is not saved."""
    from perfkit import confirm

    def cut(nodeids, times, label):
        raise confirm.CutShort([typed(cpu_results)])

    session = Session(settings, store, RunOptions(save_local=True), cut)
    assert _finished(session, typed(cpu_results)) is Outcome.INTERRUPTED
    said = "perfkit: this machine's own baseline not saved: interrupted during its re-runs"
    assert session.summary_lines()[-1] == said
    assert not store.local.directory.exists()


def test_ctrl_c_during_the_kernel_reading_run_still_judges_the_finished_re_runs(settings, store, cpu_results):
    """The judged re-runs had all finished when the interrupt came: they decide (here: the first run's
    slowdown did not repeat, so nothing is held), without kernel summaries, and the run counts as stopped."""
    _stored(store, three_runs(cpu_results))
    session = Session(settings, store, RunOptions(fail_on_regression=True, confirm=2),
                      lambda nodeids, times, label: [typed(cpu_results) for _ in range(times)], _stopped)
    assert _finished(session, typed(slowed(cpu_results, MATMUL, 1.3))) is Outcome.INTERRUPTED
    assert session.comparison is not None and not session.comparison.regressions
    lines = session.summary_lines()
    assert ("perfkit: confirmation: the flagged benchmarks' kernel summaries were not made: their run was "
            "interrupted; the re-runs that finished are judged") in lines
    assert any(line.startswith("perfkit: confirmation: 1 flagged benchmark(s) re-run 2 time(s)") and
               "0 regression(s) held" in line for line in lines)


def test_ctrl_c_during_a_local_save_saves_nothing(settings, store, cpu_results):
    session = Session(settings, store, RunOptions(save_local=True), _stopped)
    assert _finished(session, typed(cpu_results)) is Outcome.INTERRUPTED
    said = "perfkit: this machine's own baseline not saved: interrupted during its re-runs"
    assert session.summary_lines()[-1] == said
    assert not store.local.directory.exists()


def test_a_confirmation_reads_its_kernels_from_one_more_unjudged_run(settings, store, cpu_results):
    """The judged re-runs run no profiler (it could slow what follows it in their process); one more run
    with --perfkit-explain lends the confirmed rows their kernel summaries."""
    from perfkit.explain.summary import KernelStat, KernelSummary

    def summary(us):
        return KernelSummary("cpu", 1, 0.01, us * 1e-6, 0.0, (KernelStat("aten::mm", 1, us),)).to_json()

    def with_summary(results, us):
        for bench in results["benchmarks"]:
            if bench["fullname"] == MATMUL:
                bench["extra_info"][KernelSummary.TAG] = summary(us)
        return results

    _stored(store, three_runs(with_summary(copy.deepcopy(cpu_results), 1000.0)))
    judged_runs = []

    def rerun(nodeids, times, label):
        judged_runs.append((times, label))
        return [typed(slowed(cpu_results, MATMUL, 1.3)) for _ in range(times)]  # no summaries in them

    session = Session(settings, store, RunOptions(confirm=2), rerun,
                      lambda nodeids: typed(with_summary(slowed(cpu_results, MATMUL, 1.3), 1300.0)))
    session.finish(typed(slowed(cpu_results, MATMUL, 1.3)))
    why = {w.benchmark: w.reading for w in session.comparison.why}
    assert judged_runs == [(2, "confirm")] and why[MATMUL].startswith("+0.3 ms in aten::mm")


def test_a_clock_lock_is_said_and_recorded_in_the_fingerprint_until_the_run_ends(monkeypatch, cpu_results,
                                                                                  store):
    from perfkit.measure import nvml as binding
    from tests.test_clocks import FakeNvml

    nvml = FakeNvml()
    monkeypatch.setattr(binding, "load_nvml", lambda: nvml)
    fingerprint = cpu_results["machine_info"]["perfkit"]["fingerprint"]
    session = _session(_settings(fingerprint, device="cuda", profile="full", gpus=1), store,
                       baseline="none", lock_clocks="base")
    session.begin()
    assert session.messages == ["perfkit: clocks locked at the base clock on 1 GPU(s)"]
    assert session.settings.fingerprint.sm_clock == "base/1980 MHz locked"
    assert nvml.locked
    session.end()
    assert not nvml.locked


@pytest.fixture
def nvml(monkeypatch):
    """A driver that allows a clock lock, in place of NVML."""
    from perfkit.measure import nvml as binding
    from tests.test_clocks import FakeNvml

    fake = FakeNvml()
    monkeypatch.setattr(binding, "load_nvml", lambda: fake)
    return fake


def _gpu_session(cpu_results, store, **options: Any) -> Session:
    fingerprint = cpu_results["machine_info"]["perfkit"]["fingerprint"]
    return _session(_settings(fingerprint, device="cuda", profile="full", gpus=1), store, baseline="none",
                    **options)


def test_a_kernel_benchmark_is_timed_at_the_base_clock_and_the_others_at_the_clock_the_gpu_chooses(
        nvml, cpu_results, store):
    from perfkit.measure import clocks

    session = _gpu_session(cpu_results, store)
    with session.clock_for(MATMUL, kernel=True) as clock:
        assert clock == "base/1980 MHz locked" and nvml.locked == {"gpu0": (clocks.TDP_LIMIT,) * 2}
    assert not nvml.locked
    with session.clock_for("benches/test_time_to_accuracy.py::t", kernel=False) as clock:
        assert clock is None and not nvml.locked
    with _gpu_session(cpu_results, store, lock_clocks="off").clock_for(MATMUL, kernel=True) as clock:
        assert clock is None and not nvml.locked


def test_a_kernel_benchmark_is_timed_as_its_baseline_entry_was(nvml, cpu_results, store):
    session = _gpu_session(cpu_results, store)
    session.baseline = typed(cpu_results)  # its entries were timed unlocked
    for _ in range(2):
        with session.clock_for(MATMUL, kernel=True) as clock:
            assert clock is None and not nvml.locked
    assert sum("were timed unlocked ran unlocked too" in m for m in session.messages) == 1  # said once
    locked = copy.deepcopy(cpu_results)
    for bench in locked["benchmarks"]:
        bench["extra_info"]["clock_lock"] = {"sm_clock": "base/1980 MHz locked", "version": 1}
    session.baseline = typed(locked)
    with session.clock_for(MATMUL, kernel=True) as clock:
        assert clock == "base/1980 MHz locked" and nvml.locked


def test_a_refused_kernel_lock_is_said_once_and_the_benchmark_runs_at_the_clock_it_finds(
        nvml, cpu_results, store):
    nvml.allow = False
    session = _gpu_session(cpu_results, store)
    for _ in range(2):
        with session.clock_for(MATMUL, kernel=True) as clock:
            assert clock is None
    assert [m for m in session.messages if "refused" in m] == [
        ("perfkit: kernel benchmarks: clocks not locked: the driver refused (Insufficient Permissions); the "
         "run goes on at the clocks it finds")]


def test_a_whole_run_lock_is_every_benchmarks_clock_and_confirmation_re_runs_lock_alike(
        nvml, cpu_results, store):
    session = _gpu_session(cpu_results, store, lock_clocks="base")
    session.begin()
    with session.clock_for("benches/test_time_to_accuracy.py::t", kernel=False) as clock:
        assert clock == "base/1980 MHz locked"
    session.end()
    assert "--perfkit-lock-clocks=base" in session.options.rerun_args("cuda", "full")


def test_a_baseline_of_another_cpu_generation_is_said_before_the_run_and_never_fails_it(store, tmp_path):
    from tests.conftest import ROOT, all_slowed, one_run

    committed = json.loads((ROOT / "baselines" / "cpu-amd-epyc-2cpu-quick.json").read_text())
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(committed))
    fingerprint = {**committed["machine_info"]["perfkit"]["fingerprint"],
                   "cpu_signature": "family 25 model 1"}
    session = _session(_settings(fingerprint), store, baseline=str(path), fail_on_regression=True)
    said = (f"perfkit: baseline {path} is of a DIFFERENT machine under this hardware id (cpu_signature "
            "family 26 model 2 -> family 25 model 1): this run will be compared with it, not judged; its end "
            "says how to get verdicts")
    assert session.header_lines() == [said]
    run = all_slowed(one_run(committed), 2.5, committed["datetime"])
    run["machine_info"]["perfkit"]["fingerprint"] = fingerprint
    assert session.finish(typed(run)) is Outcome.OK
    assert session.summary_lines()[0].startswith(f"perfkit: compared with {path}: DIFFERENT machine")
    own = _session(_settings(committed["machine_info"]["perfkit"]["fingerprint"]), store, baseline=str(path))
    assert own.header_lines() == []


def _committed_cpu() -> dict[str, Any]:
    from tests.conftest import ROOT

    return json.loads((ROOT / "baselines" / "cpu-amd-epyc-2cpu-quick.json").read_text())


def _run_on(committed: dict[str, Any], signature: str, factor: float = 1.0,
            busy: float | None = None) -> dict[str, Any]:
    """One run of the committed CPU baseline on a CPU of ``signature``, every time ``factor`` slower;
    ``busy``: the CPUs other processes kept busy while each benchmark ran (of 2)."""
    from tests.conftest import all_slowed, one_run

    run = all_slowed(one_run(committed), factor, "2026-12-01T10:00:00+00:00")
    run["machine_info"]["perfkit"]["fingerprint"]["cpu_signature"] = signature
    for bench in run["benchmarks"]:
        bench["extra_info"].pop("host_load", None)
        if busy is not None:
            bench["extra_info"]["host_load"] = {"other_cpus": busy, "cpus": 2, "version": 1}
    return run


def test_another_cpu_under_the_id_ends_with_how_much_slower_how_busy_and_the_command_for_verdicts(store):
    committed = _committed_cpu()
    path = _stored(store, committed)
    run = _run_on(committed, "family 25 model 1", 13.5, busy=1.6)
    laptop = _settings(run["machine_info"]["perfkit"]["fingerprint"])
    session = _session(laptop, store, fail_on_regression=True,
                       command=("benches/", "--benchmark-json=results.json"))
    assert session.baseline_path == path
    assert session.finish(typed(run)) is Outcome.OK  # nothing judged: nothing can fail
    assert session.summary_lines()[-1] == session.hint
    # every time 13.5x the newest run's; the ratio is against the baseline's medians over its runs
    slower = re.search(r"this run was (\d+\.\d)x slower than it", session.hint)
    assert slower and 10 < float(slower[1]) < 14
    assert session.hint == (
        "perfkit: no verdicts: the committed baseline is of another machine under this hardware id "
        "(cpu_signature family 26 model 2 -> family 25 model 1), and this run was "
        f"{slower[1]}x slower than it; 40 of its 40 benchmarks ran while other processes kept up to 1.6 of 2 "
        "CPUs busy. To judge later runs "
        "against this machine, run `pytest benches/ "
        "--perfkit-save-baseline=local` once on a quiet host: it saves this run and 2 re-runs in fresh "
        "processes as this machine's own baseline in .perfkit/baselines/ (not committed)")
    assert f"(the current run {slower[1]}x slower)" in session.summary_lines()[0]  # the ceilings kept theirs


def test_this_machines_own_baseline_is_saved_from_three_runs_and_judges_the_next_run_before_the_committed(
        store):
    committed = _committed_cpu()
    committed_path = _stored(store, committed)
    first = _run_on(committed, "family 25 model 1", 13.5)
    laptop = _settings(first["machine_info"]["perfkit"]["fingerprint"])
    asked: list[tuple[list[str], int]] = []

    def rerun(names: list[str], times: int, label: str | None) -> list[Any]:  # stood in: the run, 1% apart
        asked.append((names, times, label))
        return [typed(_run_on(committed, "family 25 model 1", 13.5 * f)) for f in (1.01, 0.99)][:times]

    saving = Session(laptop, store, RunOptions(save_local=True), rerun)
    assert saving.finish(typed(first)) is Outcome.OK and not saving.hint
    assert "the re-runs of this machine's own baseline" in saving.rerun_seconds  # named in the wall line
    own = store.local.path_for("cpu-amd-epyc-2cpu", "quick")
    assert asked == [([b["fullname"] for b in first["benchmarks"]], 2, None)]  # not kept as a confirmation's
    assert saving.summary_lines()[-1] == (
        f"perfkit: saved this machine's own baseline {own} (3 run(s): this one and 2 in fresh processes); "
        "later runs here are judged against it")
    ignored = own.parent.parent / ".gitignore"  # the folder keeps itself out of git
    assert own.parent.parent.name == ".perfkit" and ignored.read_text().endswith("\n*\n")
    assert committed_path.read_text() == store.path_for("cpu-amd-epyc-2cpu", "quick").read_text()

    second = _session(laptop, store, fail_on_regression=True)
    assert second.baseline_path == own and second.header_lines() == []
    slower = slowed(_run_on(committed, "family 25 model 1", 13.5), MATMUL, 1.5)
    assert second.finish(typed(slower)) is Outcome.REGRESSED and not second.hint
    assert [r.benchmark for r in second.comparison.regressions] == [MATMUL]
    assert second.summary_lines()[0].startswith(f"perfkit: compared with {own}: same hardware")
    epyc = _settings(committed["machine_info"]["perfkit"]["fingerprint"])
    assert Session(epyc, store).baseline_path == committed_path  # another machine's own is passed over

    earlier = own.read_text()
    again = Session(laptop, store, RunOptions(save_local=True), rerun)
    assert again.finish(typed(_run_on(committed, "family 25 model 1", 14.0))) is Outcome.OK
    kept = own.with_name(own.name + ".previous")  # a new sitting replaces it, and loses nothing
    assert kept.read_text() == earlier and own.read_text() != earlier
    assert again.summary_lines()[-1].endswith(f"judged against it; the one it replaced is kept as {kept}")


def test_saving_a_run_recorded_on_a_busy_host_warns_in_one_sentence_and_saves_it(store):
    run = _run_on(_committed_cpu(), "family 26 model 2", busy=1.6)
    session = _session(_settings(run["machine_info"]["perfkit"]["fingerprint"]), store, save_mode="new")
    assert session.finish(typed(run, "results.json")) is Outcome.OK
    path = store.path_for("cpu-amd-epyc-2cpu", "quick")
    assert path.exists() and session.summary_lines()[-2:] == [
        f"perfkit: saved baseline {path}",
        ("perfkit: warning: results.json: 40 of its 40 benchmarks ran while other processes kept up to 1.6 "
         "of 2 CPUs busy, so the baseline holds that load and quiet runs will read faster; for a quiet one, "
         "re-run with nothing else running (the load in `uptime` near 0) and save that run instead")]
    quiet = _session(_settings(run["machine_info"]["perfkit"]["fingerprint"]), store, save_mode="force")
    assert quiet.finish(typed(_run_on(_committed_cpu(), "family 26 model 2", busy=0.1))) is Outcome.OK
    assert not any("warning" in line for line in quiet.summary_lines())


def test_the_wall_time_counts_from_the_process_start_not_from_perfkits_session():
    """The interpreter and the imports before the session are part of the nightly's five minutes: a process
    that waited 1.5 s before perfkit's session began reads at least that much since start-up."""
    code = ("import time; time.sleep(1.5); from perfkit.wall_clock import process_started; "
            "print(time.monotonic() - process_started())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert 1.5 <= float(done.stdout) < 30


def test_the_wall_time_line_names_the_re_runs_only_where_there_were_some():
    started = time.monotonic() - 100
    assert wall_clock.line(started, {}, {}) is None  # no test ran
    confirmation, own = "the confirmation's re-runs", "the re-runs of this machine's own baseline"
    quiet = wall_clock.line(started, {"test_layers": 60.0, "test_flops": 0.2}, {confirmation: 0.01})
    assert quiet is not None
    assert quiet.startswith("perfkit: wall time 100 s from start-up (40 s outside the tests")
    assert "confirmation" not in quiet and quiet.endswith("; per family: test_layers 60 s")
    confirmed = wall_clock.line(started, {"test_layers": 60.0}, {confirmation: 30.0})
    assert confirmed is not None
    assert ("(40 s outside the tests: interpreter, imports, collection, judging; 30 s of it the "
            "confirmation's re-runs)") in confirmed
    saved = wall_clock.line(started, {"test_layers": 60.0}, {own: 35.0})
    assert saved is not None and f"35 s of it {own})" in saved
