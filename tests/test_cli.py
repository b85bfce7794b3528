"""The perfkit command: exit codes, formats, and one-line errors without tracebacks."""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from importlib import metadata

import pytest

from perfkit import cli
from perfkit.resultfile import datasheet, load
from tests.conftest import DATA, ROOT, slowed, three_runs

MATMUL = "benches/test_ceilings.py::test_matmul_flops[fp32]"


@pytest.fixture
def files(tmp_path, cpu_results):
    base, same, slow = tmp_path / "base.json", tmp_path / "same.json", tmp_path / "slow.json"
    base.write_text(json.dumps(three_runs(cpu_results).to_json()))
    same.write_text(json.dumps(cpu_results))
    slow.write_text(json.dumps(slowed(cpu_results, MATMUL, 1.3)))
    return base, same, slow


def test_a_run_compared_with_itself_reports_no_regression(files, capsys):
    base, same, _ = files
    assert cli.main(["compare", str(base), str(same), "--fail"]) == 0
    out = capsys.readouterr().out
    assert "regressed" not in out.splitlines()[0] and "same hardware" in out


def test_fail_exits_non_zero_naming_the_slowed_benchmark(files, capsys):
    base, _, slow = files
    assert cli.main(["compare", str(base), str(slow)]) == 0
    assert cli.main(["compare", str(base), str(slow), "--fail"]) == cli.EXIT_REGRESSION
    captured = capsys.readouterr()
    assert MATMUL in captured.err and "1 benchmark(s) regressed" in captured.err


def test_several_current_files_are_judged_together_as_that_sides_runs(files, tmp_path, capsys):
    """Replicates of one night (a fleet's, or fresh processes by hand): the current side holds all of them."""
    base, _, slow = files
    again = tmp_path / "slow-again.json"
    again.write_text(json.dumps(slowed(json.loads(slow.read_text()), MATMUL, 1.002)))
    assert cli.main(["compare", str(base), str(slow), str(again), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    matmul = next(r for r in rows if r["benchmark"] == MATMUL and r["figure"] == "time")
    assert matmul["runs"] == [3, 2] and matmul["verdict"] == "regressed"


def test_json_and_markdown_formats(files, capsys):
    base, _, slow = files
    cli.main(["compare", str(base), str(slow), "--format", "json"])
    payload = json.loads(capsys.readouterr().out)
    assert payload["counts"]["regressed"] >= 1 and payload["same_hardware"] is True
    cli.main(["compare", str(base), str(slow), "--format", "markdown"])
    assert "| verdict | benchmark |" in capsys.readouterr().out


@pytest.mark.parametrize("columns", [80, 120])
def test_the_terminal_table_fits_columns_and_loses_no_cell_json_holds(files, capsys, monkeypatch, columns):
    base, _, slow = files
    monkeypatch.setenv("COLUMNS", str(columns))
    cli.main(["compare", str(base), str(slow)])
    text = capsys.readouterr().out
    assert max(map(len, text.splitlines())) <= columns
    cli.main(["compare", str(base), str(slow), "--format", "json"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    flat = " ".join(text.split())
    for row in rows:  # every benchmark (without its file) and every word of every note is still there
        assert row["benchmark"].rsplit("::", 1)[-1] in flat
        assert all(word in flat for word in row["note"].split())


def test_a_table_that_fits_keeps_its_columns():
    from perfkit.render.tables import text_table

    table = text_table(["a", "b"], [["benches/x.py::t[1]", "note"]], width=80)
    assert table.splitlines() == ["a                   b", "------------------  ----",
                                  "benches/x.py::t[1]  note"]


def test_a_narrow_table_keeps_every_row_and_shortens_only_benchmark_names():
    from perfkit.render.tables import text_table

    rows = [["regressed", "benches/x.py::t[1]", "see benches/b.py::test_y\nfor why " + "word " * 12],
            ["unknown", "benches/x.py::t[2]"]]  # a cell with a line break, a row shorter than the head
    lines = text_table(["verdict", "benchmark", "note"], rows, width=40).splitlines()
    assert max(map(len, lines)) <= 40
    assert [line.split()[:2] for line in lines if not line.startswith(" ")][2:] == [["regressed", "t[1]"],
                                                                                   ["unknown", "t[2]"]]
    assert "see benches/b.py::test_y for why" in " ".join(" ".join(lines).split())
    assert text_table(["a", "b"], [], width=10).splitlines() == ["a  b", "-  -"]


def test_a_looser_threshold_lets_a_30_percent_slowdown_pass(files):
    base, _, slow = files
    assert cli.main(["compare", str(base), str(slow), "--fail", "--threshold", "50%"]) == 0


@pytest.mark.parametrize("form", ["table", "markdown"])
def test_the_legend_under_a_compare_says_the_threshold_in_force(form, capsys):
    results = str(DATA / "cpu-quick.json")
    assert cli.main(["compare", results, results, "--threshold", "10%", "--format", form]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "beyond the minimum effect (10%, or a benchmark's own tolerance; wider where" in out
    assert "3% for a GPU-bound" not in out


@pytest.mark.parametrize("args, message", [
    (["compare", "{base}", "{base}", "--threshold", "lots"], "threshold 'lots' is not a number"),
    (["compare", "{base}", "{missing}"], "no such file"),
    (["compare", "{missing}", "{base}"], "no such file; give the path of an existing result file"),
    (["report", "{corrupt}", "--out", "{tmp}/r"], "not valid JSON"),
    (["compare", "{latin1}", "{base}"], "latin1.json: not a text file (not UTF-8)"),
    (["report", "{latin1}", "--out", "{tmp}/r"], "latin1.json: not a text file (not UTF-8)"),
    (["baseline", "save", "{latin1}", "--dir", "{tmp}/b"], "latin1.json: not a text file (not UTF-8)"),
    (["compare", "{base}", "{latin1}.partial"], "latin1.json.partial: not a text file (not UTF-8)"),
    (["report", "{latin1}.partial", "--out", "{tmp}/r"], "latin1.json.partial: not a text file (not UTF-8)"),
    (["report", "{empty}", "--out", "{tmp}/r"], "empty.json: holds no benchmarks"),
    (["compare", "{base}", "{empty}"], "empty.json: holds no benchmarks"),
    (["baseline", "save", "{empty}", "--dir", "{tmp}/b"], "empty.json: holds no benchmarks"),
    (["roofline", "{h200}", "--out", "{tmp}/x.txt"], "x.txt: the roofline is drawn as PNG"),
    (["report", "{base}", "--out", "{base}"], "base.json is a file; give a folder for the report (made"),
])
def test_bad_input_is_one_line_exit_2_no_traceback(files, tmp_path, args, message):
    base = files[0]
    corrupt, latin1, empty = tmp_path / "corrupt.json", tmp_path / "latin1.json", tmp_path / "empty.json"
    corrupt.write_text("{")
    for path in (latin1, tmp_path / "latin1.json.partial"):  # what an editor saving as Latin-1 leaves
        path.write_bytes(base.read_text().replace('"benchmarks"', '"caf\xe9", "benchmarks"', 1)
                         .encode("latin-1", errors="replace"))
    no_benchmarks = json.loads(base.read_text())
    no_benchmarks["benchmarks"] = []
    empty.write_text(json.dumps(no_benchmarks))
    fill = {"base": base, "missing": tmp_path / "missing.json", "corrupt": corrupt, "tmp": tmp_path,
            "latin1": latin1, "empty": empty, "h200": cli_h200()}
    done = subprocess.run(
        check=False,
        args=[sys.executable, "-m", "perfkit.cli", *[a.format(**fill) for a in args]],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr and "Traceback" not in done.stderr
    assert not any((tmp_path / made).exists() for made in ("b", "r", "x.txt"))  # nothing written


def cli_h200() -> str:
    return str(ROOT / "baselines" / "nvidia-h200-x1.json")


def test_baseline_save_refuses_to_overwrite_without_force(files, tmp_path, capsys):
    base = files[0]
    folder = tmp_path / "baselines"
    assert cli.main(["baseline", "save", str(base), "--dir", str(folder)]) == 0
    (saved,) = folder.glob("*.json")
    before = saved.read_bytes()
    assert cli.main(["baseline", "save", str(base), "--dir", str(folder)]) == 2
    assert "pass --force" in capsys.readouterr().err
    assert saved.read_bytes() == before
    assert cli.main(["baseline", "save", str(base), "--dir", str(folder), "--force"]) == 0


@pytest.mark.slow
def test_report_writes_markdown_and_the_ceilings_plot(tmp_path, h200_results, files):
    results = tmp_path / "h200.json"
    results.write_text(json.dumps(h200_results))
    out = tmp_path / "report"
    assert cli.main(["report", str(results), "--out", str(out)]) == 0
    text = (out / "report.md").read_text()
    assert "## Ceilings" in text and "copy_bandwidth_gbps" in text and "![" in text
    assert (out / "ceilings.png").stat().st_size > 1000


def test_hw_json_lists_fingerprint_and_datasheet(capsys):
    assert cli.main(["hw", "--json", "--device", "cpu"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["fingerprint"]["hardware_id"].startswith("cpu-")
    assert {"k80", "gtx-1080-ti", "v100-sxm2", "rtx-8000", "a100-40gb", "a100-80gb", "h100-sxm", "h200"} <= {
        row["key"] for row in payload["datasheet"]}
    assert all(row["source"] for row in payload["datasheet"])


def test_memory_prints_the_estimate_terms(capsys):
    assert cli.main(["memory", "resnet18", "--batch", "4", "--input", "3,64,64"]) == 0
    out = capsys.readouterr().out
    for term in ("params", "grads", "optimizer_state", "activations", "total estimate"):
        assert term in out
    assert "resnet18, batch 4, input 3x64x64" in out


def test_memory_of_a_batch_no_gpu_holds_says_so_and_what_fits(capsys):
    assert cli.main(["memory", "resnet18", "--batch", "100000000"]) == 0
    out = capsys.readouterr().out
    note = next(line for line in out.splitlines() if line.startswith("note: "))
    largest = max(datasheet.GPUS, key=lambda gpu: gpu.memory_gb)
    said = f"the largest, {largest.name}, has {largest.memory_gb:g} GB"
    assert f"more than any GPU in the datasheet holds ({said})" in note
    fits = int(note.rsplit("at most batch ", 1)[1].split()[0].replace(",", ""))
    assert 1000 < fits < 100_000_000
    from perfkit.workloads.estimate import estimate_training_memory
    card = largest.memory_gb * 1e9
    assert estimate_training_memory("resnet18", fits).total <= card < estimate_training_memory(
        "resnet18", fits + 1).total
    assert cli.main(["memory", "resnet18", "--batch", "32"]) == 0
    assert "note:" not in capsys.readouterr().out


def test_memory_json_has_every_term_in_mib(capsys):
    assert cli.main(["memory", "resnet18", "--batch", "4", "--input", "3,64,64", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["params_mib"] == pytest.approx(11_689_512 * 4 / 2**20)
    assert payload["total_mib"] == pytest.approx(sum(payload[f"{t}_mib"] for t in
                                                     ("params", "grads", "optimizer_state", "activations")))


@pytest.mark.parametrize("args, message", [
    (["memory", "resnet19", "--batch", "2"], "unknown model 'resnet19'; choose one of alexnet"),
    (["memory", "notamodel"], "error: unknown model 'notamodel'; choose one of alexnet"),  # before --batch
    (["memory", "resnet18"], "error: memory needs --batch N"),
    (["memory", "resnet18", "--batch", "2", "--input", "3,64"], "3 positive integers"),
    (["memory", "resnet18", "--batch", "2", "--input", "1,64,64"], "does not fit the model: layer conv1"),
])
def test_memory_bad_input_is_one_line(args, message, capsys):
    assert cli.main(args) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_hw_from_a_subfolder_finds_the_projects_stored_ceilings(tmp_path, monkeypatch, capsys):
    from perfkit.measure import hardware

    hardware_id = hardware.fingerprint("cpu").hardware_id
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    stored = json.loads((DATA / "cpu-quick.json").read_text())
    stored["machine_info"]["perfkit"]["hardware_id"] = hardware_id
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / f"{hardware_id}.json").write_text(json.dumps(stored))
    sub = tmp_path / "benches" / "deeper"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert cli.main(["hw", "--json", "--device", "cpu"]) == 0
    measured = {b["fullname"].rsplit("::", 1)[1]: b["extra_info"]["metrics"] for b in stored["benchmarks"]}
    assert json.loads(capsys.readouterr().out)["stored_ceilings"] == {
        "copy_bandwidth_gbps": measured["test_copy_bandwidth"]["copy_bandwidth_gbps"]["value"],
        "matmul_tflops_fp32": measured["test_matmul_flops[fp32]"]["matmul_tflops_fp32"]["value"]}


def test_baseline_save_without_dir_uses_the_projects_folder(files, tmp_path, monkeypatch, capsys):
    base = files[0]
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    monkeypatch.chdir(sub)
    assert cli.main(["baseline", "save", str(base)]) == 0
    (saved,) = (tmp_path / "baselines").glob("*.json")
    assert f"perfkit: saved {saved}" in capsys.readouterr().out


def test_baseline_save_of_several_runs_keeps_every_runs_figures_and_their_spread(
    tmp_path, cpu_results, capsys
):
    paths = []
    for i, factor in enumerate((1.0, 1.01, 0.99)):
        path = tmp_path / f"run{i}.json"
        path.write_text(json.dumps(slowed(cpu_results, MATMUL, factor)))
        paths.append(str(path))
    assert cli.main(["baseline", "save", *paths, "--dir", str(tmp_path / "b")]) == 0
    assert "(3 runs)" in capsys.readouterr().out
    (saved,) = (tmp_path / "b").glob("*.json")
    info = json.loads(saved.read_text())["machine_info"]["perfkit"]
    assert len(info["runs"][MATMUL]["time"]) == 3 and info["noise"][MATMUL]["time"]["runs"] == 3


@pytest.mark.parametrize("args", [
    ["flops", "resnet50", "--input", "3,32,32"], ["flops", "resnet18", "--input", "3,32,32"],
    ["predict", "resnet18", "--gpu", "k80", "--input", "3,32,32"],
])
def test_small_images_at_batch_one_are_counted_not_a_traceback(args, capsys):
    assert cli.main(args) == 0
    assert "FLOPs" in capsys.readouterr().out


def test_every_model_command_takes_one_image_shape_and_the_batch_apart(capsys):
    assert cli.main(["flops", "resnet18", "--input", "3,64,64", "--batch", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["input_shape"] == [2, 3, 64, 64]
    assert cli.main(["flops", "resnet18", "--input", "1,3,64,64"]) == cli.EXIT_USAGE
    assert "the batch is its own option, --batch" in capsys.readouterr().err
    assert cli.main(["memory", "resnet18", "--input", "3,64,64", "--batch", "0"]) == cli.EXIT_USAGE
    assert "--batch must be at least 1" in capsys.readouterr().err


def test_a_negative_threshold_and_an_unwritable_report_folder_are_one_sentence(tmp_path, capsys):
    results = str(DATA / "cpu-quick.json")
    assert cli.main(["compare", results, results, "--threshold", "-5%"]) == cli.EXIT_USAGE
    assert "threshold '-5%' is negative: a tolerance is a size, not a direction" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert cli.main(["report", results, "--out", str(blocker / "x")]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "Not a directory" in err and "choose another path" in err and "Traceback" not in err


def test_runs_of_two_profiles_are_not_compared(tmp_path, capsys):
    quick = json.loads((DATA / "cpu-quick.json").read_text())
    full = json.loads(json.dumps(quick))
    full["machine_info"]["perfkit"]["profile"] = "full"
    (tmp_path / "q.json").write_text(json.dumps(quick))
    (tmp_path / "f.json").write_text(json.dumps(full))
    assert cli.main(["compare", str(tmp_path / "f.json"), str(tmp_path / "q.json")]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "the baseline holds the full profile's sizes, the results the quick profile's" in err
    assert "profile's baseline" not in err
    # where the baseline of the results' sizes lies beside the one given, the error names it
    beside = tmp_path / f"{quick['machine_info']['perfkit']['hardware_id']}-quick.json"
    beside.write_text(json.dumps(quick))
    assert cli.main(["compare", str(tmp_path / "f.json"), str(tmp_path / "q.json")]) == cli.EXIT_USAGE
    hardware_id = quick["machine_info"]["perfkit"]["hardware_id"]
    assert (f"compare runs of the same profile (the quick profile's baseline of {hardware_id} is {beside})"
            in capsys.readouterr().err)
    # never the results file itself
    assert cli.main(["compare", str(tmp_path / "f.json"), str(beside)]) == cli.EXIT_USAGE
    assert "profile's baseline" not in capsys.readouterr().err


def test_only_a_negative_number_is_taken_as_an_options_value(capsys):
    results = str(DATA / "cpu-quick.json")
    with pytest.raises(SystemExit):
        cli.main(
            ["compare", results, results, "--threshold", "--fail"]
        )  # argparse's own error: no value given
    assert "expected one argument" in capsys.readouterr().err
    assert cli._values_may_start_with_minus(["--batch", "-1", "--threshold", "-.5"]) == [
        "--batch=-1",
        "--threshold=-.5",
    ]


def test_stored_ceilings_come_from_a_quick_baseline_when_no_full_one_exists(tmp_path):
    from perfkit.measure import hardware
    from perfkit.store import baselines as store_module

    hardware_id = hardware.fingerprint("cpu").hardware_id
    stored = json.loads((DATA / "cpu-quick.json").read_text())
    stored["machine_info"]["perfkit"]["hardware_id"] = hardware_id
    stored["benchmarks"] = [b for b in stored["benchmarks"] if "test_ceilings" not in b["fullname"]]
    stored["machine_info"]["perfkit"]["ceilings"] = {"copy_bandwidth_gbps": 12.5}  # what its run stored
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / f"{hardware_id}-quick.json").write_text(json.dumps(stored))
    store = store_module.BaselineStore(tmp_path / "baselines")
    assert store.stored_path(hardware_id).name == f"{hardware_id}-quick.json"
    assert store.ceilings(hardware_id).own() == {"copy_bandwidth_gbps": 12.5}


def test_baseline_drop_retires_a_renamed_id_with_its_runs_and_keeps_the_rest(files, capsys):
    base = files[0]
    before = json.loads(base.read_text())
    assert cli.main(["baseline", "drop", str(base), MATMUL]) == 0
    assert f"dropped 1 benchmark(s) from {base}" in capsys.readouterr().out
    after = json.loads(base.read_text())
    names = [b["fullname"] for b in after["benchmarks"]]
    assert MATMUL not in names and len(names) == len(before["benchmarks"]) - 1
    info = after["machine_info"]["perfkit"]
    assert MATMUL not in info["runs"] and MATMUL not in info["noise"]
    assert set(info["runs"]) == set(names)


def test_baseline_drop_takes_wildcards_keeps_brackets_literal_and_refuses_what_matches_nothing(files, capsys):
    base = files[0]
    untouched = base.read_text()
    assert cli.main(["baseline", "drop", str(base), "benches/test_ceilings.py::test_matmul_flops[fp33]"]) \
        == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "no benchmark of the baseline is named" in err and "Traceback" not in err
    assert base.read_text() == untouched
    names = [b["fullname"] for b in json.loads(untouched)["benchmarks"]]
    assert (
        cli.main(["baseline", "drop", str(base), "*::test_matmul_flops[fp32]"]) == 0
    )  # not a character class
    assert [b["fullname"] for b in json.loads(base.read_text())["benchmarks"]] == [
        n for n in names if n != MATMUL
    ]


def _run_of(raw: dict, hardware_id: str, when: str, machine: str) -> dict:
    """``raw`` as a run of ``hardware_id`` on ``machine`` at ``when``."""
    out = json.loads(json.dumps(raw))
    out["datetime"] = when
    out["machine_info"]["perfkit"]["hardware_id"] = hardware_id
    out["machine_info"]["perfkit"]["fingerprint"]["machine"] = machine
    return out


def test_baseline_list_says_what_each_holds_marks_this_machines_and_why_one_cannot_be_read(
    tmp_path, cpu_results, capsys
):
    from perfkit.measure import hardware

    here, folder = hardware.hardware_id_here("auto"), tmp_path / "b"
    runs = [(here, "2030-01-01", "m1"), (here, "2030-01-03", "m2"), (here, "2030-01-02", "m1"),
            ("cpu-other-4cpu", "2030-01-01", "m3")]
    for i, (hardware_id, day, machine) in enumerate(runs):
        (tmp_path / f"r{i}.json").write_text(json.dumps(_run_of(cpu_results, hardware_id, f"{day}T02:00:00",
                                                                machine)))
    mine = [str(tmp_path / f"r{i}.json") for i in (0, 1, 2)]
    assert cli.main(["baseline", "save", "--dir", str(folder), *mine]) == 0
    assert cli.main(["baseline", "save", "--dir", str(folder), str(tmp_path / "r3.json")]) == 0
    (folder / "broken.json").write_text('{"benchmarks": [')
    (folder / "odd.json").write_text('{"benchmarks": [], "machine_info": "edited"}')
    (folder / "plain.json").write_text((tmp_path / "r0.json").read_text())
    capsys.readouterr()
    assert cli.main(["baseline", "list", "--dir", str(folder)]) == 0
    out, err = capsys.readouterr()
    head, *rows = out.splitlines()
    assert head == f"perfkit: 5 baselines in {folder} (this machine: {here})" and err == ""
    count = len(cpu_results["benchmarks"])
    one_run = (f"{count} benchmarks, 1 run from 1 machine, newest run 2030-01-01; {count} with fewer than 3 "
               "runs, not judged")
    said = {row.split()[0]: " ".join(row.split()[1:]) for row in rows}
    assert said == {
        "broken": "unreadable: not valid JSON (Expecting value line 1, column 17: cut short); re-run the "
                  "benchmarks that wrote it, or, where it is a committed baseline, restore it from git",
        "odd": "unreadable: has no perfkit section in machine_info; it was not written by a perfkit run",
        "plain": one_run,
        "cpu-other-4cpu-quick": one_run,
        f"{here}-quick": f"{count} benchmarks, 3 runs from 2 machines, newest run 2030-01-03 <- this machine"}
    assert cli.main(["baseline", "list", "--dir", str(tmp_path / "typo")]) == cli.EXIT_USAGE
    assert "typo: no such folder" in capsys.readouterr().err


def test_baseline_list_of_no_baselines_says_where_it_looked_and_how_to_save_one(tmp_path, monkeypatch,
                                                                                capsys):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["baseline", "list"]) == 0
    out = capsys.readouterr().out
    assert f"no baselines in {tmp_path.resolve() / 'baselines'}; save one" in out
    assert "`perfkit baseline save RUN.json`" in out
    assert cli.main(["baseline", "list", "--local"]) == 0
    out = capsys.readouterr().out
    assert f"no baselines in {tmp_path.resolve() / '.perfkit' / 'baselines'}" in out
    assert "`perfkit baseline save --local RUN.json`" in out


def test_baseline_drop_refuses_to_empty_a_baseline_or_rewrite_a_partial_file(files, tmp_path, capsys):
    base = files[0]
    assert cli.main(["baseline", "drop", str(base), "*"]) == cli.EXIT_USAGE
    assert "delete the file instead" in capsys.readouterr().err
    cut_short = tmp_path / "results.json.partial"
    cut_short.write_text("")
    assert cli.main(["baseline", "drop", str(cut_short), MATMUL]) == cli.EXIT_USAGE
    assert "holds a run cut short" in capsys.readouterr().err and cut_short.read_text() == ""


def test_baseline_save_only_re_saves_one_benchmark_and_keeps_every_other_entry(files, tmp_path, capsys):
    base, same, slow = files
    folder = tmp_path / "baselines"
    assert cli.main(["baseline", "save", "--dir", str(folder), str(base)]) == 0
    saved = next(folder.glob("*.json"))
    before = {b["fullname"]: b["stats"]["median"] for b in json.loads(saved.read_text())["benchmarks"]}
    only = ["--only", "*::test_matmul_flops[fp32]", "--"]
    assert cli.main(["baseline", "save", "--dir", str(folder), "--merge", *only, str(slow), str(slow)]) == 0
    after = {b["fullname"]: b["stats"]["median"] for b in json.loads(saved.read_text())["benchmarks"]}
    assert after.keys() == before.keys()
    assert after[MATMUL] == pytest.approx(before[MATMUL] * 1.3, rel=0.05)  # the slowed run replaced it
    assert all(after[n] == before[n] for n in before if n != MATMUL)  # the rest kept as they were
    capsys.readouterr()
    assert cli.main(["baseline", "save", "--dir", str(folder), "--merge", "--only", "*::test_nothing",
                     "--", str(same)]) == cli.EXIT_USAGE
    assert "no benchmark of" in capsys.readouterr().err
    assert cli.main(["baseline", "save", "--dir", str(folder), "--force", *only, str(same)]) == cli.EXIT_USAGE
    assert "use it with --merge" in capsys.readouterr().err  # --force would keep the selection alone


def _time_runs(saved) -> dict[str, int]:
    """How many runs of its time each benchmark of the baseline file ``saved`` holds."""
    runs = json.loads(saved.read_text())["machine_info"]["perfkit"]["runs"]
    return {name: len(figures["time"]) for name, figures in runs.items()}


def test_baseline_save_append_adds_one_benchmarks_runs_and_refuses_them_twice(files, tmp_path, capsys):
    base, _, slow = files
    later = json.loads(slow.read_text()) | {"datetime": "2026-11-30T00:00:00+00:00"}  # a run of another night
    (tmp_path / "later.json").write_text(json.dumps(later))
    folder = tmp_path / "baselines"
    assert cli.main(["baseline", "save", "--dir", str(folder), str(base)]) == 0
    saved = next(folder.glob("*.json"))

    before = _time_runs(saved)
    appended = ["baseline", "save", "--dir", str(folder), "--append", "--only", MATMUL, "--",
                str(tmp_path / "later.json")]
    capsys.readouterr()
    assert cli.main(appended) == 0
    assert _time_runs(saved) == before | {MATMUL: before[MATMUL] + 1}  # beside the kept ones
    held = before[MATMUL] + 1
    assert f"perfkit: saved {saved} (1 run appended: 1 benchmark, now {held} runs)" in capsys.readouterr().out
    assert cli.main(appended) == cli.EXIT_USAGE
    assert "already holds the run of" in capsys.readouterr().err

    night = later | {"datetime": "2026-12-01T00:00:00+00:00"}  # every benchmark of one more night
    (tmp_path / "night.json").write_text(json.dumps(night))
    others = next(n for n in before if n != MATMUL)
    assert cli.main(["baseline", "save", "--dir", str(folder), "--append", str(tmp_path / "night.json")]) == 0
    span = f"{before[others] + 1}-{held + 1}"  # what the benchmarks appended to hold, not the best-kept one
    assert f"(1 run appended: {len(before)} benchmarks, now {span} runs each)" in capsys.readouterr().out


def test_baseline_save_append_warns_of_a_run_the_judge_flags_against_the_baseline_it_joins(
        files, tmp_path, capsys, monkeypatch):
    """A disturbed or other code's run appended silently widens every later verdict's noise: the appended run
    that reads regressed against the baseline is named (and still saved); a run of the same code is not."""
    base, same, slow = files
    folder = tmp_path / "baselines"
    assert cli.main(["baseline", "save", "--dir", str(folder), str(base)]) == 0
    clean, slower = tmp_path / "clean.json", tmp_path / "slower.json"
    clean.write_text(json.dumps(json.loads(same.read_text()) | {"datetime": "2026-11-30T00:00:00+00:00"}))
    slower.write_text(json.dumps(json.loads(slow.read_text()) | {"datetime": "2026-12-01T00:00:00+00:00"}))
    capsys.readouterr()
    assert cli.main(["baseline", "save", "--dir", str(folder), "--append", str(clean)]) == 0
    assert "against the baseline it joined" not in capsys.readouterr().err
    assert cli.main(["baseline", "save", "--dir", str(folder), "--append", str(slower)]) == 0
    err = capsys.readouterr().err
    assert "slower.json reads 1 figure(s) regressed or improved" in err and MATMUL in err
    assert "regressed +30" in err and "git checkout" in err
    runs = json.loads(next(folder.glob("*.json")).read_text())["machine_info"]["perfkit"]["runs"]
    assert len(runs[MATMUL]["time"]) == 5  # warned, not refused: three, the clean run and the slower one
    # a machine's own baseline is no file git keeps: the way back is a clean re-save
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["baseline", "save", "--local", str(base)]) == 0
    assert cli.main(["baseline", "save", "--local", "--append", str(slower)]) == 0
    err = capsys.readouterr().err
    assert "re-save it from clean runs" in err and "git checkout" not in err


def test_version_and_help_say_what_is_installed_and_what_each_option_is(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    said = capsys.readouterr().out.strip()
    assert done.value.code == 0 and said.startswith(f"perfkit {metadata.version('perfkit')}")
    if (ROOT / ".git").exists():  # run from a checkout: which code ran
        head = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
        assert f" (commit {head}" in said
    with pytest.raises(SystemExit):
        cli.main(["hw", "--help"])
    assert "the device to describe" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["compare", "--help"])
    assert "the run to judge" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    top = capsys.readouterr().out
    assert "``" not in top  # reST markup is for the docs, not a terminal
    # the description (after the usage, before the arguments) names every subcommand argparse lists
    listed = top.split("\n\n")[1]
    assert all(name in listed for name in re.search(r"\{(.*?)\}", top).group(1).split(",")), listed
    with pytest.raises(SystemExit):
        cli.main(["baseline", "--help"])
    assert "one line per baseline" in capsys.readouterr().out


def _commands(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every (sub)command's parser under ``parser``, itself included."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return [parser, *(c for sub in subs for p in dict.fromkeys(sub.choices.values()) for c in _commands(p))]


@pytest.mark.parametrize("argv, prog", [
    (["compare", "--bogus", "a.json", "b.json"], "perfkit compare"),
    (["baseline", "save", "--bogus", "r.json"], "perfkit baseline save"),
    (["hw", "--bogus"], "perfkit hw"),
    (["--bogus", "compare", "a.json", "b.json"], "perfkit"),  # given to perfkit itself
    (["baseline", "--bogus", "save", "r.json"], "perfkit baseline"),
])
def test_an_unknown_option_is_said_with_its_commands_usage_not_the_list_of_commands(argv, prog, capsys):
    with pytest.raises(SystemExit) as usage:
        cli.main(argv)
    err = capsys.readouterr().err
    assert usage.value.code == 2
    assert err.startswith(f"usage: {prog} ") and f"{prog}: error: unrecognized arguments: --bogus" in err


def test_every_argument_of_every_command_says_what_it_is():
    for command in _commands(cli._parser()):
        for action in command._actions:
            if not isinstance(action, argparse._SubParsersAction):
                assert action.help, f"{command.prog} {action.dest}"


def test_a_usage_written_by_hand_names_each_value_as_its_option_list_does():
    (history,) = [c for c in _commands(cli._parser()) if c.prog == "perfkit history"]
    usage, listed = history.format_usage(), history.format_help().split("options:")[1]
    for option, value in re.findall(r"\[(--?[a-z-]+) ([A-Z]+)\]", usage):
        assert f"{option} {value}" in listed, (option, value)
    assert "--hardware-id ID" in usage


def test_the_version_names_the_checkouts_commit_and_whether_it_was_changed(tmp_path):
    from tests.gitrepo import commit, make_repo

    repo = make_repo(tmp_path / "repo")
    head = commit(repo, 1, "one")
    assert cli._checkout_commit(repo) == f"commit {head[:10]}"
    (repo / "benches" / "test_loop.py").write_text("# edited\n")
    assert cli._checkout_commit(repo) == f"commit {head[:10]}, with uncommitted changes"
    assert cli._checkout_commit(repo / "benches") == ""  # not a checkout's top folder: an installed copy


def _newer_schema(tmp_path) -> str:
    from perfkit.store import database

    url = f"sqlite:///{tmp_path / 'newer.db'}"
    with database.open_store(url, create=True) as db, db.engine.begin() as conn:
        conn.execute(database.schema_table.update().values(version=database.SCHEMA_VERSION + 1))
    return url


@pytest.mark.parametrize("db", ["garbage", "postgresql://nobody@127.0.0.1:1/x", "sqlite:///{tmp}/typo.db",
                                "newer"])
def test_a_database_report_cannot_read_is_the_error_compare_gives(files, tmp_path, capsys, db):
    """Once "report without history", exit 0: a history asked for and not read is bad input, as for
    compare, history and dashboard."""
    base = str(files[0])
    url = _newer_schema(tmp_path) if db == "newer" else db.format(tmp=tmp_path)
    assert cli.main(["compare", base, base, "--db", url]) == 2
    said = capsys.readouterr().err
    assert cli.main(["report", base, "--db", url, "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr() == ("", said) and said.count("\n") == 1 and said.startswith("perfkit: error: ")
    assert not (tmp_path / "r").exists()


def _cpu_run(signature: str, copy_gbps: float, busy: float = 0.0) -> dict:
    """One run of this machine's hardware id (the committed CPU baseline's entries) on a CPU of ``signature``
    whose copy ceiling read ``copy_gbps``; ``busy``: the CPUs others kept busy meanwhile (of 2)."""
    from perfkit.measure import hardware

    run = json.loads((ROOT / "baselines" / "cpu-amd-epyc-2cpu-quick.json").read_text())
    info = run["machine_info"]["perfkit"]
    for key in ("runs", "noise", "run_dates", "run_origins", "run_machines"):
        info.pop(key, None)
    info["hardware_id"] = info["fingerprint"]["hardware_id"] = hardware.fingerprint("cpu").hardware_id
    info["fingerprint"]["cpu_signature"] = signature
    for bench in run["benchmarks"]:
        bench["extra_info"]["host_load"] = {"other_cpus": busy, "cpus": 2, "version": 1}
        copy = bench["extra_info"].get("metrics", {}).get("copy_bandwidth_gbps")
        if copy:
            copy["value"] = copy_gbps
    return run


def test_hw_labels_the_stored_ceilings_by_whose_they_are(tmp_path, monkeypatch, capsys):
    from perfkit.measure import hardware

    here = hardware.fingerprint("cpu")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "baselines").mkdir()
    monkeypatch.chdir(tmp_path)
    other = "family 1 model 1" if here.cpu_signature != "family 1 model 1" else "family 2 model 2"
    assert cli.main(["hw", "--device", "cpu"]) == 0  # none yet: the command that measures and keeps them
    assert (f"Measured ceilings: none stored (no baseline of {here.hardware_id} in {tmp_path / 'baselines'}, "
            "nor this machine's own); measure them with this machine's own baseline: "
            "`pytest benches/ --perfkit-save-baseline=local`") in capsys.readouterr().out
    assert cli.main(["hw", "--json", "--device", "cpu"]) == 0  # no file named that does not exist
    payload = json.loads(capsys.readouterr().out)
    assert payload["stored_ceilings_from"] is None and payload["stored_ceilings"] == {}
    assert payload["stored_ceilings_of"] == "no one: no baseline of this hardware is stored"
    committed = tmp_path / "baselines" / f"{here.hardware_id}-quick.json"
    committed.write_text(json.dumps(_cpu_run(other, 39.0)))

    assert cli.main(["hw", "--device", "cpu"]) == 0
    said = capsys.readouterr().out
    assert (f"Measured ceilings of ANOTHER machine under this hardware id (cpu_signature {other} -> "
            f"{here.cpu_signature}), not this one (from {committed})") in said
    assert "This machine's own: run the benchmarks with --perfkit-save-baseline=local" in said

    own = tmp_path / "mine.json"
    own.write_text(json.dumps(_cpu_run(here.cpu_signature, 3.6)))
    assert cli.main(["baseline", "save", str(own), "--local"]) == 0
    capsys.readouterr()
    assert cli.main(["hw", "--json", "--device", "cpu"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["stored_ceilings_of"] == "this machine (its own baseline)"
    assert payload["stored_ceilings_from"] == str(tmp_path / ".perfkit" / "baselines" / committed.name)
    assert payload["stored_ceilings"]["copy_bandwidth_gbps"] == 3.6

    (tmp_path / ".perfkit" / "baselines" / committed.name).unlink()
    committed.write_text(json.dumps(_cpu_run(here.cpu_signature, 39.0)))  # the committed one is of this CPU
    assert cli.main(["hw", "--device", "cpu"]) == 0
    assert f"Measured ceilings of this hardware (the committed baseline) (from {committed})" in (
        capsys.readouterr().out)

    bare = _cpu_run(here.cpu_signature, 39.0)  # a baseline saved without the ceilings' benchmarks
    bare["benchmarks"] = [b for b in bare["benchmarks"] if "test_ceilings" not in b["fullname"]]
    bare["machine_info"]["perfkit"]["ceilings"] = {}
    committed.write_text(json.dumps(bare))
    assert cli.main(["hw", "--device", "cpu"]) == 0
    said = (f"Measured ceilings: none stored ({committed} holds none); add them to it: `pytest "
            "benches/test_ceilings.py --benchmark-json=ceilings.json && perfkit baseline save ceilings.json "
            "--merge`")
    assert said in capsys.readouterr().out


def test_baseline_save_of_a_busy_run_warns_in_one_sentence_and_saves_it(tmp_path, monkeypatch, capsys):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    monkeypatch.chdir(tmp_path)
    busy, quiet = tmp_path / "busy.json", tmp_path / "quiet.json"
    busy.write_text(json.dumps(_cpu_run("family 26 model 2", 3.6, busy=1.6)))
    quiet.write_text(json.dumps(_cpu_run("family 26 model 2", 3.6, busy=0.1)))
    assert cli.main(["baseline", "save", str(busy)]) == 0
    out, err = capsys.readouterr()
    (saved,) = (tmp_path / "baselines").glob("*.json")
    assert f"perfkit: saved {saved} (1 run)" in out
    assert err == (
        f"perfkit: warning: {busy}: 40 of its 40 benchmarks ran while other processes kept up to 1.6 of 2 "
        "CPUs busy, so the baseline holds that load and quiet runs will read faster; for a quiet one, re-run "
        "with nothing else running (the load in `uptime` near 0) and save that run instead\n")
    assert cli.main(["baseline", "save", str(quiet), "--force"]) == 0
    assert capsys.readouterr().err == ""


def test_baseline_save_of_one_run_says_what_it_lacks_and_of_a_baseline_counts_its_runs(tmp_path, capsys):
    """A newcomer saved one run and only learnt at the next compare that 34 benchmarks were not judged."""
    run = tmp_path / "results.json"
    run.write_text(json.dumps(_cpu_run("family 26 model 2", 3.6)))
    assert cli.main(["baseline", "save", str(run), "--dir", str(tmp_path / "one")]) == 0
    out = capsys.readouterr().out
    benchmarks = len(json.loads(run.read_text())["benchmarks"])
    assert (f"(1 run)\nperfkit: {benchmarks} of the {benchmarks} benchmarks saved hold fewer than 3 runs: "
            "not judged until they do; add runs with "
            f"`perfkit baseline save RUN.json --dir {tmp_path / 'one'} --append`\n") in out
    # one benchmark merged: said of it, and --only kept in the command that adds its runs
    assert cli.main(["baseline", "save", str(run), "--dir", str(tmp_path / "one"), "--merge", "--only",
                     MATMUL]) == 0
    assert ("perfkit: the benchmark saved holds fewer than 3 runs: not judged until it does; add runs with "
            f"`perfkit baseline save RUN.json --dir {tmp_path / 'one'} --only '{MATMUL}' --append`"
            ) in capsys.readouterr().out
    # a baseline re-saved says the runs its benchmarks hold, not its dates (the H200's 218), and which of
    # them are too few to judge (the H100 x4's four one-run benchmarks read "4 runs" and no hint)
    for name in ("cpu-amd-epyc-2cpu-quick", "nvidia-h100-80gb-hbm3-x4"):
        committed = ROOT / "baselines" / f"{name}.json"
        held = sorted(len(origins) or 1 for origins in load.load(committed).origins().values())
        assert cli.main(["baseline", "save", str(committed), "--dir", str(tmp_path / name)]) == 0
        out = capsys.readouterr().out
        assert f"({held[0]}-{held[-1]} runs each)" in out
        thin = sum(n < 3 for n in held)
        said = f"perfkit: {thin} of the {len(held)} benchmarks saved hold fewer than 3 runs"
        assert (said in out) == bool(thin)
    assert thin  # the H100 x4's one-run entries


def test_baseline_save_local_writes_this_machines_own_and_says_what_one_run_lacks(tmp_path, monkeypatch,
                                                                                   capsys):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "results.json"
    run.write_text(json.dumps(_cpu_run("family 26 model 2", 3.6)))
    assert cli.main(["baseline", "save", str(run), "--local"]) == 0
    out = capsys.readouterr().out
    (saved,) = (tmp_path / ".perfkit" / "baselines").glob("*.json")
    assert f"perfkit: saved {saved} (1 run)" in out and "hold fewer than 3 runs: not judged" in out
    assert "`perfkit baseline save RUN.json --local --append`, or save with `pytest benches/" in out
    assert not (tmp_path / "baselines").exists() and (tmp_path / ".perfkit" / ".gitignore").exists()
    with pytest.raises(SystemExit) as usage:  # one folder or the other
        cli.main(["baseline", "save", str(run), "--local", "--dir", str(tmp_path / "b")])
    assert usage.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_a_missing_package_is_a_sentence_naming_what_to_install(tmp_path):
    """A GPU image that puts perfkit on PYTHONPATH without its dependencies had no SQLAlchemy: `perfkit fleet`
    ended its night in a traceback at the history database (two H200s, 2026-11-28) instead of saying it and
    judging the replicates."""
    code = ("import sys; sys.modules['sqlalchemy'] = None; from perfkit.cli import main; "
            f"sys.exit(main(['history', 'ingest', {str(DATA / 'cpu-quick-families.json')!r}, "
            f"'--db', 'sqlite:///{tmp_path / 'h.db'}']))")
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == cli.EXIT_USAGE, done.stderr
    assert "Traceback" not in done.stderr
    assert ("needs the Python package 'sqlalchemy', which is not installed here: pip install sqlalchemy"
            in done.stderr)


def test_a_missing_module_that_is_no_dependency_is_a_bug_with_its_traceback(monkeypatch, tmp_path):
    """Only perfkit's own dependencies are said as "pip install": a misspelt import in perfkit is a bug."""
    from perfkit.cli import history

    def broken(args):
        raise ModuleNotFoundError("No module named 'sqlalchemyy'", name="sqlalchemyy")

    monkeypatch.setattr(history, "_ingest", broken)
    with pytest.raises(ModuleNotFoundError, match="sqlalchemyy"):
        cli.main(["history", "ingest", str(DATA / "cpu-quick-families.json"), "--db",
                  f"sqlite:///{tmp_path / 'h.db'}"])


def test_baseline_save_append_leaves_out_a_benchmark_whose_rounds_did_not_settle(files, tmp_path, capsys):
    """A run the judge reads as disturbed (its rounds spread far more than the baseline's) is not a value of
    the code: appended, it would widen every later verdict's noise. It is named and left out; the run's other
    benchmarks are appended."""
    base, same, _ = files
    folder = tmp_path / "baselines"
    assert cli.main(["baseline", "save", "--dir", str(folder), str(base)]) == 0
    saved = next(folder.glob("*.json"))

    before = _time_runs(saved)
    disturbed = json.loads(same.read_text()) | {"datetime": "2026-11-30T00:00:00+00:00"}
    bench = next(b for b in disturbed["benchmarks"] if b["fullname"] == MATMUL)
    median = bench["stats"]["median"]
    bench["stats"]["data"] = [median * f for f in (0.8, 1.0, 1.2, 1.4) * 5]
    path = tmp_path / "disturbed.json"
    path.write_text(json.dumps(disturbed))
    capsys.readouterr()
    assert cli.main(["baseline", "save", "--dir", str(folder), "--append", str(path)]) == 0
    err = capsys.readouterr().err
    assert "left out 1 benchmark(s) of" in err and f"{MATMUL}: its time rounds spread" in err
    after = _time_runs(saved)
    assert after[MATMUL] == before[MATMUL]
    assert all(after[n] == before[n] + 1 for n in before if n != MATMUL)
    later = tmp_path / "later.json"
    later.write_text(json.dumps(disturbed | {"datetime": "2026-12-01T00:00:00+00:00"}))
    kept = saved.read_bytes()
    assert cli.main(["baseline", "save", "--dir", str(folder), "--append", "--only", MATMUL, "--",
                     str(later)]) == 0
    assert "nothing appended to" in capsys.readouterr().out and saved.read_bytes() == kept


def test_compare_says_when_its_two_files_look_given_the_wrong_way_round(tmp_path, capsys):
    """A newcomer's ``perfkit compare results.json baselines/X.json`` read "the current run 1.22x faster"
    with no hint that the saved baseline stood as the current side; now stderr says the order."""
    run = tmp_path / "results.json"
    run.write_text((DATA / "cpu-quick.json").read_text())
    baseline = ROOT / "baselines" / "cpu-amd-epyc-2cpu-quick.json"
    cli.main(["compare", str(run), str(baseline)])
    assert (f"perfkit: {baseline} holds several runs, as a saved baseline does, and {run} one: the order is "
            "BASELINE then CURRENT; judged as given") in capsys.readouterr().err
    cli.main(["compare", str(baseline), str(run)])
    assert "the order is" not in capsys.readouterr().err
