"""The fingerprint as one typed record: read from every file perfkit wrote, written back as it was read (older
files' missing fields and unknown keys alike), its software and hardware fields said on the fields."""
from __future__ import annotations

import copy
import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from perfkit import cli
from perfkit.errors import BaselineError
from perfkit.resultfile import load
from perfkit.resultfile.fingerprint import (
    CHANGE_FIELDS,
    DEVICES,
    HARDWARE_FIELDS,
    SOFTWARE_FIELDS,
    Fingerprint,
    device_kind,
)
from perfkit.verdict.judge import judge
from perfkit.verdict.noise import Noise
from tests.conftest import DATA, ROOT

FILES = sorted([*(ROOT / "baselines").glob("*.json"), *DATA.glob("**/*.json")])


def _fingerprint(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())["machine_info"]["perfkit"]["fingerprint"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_stored_fingerprint_is_written_back_key_for_key_in_its_order(path):
    raw = _fingerprint(path)
    read = load.load(path).info.fingerprint
    assert json.dumps(read.to_json()) == json.dumps(raw)
    assert read.hardware_id == raw["hardware_id"] and read.device in DEVICES


def test_an_older_files_missing_fields_read_none_and_stay_missing():
    path = ROOT / "tests" / "data" / "h200-x4-capacity.json"  # before the CPU signature, machine, SM clock
    read = load.load(path).info.fingerprint
    assert read.cpu_signature is read.machine is read.sm_clock is None
    assert not read.has("cpu_signature") and read.has("memory_cap_gib")
    assert "cpu_signature" not in read.to_json()
    given = dataclasses.replace(read, sm_clock="1980/1980 MHz")  # a value given since is recorded
    assert given.has("sm_clock") and list(given.to_json())[-1] == "sm_clock"


def test_a_key_the_record_does_not_know_is_kept_where_it_was():
    raw = {"hardware_id": "cpu-x-2cpu", "a_later_field": [1, "two"], "device": "cpu", "torch": "2.11"}
    read = Fingerprint.from_json(raw, "f.json")
    assert read.extra == {"a_later_field": [1, "two"]}
    assert json.dumps(read.to_json()) == json.dumps(raw)


def test_baseline_save_merge_keeps_a_committed_fingerprint_byte_for_byte(tmp_path, capsys):
    """A committed baseline merged with itself, and a run that carries a key perfkit does not know merged into
    it: the file's fingerprint is the run's, every key and its order kept."""
    committed = ROOT / "baselines" / "nvidia-h200-x4.json"
    folder = tmp_path / "b"
    folder.mkdir()
    shutil.copy(committed, folder / committed.name)
    assert cli.main(["baseline", "save", str(committed), "--dir", str(folder), "--merge"]) == 0
    assert json.dumps(_fingerprint(folder / committed.name)) == json.dumps(_fingerprint(committed))
    run = json.loads((DATA / "h200-x4-large-batch.json").read_text())
    run["machine_info"]["perfkit"]["fingerprint"]["a_later_field"] = {"kept": True}
    (tmp_path / "run.json").write_text(json.dumps(run))
    assert cli.main(["baseline", "save", str(tmp_path / "run.json"), "--dir", str(folder), "--merge"]) == 0
    saved = _fingerprint(folder / committed.name)
    assert json.dumps(saved) == json.dumps(run["machine_info"]["perfkit"]["fingerprint"])


@pytest.mark.parametrize(("field", "value", "wanted"), [
    ("gpu_count", "1", "a whole number"), ("gpu_count", True, "a whole number"),
    ("gpu_memory_gib", "80", "a number"), ("torch", 2.11, "a string"), ("device", "mps", "'cuda' or 'cpu'"),
])
def test_a_field_of_the_wrong_type_is_a_damaged_file(cpu_results, field, value, wanted):
    raw = copy.deepcopy(cpu_results)
    raw["machine_info"]["perfkit"]["fingerprint"][field] = value
    said = f"fingerprint's {field} is .*, not {wanted}; the file is damaged"
    with pytest.raises(BaselineError, match=said):
        load.parse(raw, "run.json")


def test_a_number_of_gib_without_its_fraction_is_kept_as_written():
    read = Fingerprint.from_json({"gpu_memory_gib": 80, "memory_cap_gib": None}, "f.json")
    assert json.dumps(read.to_json()) == '{"gpu_memory_gib": 80, "memory_cap_gib": null}'


@pytest.mark.parametrize(("key", "value"), [("device", "mps"), ("profile", "medium")])
def test_a_device_or_profile_perfkit_never_writes_is_a_damaged_file(cpu_results, key, value):
    raw = copy.deepcopy(cpu_results)
    raw["machine_info"]["perfkit"][key] = value
    said = f"run.json: the {key} '{value}' is neither .*; the file is damaged"
    with pytest.raises(BaselineError, match=said):
        load.parse(raw, "run.json")


def test_a_file_that_does_not_say_its_device_reads_none_and_writes_it_back_empty(cpu_results):
    raw = copy.deepcopy(cpu_results)
    del raw["machine_info"]["perfkit"]["device"]
    results = load.parse(raw, "run.json")
    assert results.info.device is None and results.info.to_json()["device"] == ""
    assert device_kind("cpu") == "cpu"
    with pytest.raises(ValueError):
        device_kind("")


def test_the_software_and_hardware_fields_are_the_records_own():
    assert set(SOFTWARE_FIELDS) == {"driver", "cuda", "cudnn", "torch", "torchvision", "numba", "numba_cuda",
                                    "python"}
    assert set(HARDWARE_FIELDS) == {"gpu_name", "gpu_count", "cpu_model", "cpu_signature", "memory_cap_gib",
                                    "sm_clock"}
    assert set(CHANGE_FIELDS) == set(SOFTWARE_FIELDS) | set(HARDWARE_FIELDS)
    names = [f.name for f in dataclasses.fields(Fingerprint)]
    assert [n for n in names if n in CHANGE_FIELDS] == list(CHANGE_FIELDS)  # in the record's order
    # the ids, and what follows from the GPU, are shown with the fingerprint, never listed as a change
    assert not {"hardware_id", "device", "machine", "gpu_memory_gib", "datasheet_key"} & set(CHANGE_FIELDS)


def test_a_changed_library_is_listed_and_a_field_only_one_side_records_is_not(cpu_results):
    newer = copy.deepcopy(cpu_results)
    fields = newer["machine_info"]["perfkit"]["fingerprint"]
    fields.update(torch="9.9.9", cpu_signature="family 26 model 2", machine="ab12")
    baseline, current = load.parse(cpu_results, "old.json"), load.parse(newer, "new.json")
    old = cpu_results["machine_info"]["perfkit"]["fingerprint"]["torch"]
    assert baseline.info.fingerprint.changes(current.info.fingerprint) == (("torch", old, "9.9.9"),)
    assert judge(baseline, current, Noise.of(baseline)).fingerprint_changes == (("torch", old, "9.9.9"),)
