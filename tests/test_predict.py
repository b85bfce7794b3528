"""``perfkit predict --device``: a benchmark family on a device never measured (a datasheet key) or measured
(a result file: the model checked), from the stored entries of tests/data/baselines/across-*.json (see
tests/test_across.py); bad input is one sentence and exit 2."""
from __future__ import annotations

import json

import pytest

from perfkit import cli
from perfkit.resultfile import datasheet, load
from perfkit.verdict.expected import Roofs
from tests.conftest import DATA, ROOT

H200, H100 = str(DATA / "baselines" / "across-h200.json"), str(DATA / "baselines" / "across-h100.json")
FROM = ["--from", H200, "--from", H100]
PPP_B64 = "benches/test_ppp.py::test_layerwise_ppp[b64-vgg16]"


def _json(capsys, *args: str) -> list[dict]:
    assert cli.main(["predict", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_familys_times_on_a_datasheet_device_are_the_measured_times_over_the_expected_speedup(capsys):
    found = {p["benchmark"]: p for p in _json(capsys, "--device", "b200", "--family", "test_ppp", *FROM)}
    assert {p["benchmark"] for p in _json(capsys, "--device", "b200", "--family", "ppp", *FROM)} == set(found)
    assert set(found) == {"benches/test_ppp.py::test_layerwise_ppp[b1-vgg16]", PPP_B64}
    b64 = found[PPP_B64]
    measured = load.load(H200).runs()[PPP_B64]["time"]
    assert b64["reference_s"] == pytest.approx(sum(measured) / len(measured))  # at hand, holding the most
    assert b64["predicted_s"] == pytest.approx(b64["reference_s"] / b64["expectation"]["expected"])
    # a B200 has 1.7 times an H200's bandwidth by datasheet and 2.3 times its TF32 rate, each reached at the
    # share of its datasheet the H200 measured: the model's ratio lies between what its bytes and its FLOPs
    # alone would give
    sheet, b200 = datasheet.by_key("h200"), datasheet.by_key("b200")
    assert sheet is not None and b200 is not None
    assert b200.bandwidth_gbps / sheet.bandwidth_gbps < b64["expectation"]["expected"] < (
        b200.tflops["tf32"] / sheet.tflops["tf32"])


def test_the_prediction_states_where_it_starts_its_borrowed_launch_costs_and_the_models_error(capsys):
    assert cli.main(["predict", "--device", "a100-80gb", "--family", "test_ppp", *FROM]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Predicted on a100-80gb (NVIDIA A100 80GB SXM) from nvidia-h200-x1: 2 of 2 GPU")
    assert "launch costs measured on nvidia-h200-x1 (a datasheet lists none)" in out
    assert ("The model's error measured from nvidia-h200-x1 to nvidia-h100-80gb-hbm3-x1: 2 of 2 "
            "benchmarks carry an expected speedup") in out
    assert "error to nvidia-h100-80gb-hbm3-x1" in out and "model: compute" in out


def test_a_measured_device_checks_the_model_speedup_and_absolute_time(capsys):
    rows = {r["benchmark"]: r for r in _json(capsys, "--device", H100, "--from", H200)}
    b64 = rows[PPP_B64]
    assert b64["verdict"] == "as expected" and b64["ratio"] == pytest.approx(b64["speedup"] / b64["expected"])
    assert all(error > 1 for error in b64["errors"])  # each device slower than its roofs: a lower bound
    assert rows["benches/test_layers.py::test_layer[maxpool-forward]"]["verdict"] == "as expected"
    assert cli.main(["predict", "--device", H100, "--from", H200, "--family", "test_layers"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("The model from nvidia-h200-x1 to nvidia-h100-80gb-hbm3-x1 (measured): 2 of 2 "
                          "benchmarks")


def _without_ceilings(tmp_path) -> str:
    raw = load.read_json(H200)
    raw["benchmarks"] = [b for b in raw["benchmarks"] if "test_ceilings" not in b["fullname"]]
    raw["machine_info"]["perfkit"]["ceilings"] = {}
    raw["machine_info"]["perfkit"]["fingerprint"]["datasheet_key"] = ""
    raw["machine_info"]["perfkit"].pop("runs", None)
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(raw))
    return str(path)


@pytest.mark.parametrize("args, said", [
    (["--device", "x900", *FROM], "unknown device 'x900': give a datasheet key (k80, "),
    (["--device", "b200", "--family", "test_no", *FROM],
     "no benchmark of the family 'test_no' in the results at hand ("),
    (["--device", "b200", "--from", "{bare}"], "holds no ceilings and its GPU is not in the datasheet"),
    (["vgg16", "--device", "b200"], "--device predicts a benchmark family; MODEL and --gpu predict one"),
    (["vgg16"], "give MODEL and --gpu KEY"),
    (["vgg16", "--gpu", "k80", "--family", "test_ppp"], "--family, --from and --held-out choose what"),
    (["--device", H100, "--held-out", H100, *FROM], "--held-out checks a prediction from a datasheet"),
    (["--device", "h100-sxm", "--held-out", H100, "--from", H100], "no results of another machine"),
    # a CPU run was told to run the ceilings there, and then that its profile differed
    (["--device", str(DATA / "cpu-quick.json"), "--family", "test_vector_add"],
     "cpu-quick.json ran on the CPU: predict models GPU benchmarks"),
    (["--device", str(ROOT / "baselines" / "nvidia-h200-x1-quick.json"), *FROM],
     "no results of the quick profile at hand to predict from"),
])
def test_bad_requests_are_one_sentence_and_exit_2(args, said, tmp_path, capsys):
    args = [a.replace("{bare}", _without_ceilings(tmp_path)) if a == "{bare}" else a for a in args]
    assert cli.main(["predict", *args]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_device_never_measured_reaches_the_share_of_its_datasheet_the_reference_reached():
    """Sustained rates, not peaks: each datasheet ceiling at the share of its own datasheet figure the device
    at hand measured (PALEO's platform percent of peak, carried over); one it did not measure stays the
    datasheet's."""
    h200 = Roofs.of(load.load(H200))
    sheet, h100 = datasheet.by_key("h200"), datasheet.by_key("h100-sxm")
    assert sheet is not None and h100 is not None and "copy_bandwidth_gbps" in h200.measured
    roofs = Roofs.of_datasheet(h100, h200)
    reached = h200.ceiling("copy_bandwidth_gbps") / sheet.bandwidth_gbps
    assert 0.5 < reached < 1.0
    assert roofs.ceiling("copy_bandwidth_gbps") == pytest.approx(h100.bandwidth_gbps * reached)
    unmeasured = Roofs.of_datasheet(h100, Roofs("h", {}, {}))
    assert unmeasured.ceiling("copy_bandwidth_gbps") == h100.bandwidth_gbps
    assert "each at the share of its datasheet nvidia-h200-x1 reached" in roofs.notes[0]


def test_held_out_the_measured_device_is_predicted_from_its_datasheet_alone(capsys, monkeypatch):
    """Leave one out: nothing of the H100's own run reaches its expectations (its roofs are never read), and
    the summary counts the rows as the table gives them."""
    read = []
    of = Roofs.of

    def roofs_of(results):
        read.append(results.hardware_id)
        return of(results)

    monkeypatch.setattr(Roofs, "of", staticmethod(roofs_of))
    held = _json(capsys, "--device", "h100-sxm", "--from", H200, "--held-out", H100)
    assert read and set(read) == {"nvidia-h200-x1"}
    ratios = [r["ratio"] for r in held["rows"] if r["gpu"] and r["ratio"] is not None]
    near = sum(1 / 1.1 <= r <= 1.1 for r in ratios)
    assert ratios and held["summary"].startswith(f"{len(ratios)} of ")
    assert f"; {near} of them within x1.10" in held["summary"]
    monkeypatch.undo()
    measured = {r["benchmark"]: r for r in _json(capsys, "--device", H100, "--from", H200)}
    # the speedups measured as perfkit compare measures them (a ceiling's own benchmark: its runs' mean rate
    # here, the ceiling kept from them there)
    assert all(r["speedup"] == pytest.approx(measured[r["benchmark"]]["speedup"], rel=0.02)
               for r in held["rows"])


def test_a_prediction_expects_what_the_held_out_check_expects_of_the_same_reference(capsys):
    """One model: `predict --device` and its check leave-one-out read the same expectation, the reference's
    time beyond its roofs included."""
    held = {r["benchmark"]: r["expected"] for r in _json(capsys, "--device", "h100-sxm", "--from", H200,
                                                         "--held-out", H100)["rows"]}
    predicted = {p["benchmark"]: p["expectation"]["expected"]
                 for p in _json(capsys, "--device", "h100-sxm", "--from", H200)}
    both = [name for name in held if held[name] is not None and predicted.get(name) is not None]
    assert len(both) >= 10 and any("test_vector_add" in name for name in both)
    assert all(predicted[name] == pytest.approx(held[name], rel=1e-9) for name in both)


def test_held_out_refuses_a_datasheet_key_its_run_did_not_run_on(capsys):
    assert cli.main(["predict", "--device", "h200", "--from", H200, "--held-out", H100]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "ran on h100-sxm (NVIDIA H100 SXM), not h200: give --device h100-sxm" in err
