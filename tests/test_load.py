"""The one loader: every result file perfkit ever wrote loads, migrates and compares; bad input is one
sentence."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from perfkit import SCHEMA_VERSION
from perfkit.errors import BaselineError
from perfkit.resultfile import figures, load, migrations
from perfkit.resultfile.payloads import FAMILIES, Roofline, Scaling
from perfkit.verdict.judge import Verdict, judge
from perfkit.verdict.noise import Noise
from tests.conftest import DATA, ROOT

LEGACY = DATA / "legacy"
#: The H200 nightly of 2026-11-23 12:05 (the newest run of 13c667a's baseline, five of its benchmarks): the
#: last run that timed the K1 grid and tuned kernels back to back, and the layers one call a round.
NIGHTLY = LEGACY / "nvidia-h200-x1-2026-11-23.json"
GRID = "benches/test_vector_add.py::test_gpu_explicit[K1-grid]"
TUNED = "benches/test_vector_add.py::test_gpu_explicit[K1-tuned]"
K100 = "benches/test_vector_add.py::test_gpu_explicit[K100-grid]"
RELU = "benches/test_layers.py::test_layer[relu-forward]"


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_a_missing_file_says_how_to_make_one(tmp_path):
    with pytest.raises(BaselineError, match="no such file.*--benchmark-json"):
        load.load(tmp_path / "nope.json")


def test_a_corrupt_file_names_the_line_and_what_to_do(tmp_path):
    path = tmp_path / "b.json"
    path.write_text('{"benchmarks": [')
    with pytest.raises(BaselineError, match="not valid JSON.*: cut short.*restore it from git"):
        load.load(path)
    path.write_text("these are notes, not results\n")  # a newcomer's plain text read "cut short or edited"
    with pytest.raises(BaselineError, match=r"line 1, column 1: not JSON at all\)"):
        load.load(path)
    for cut in ('{"benchmarks": [{"name": "te', '{"a": 2.', '{"a": tru'):  # inside a string, a number, a word
        path.write_text(cut)
        with pytest.raises(BaselineError, match=r": cut short\)"):
            load.load(path)
    path.write_text("123 notes")
    with pytest.raises(BaselineError, match=r": not JSON at all\)"):
        load.load(path)
    path.write_text('\ufeff{"benchmarks": [], x}')  # a byte-order mark is not the error
    with pytest.raises(BaselineError, match=r"line 1, column 20: edited\)"):
        load.load(path)
    path.write_text('{"benchmarks": [], x}')
    with pytest.raises(BaselineError, match=r"line 1, column 20: edited\)"):
        load.load(path)


def test_a_file_that_is_not_text_is_one_sentence(tmp_path):
    path = tmp_path / "b.json"
    path.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(BaselineError, match="not a text file"):
        load.load(path)


def test_a_plain_pytest_benchmark_file_without_perfkit_section_is_refused(tmp_path, cpu_results):
    del cpu_results["machine_info"]["perfkit"]
    with pytest.raises(BaselineError, match="no perfkit section"):
        load.load(_write(tmp_path / "b.json", cpu_results))
    cpu_results["machine_info"] = "edited by hand"  # it read .get of a string: a stack trace
    with pytest.raises(BaselineError, match="no perfkit section"):
        load.load(_write(tmp_path / "c.json", cpu_results))


def test_a_newer_schema_says_to_upgrade_and_a_damaged_one_says_so(tmp_path, cpu_results):
    cpu_results["machine_info"]["perfkit"]["schema_version"] = 999
    with pytest.raises(BaselineError, match="schema 999 is newer than this perfkit reads.*upgrade perfkit"):
        load.load(_write(tmp_path / "b.json", cpu_results))
    cpu_results["machine_info"]["perfkit"]["schema_version"] = "one"
    with pytest.raises(BaselineError, match="not one perfkit ever wrote"):
        load.load(_write(tmp_path / "b.json", cpu_results))


def test_not_a_benchmark_file_at_all(tmp_path):
    with pytest.raises(BaselineError, match="not a pytest-benchmark JSON"):
        load.load(_write(tmp_path / "b.json", [1, 2, 3]))


def test_an_entry_without_a_median_is_named(tmp_path, cpu_results):
    cpu_results["benchmarks"][0]["stats"]["median"] = "fast"
    with pytest.raises(BaselineError, match="its median time is not a number"):
        load.load(_write(tmp_path / "b.json", cpu_results))


def test_a_negative_time_is_refused_as_a_nan_is(tmp_path, cpu_results):
    """Once read as "32 unknown (32 of them better)": no clock measures a negative time."""
    bench = cpu_results["benchmarks"][0]
    damaged = copy.deepcopy(cpu_results)
    damaged["benchmarks"][0]["stats"]["median"] = -0.5
    with pytest.raises(BaselineError, match=f"{bench['fullname']}: its median time is negative \\(-0.5 s\\)"):
        load.load(_write(tmp_path / "b.json", damaged))
    stored = copy.deepcopy(cpu_results)
    stored["machine_info"]["perfkit"]["runs"] = {bench["fullname"]: {"time": [0.1, -0.1]}}
    with pytest.raises(BaselineError, match="a stored run's time is negative"):
        load.load(_write(tmp_path / "s.json", stored))


@pytest.mark.parametrize("tolerance", [0.0, -0.05, float("nan"), 5.0, "5%"])
def test_a_minimum_effect_that_is_no_fraction_is_refused_naming_file_and_benchmark(tmp_path, cpu_results,
                                                                                    tolerance):
    """0 and NaN gave NaN MDEs, a negative one a minimum no change could meet."""
    bench = cpu_results["benchmarks"][0]
    bench["extra_info"]["tolerance"] = tolerance
    named = f"b.json: {re.escape(bench['fullname'])}: extra_info.tolerance is "
    with pytest.raises(BaselineError, match=named + ".*not a fraction between 0 and 1"):
        load.load(_write(tmp_path / "b.json", cpu_results))


def test_a_malformed_metric_names_the_file_and_the_benchmark(tmp_path, cpu_results):
    bench = next(b for b in cpu_results["benchmarks"] if b["extra_info"].get("metrics"))
    name = next(iter(bench["extra_info"]["metrics"]))
    bench["extra_info"]["metrics"][name]["value"] = None
    with pytest.raises(BaselineError, match=f"b.json: {re.escape(bench['fullname'])}: metric '{name}' is "
                                            "malformed"):
        load.load(_write(tmp_path / "b.json", cpu_results))


def test_a_benchmark_twice_in_one_file_is_refused(tmp_path, cpu_results):
    bench = cpu_results["benchmarks"][1]
    cpu_results["benchmarks"].append(copy.deepcopy(bench))
    with pytest.raises(BaselineError, match=f"holds {re.escape(bench['fullname'])} twice; keep one entry"):
        load.load(_write(tmp_path / "b.json", cpu_results))


def test_an_older_files_figures_load_under_the_names_of_what_they_hold(tmp_path, cpu_results):
    old = copy.deepcopy(cpu_results)
    bench = old["benchmarks"][0]
    bench["extra_info"]["metrics"] = {"pct_of_copy_peak": {"value": 2.3, "unit": "ratio", "better": "higher"},
                                      "of_datasheet": {"value": 0.8, "unit": "ratio", "better": "higher"},
                                      "images_per_s": {"value": 9.0, "unit": "img/s", "better": "higher"}}
    bench["extra_info"]["metrics_absent"] = {"pct_of_datasheet": "no datasheet figure"}
    old["machine_info"]["perfkit"]["runs"] = {
        bench["fullname"]: {"time": [1.0, 1.1], "pct_of_peak": [0.5, 0.6]}
    }
    old["machine_info"]["perfkit"]["noise"] = {
        bench["fullname"]: {"pct_of_peak": {"sd": 0.1, "range": 0.2, "runs": 2}}
    }
    loaded = load.load(_write(tmp_path / "old.json", old))
    entry, info = loaded.benchmarks[0], loaded.info
    assert {"share_of_copy_peak", "share_of_datasheet", "images_per_s"} <= set(entry.metrics)
    assert (
        entry.metrics["share_of_datasheet"].value == 0.8 and entry.metrics["images_per_s"].unit == "images/s"
    )
    assert "share_of_datasheet" not in entry.absent  # measured wins over an absence of the same figure
    assert set(info.runs[bench["fullname"]]) == {"time", "share_of_peak"}
    assert set(info.noise[bench["fullname"]]) == {"share_of_peak"} and info.schema_version == SCHEMA_VERSION


def test_the_first_typed_records_were_migrated_from_their_untyped_shapes():
    x1 = load.load(LEGACY / "nvidia-h200-x1-2026-11-21.json")  # the roofline was a bare list of points
    roofs = list(x1.family(Roofline))
    assert len(roofs) == 2 and all(rec.points[0].bytes_source == "analytic minimum" for _, rec in roofs)
    assert all(0 < (b.value("share_of_roof") or 0) <= 1 for b, _ in roofs)
    x2 = load.load(LEGACY / "nvidia-h200-x2-2026-11-21.json")  # the scaling record held only sizes
    runs = {b.fullname.split("::")[1]: rec for b, rec in x2.family(Scaling)}
    assert runs["test_ddp[resnet50-224-b64-gpus2]"].method == "DDP"
    assert runs["test_dataparallel[resnet50-224-b64-gpus1]"].reference_key == "resnet50-random-224px-global64"
    speedup = x2.by_name()["benches/test_data_parallel.py::test_ddp[resnet50-224-b64-gpus2]"].value("speedup")
    assert speedup is not None and 1.9 < speedup < 2.1  # the derived pass found its 1-GPU partner
    assert x1.unreadable(FAMILIES) == [] and x2.unreadable(FAMILIES) == []


def test_time_to_accuracy_of_five_runs_compares_with_one_of_three_by_the_share_that_reached():
    five = load.load(ROOT / "baselines" / "nvidia-h100-80gb-hbm3-x1.json")  # R = 5, gated on the count
    name = next(b.fullname for b in five.benchmarks if "test_time_to_accuracy" in b.fullname)
    entry = five.by_name()[name]
    assert entry.value("share_reached") == 1.0 and entry.metrics["share_reached"].gate
    assert entry.value("runs_reached") == 5 and not entry.metrics["runs_reached"].gate
    assert five.runs()[name]["share_reached"] == [1.0] * len(five.runs()[name]["runs_reached"])
    raw = json.loads((ROOT / "baselines" / "nvidia-h100-80gb-hbm3-x1.json").read_text())
    three = next(b for b in raw["benchmarks"] if b["fullname"] == name)
    three["extra_info"]["metrics"]["runs_reached"]["value"] = 2.0  # two of three runs reached the target
    three["extra_info"]["time_to_accuracy"]["runs"] = three["extra_info"]["time_to_accuracy"]["runs"][:3]
    raw["machine_info"]["perfkit"]["schema_version"] = 2  # as written before the share was recorded
    assert migrations.migrate(raw, "x")["benchmarks"][raw["benchmarks"].index(three)]["extra_info"][
        "metrics"]["share_reached"]["value"] == pytest.approx(2 / 3)


def test_an_older_files_entries_were_measured_by_the_method_of_their_date(tmp_path):
    old = load.load(NIGHTLY)  # schema 3, 12:05: before the kernels were timed alone (13:45) and the layers
    assert old.info.schema_version == SCHEMA_VERSION
    assert all(b.methods == {} for b in old.benchmarks)  # every figure by version 1
    raw = json.loads(NIGHTLY.read_text())
    raw["datetime"] = "2026-11-23T13:45:58.725042+00:00"  # e6f5ae8's first run timed alone, before 7033a54
    alone = load.load(_write(tmp_path / "alone.json", raw)).by_name()
    assert alone[GRID].method("kernel_s") == alone[TUNED].method("kernel_s") == 2
    assert alone[GRID].method("share_of_copy_peak") == 2 and alone[GRID].method("time") == 1  # the step
    assert alone[K100].methods == {} and alone[RELU].methods == {}  # K100 never fit in L2; layers: 15:02
    raw["datetime"] = "2026-11-23T15:05:24.498751+00:00"
    assert load.load(_write(tmp_path / "layers.json", raw)).by_name()[RELU].method("time") == 2
    raw["machine_info"]["perfkit"]["device"] = "cpu"  # a CPU layer is still one call a round
    assert load.load(_write(tmp_path / "cpu.json", raw)).by_name()[RELU].methods == {}


def test_a_baselines_entries_are_dated_by_their_own_runs_and_the_committed_ones_keep_their_meaning():
    h200 = load.load(ROOT / "baselines" / "nvidia-h200-x1.json").by_name()
    # re-saved from runs of 2026-12-02 16:00 on: a hundred launches alone
    assert h200[GRID].method("kernel_s") == h200[TUNED].method("kernel_s") == 3
    assert h200[K100].methods == {} and h200[RELU].method("time") == 2
    assert h200["benches/test_ceilings.py::test_matmul_flops[bf16]"].method("matmul_tflops_bf16") == 2
    assert h200["benches/test_ceilings.py::test_copy_bandwidth"].methods == {}
    quick = load.load(ROOT / "baselines" / "nvidia-h200-x1-quick.json")  # of 2026-11-22: the first ways,
    cpu = {b.fullname: b for b in quick.benchmarks if "test_cpu_" in b.fullname}  # but its CPU references
    assert all(b.methods == {} for b in quick.benchmarks if b.fullname not in cpu)
    assert cpu and all(b.method("time") == figures.HOST_FASTEST_CORE.version for b in cpu.values())


def test_an_older_baseline_whose_runs_began_before_a_method_keeps_only_its_entrys_run(tmp_path):
    raw = json.loads(NIGHTLY.read_text())
    raw["datetime"] = "2026-11-23T13:49:48.409838+00:00"
    dates = [["2026-11-23T12:05:12+00:00", "m1"], ["2026-11-23T13:49:48.409838+00:00", "m1"]]
    raw["machine_info"]["perfkit"]["runs"] = {GRID: {"time": [2e-3, 2.1e-3], "kernel_s": [25e-6, 7.8e-6]},
                                              K100: {"time": [0.2, 0.21], "kernel_s": [3.5e-4, 3.5e-4]}}
    raw["machine_info"]["perfkit"]["run_origins"] = {GRID: dates, K100: dates}
    results = load.load(_write(tmp_path / "appended.json", raw))
    entry = results.by_name()[GRID]
    assert entry.method("kernel_s") == 2
    assert results.runs()[GRID]["kernel_s"] == [entry.value("kernel_s")]  # not 25 us measured the old way
    assert results.origins()[GRID] == (("2026-11-23T13:49:48.409838+00:00", "m1"),)
    assert len(results.runs()[K100]["kernel_s"]) == 2  # measured one way all along


def test_a_record_no_step_can_bring_forward_loses_its_plot_not_its_comparison(tmp_path):
    raw = json.loads((LEGACY / "nvidia-h200-x2-2026-11-21.json").read_text())
    ddp = next(b for b in raw["benchmarks"] if "test_ddp" in b["fullname"])
    ddp["fullname"] = ddp["fullname"].replace(
        "resnet50-224-b64", "mystery"
    )  # no workload in the id to recover
    results = load.load(_write(tmp_path / "r.json", raw))
    assert any("field 'method' is missing" in line for line in results.unreadable(FAMILIES))
    verdicts = judge(results, results, Noise.of(results)).benchmark_verdicts()
    # still in the comparison (a one-run file against itself: not judged, as every entry of it)
    assert verdicts[ddp["fullname"]] is Verdict.NOT_JUDGED and len(verdicts) == len(raw["benchmarks"])


def test_an_older_files_memory_utilisation_loads_as_a_figure_with_a_direction(tmp_path, cpu_results):
    old = copy.deepcopy(cpu_results)
    old["benchmarks"][0]["extra_info"]["metrics"] = {
        "memory_util_pct": {"value": 31.4, "unit": "%", "better": "none"}}
    entry = load.load(_write(tmp_path / "old.json", old)).benchmarks[0]
    assert entry.metrics["memory_util_pct"].better == figures.MEMORY_UTIL_PCT.better == "higher"


def test_migrating_twice_changes_nothing():
    raw = json.loads((LEGACY / "nvidia-h200-x1-2026-11-21.json").read_text())
    once = migrations.migrate(copy.deepcopy(raw), "x")
    assert migrations.migrate(copy.deepcopy(once), "x") == once


def _committed_versions() -> list[tuple[str, str]]:
    """(commit, path) of every distinct version of every result file ever committed under baselines/ and
    tests/data/."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the committed history of result files is not at hand")
    if (ROOT / ".git" / "shallow").exists():
        pytest.skip(
            "a shallow clone holds only the newest result files; tests/data/legacy covers the old shapes"
        )
    log = subprocess.run(
        ["git", "log", "--all", "--format=commit %H", "--name-only", "--", "baselines", "tests/data"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    seen: dict[str, tuple[str, str]] = {}
    commit = ""
    for line in log.splitlines():
        if line.startswith("commit "):
            commit = line.split()[1]
        elif line.endswith(".json"):
            blob = subprocess.run(
                ["git", "rev-parse", f"{commit}:{line}"],
                cwd=ROOT, capture_output=True, text=True, check=False,
            )
            if blob.returncode == 0:  # a commit that deleted the file has no version of it
                seen.setdefault(blob.stdout.strip(), (commit, line))
    return sorted(seen.values())


@pytest.mark.slow
def test_every_result_file_the_project_ever_committed_loads_and_compares(tmp_path):
    versions = _committed_versions()
    assert len(versions) >= 30  # 36 distinct versions when this test was written
    failures = []
    for commit, path in versions:
        text = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout
        target = tmp_path / f"{commit[:10]}-{Path(path).name}"
        target.write_text(text)
        try:
            results = load.load(target)
            unreadable = results.unreadable(FAMILIES)
            against_itself = judge(results, results, Noise.of(results))
            if unreadable or against_itself.regressions:
                failures.append(
                    f"{commit[:10]} {path}: {unreadable[:1]} {len(against_itself.regressions)} regressed"
                )
        except BaselineError as exc:
            failures.append(f"{commit[:10]} {path}: {exc}")
    assert failures == []
