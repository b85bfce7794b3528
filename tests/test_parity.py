"""One judge: the same pair of files gets the same verdicts from the end of a run, ``perfkit compare`` and
``perfkit report``, with a single-run baseline, a multi-run one, and one that borrows the stored spread."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from perfkit import cli
from perfkit.options import RunOptions
from perfkit.session import Session
from perfkit.settings import Profile, Settings
from perfkit.store.baselines import BaselineStore
from tests.conftest import DATA, ROOT, one_run, slowed, three_runs, typed

MATMUL = "benches/test_ceilings.py::test_matmul_flops[fp32]"
RELU = "benches/test_layers.py::test_layer[relu-forward]"


def _pairs(tmp_path: Path) -> dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]]:
    """name -> (baseline, current, the store's baseline of that machine or None)."""
    cpu = json.loads((DATA / "cpu-quick.json").read_text())
    h200 = json.loads((ROOT / "baselines" / "nvidia-h200-x1.json").read_text())
    slow_cpu = slowed(slowed(cpu, MATMUL, 1.4), "benches/test_ceilings.py::test_copy_bandwidth", 0.6)
    return {
        "single-run baseline": (cpu, slow_cpu, None),
        "multi-run baseline": (three_runs(cpu).to_json(), slow_cpu, None),
        "single-run baseline, spread from the store": (cpu, slow_cpu, three_runs(cpu).to_json()),
        "committed multi-run H200 baseline": (h200, slowed(one_run(h200), RELU, 1.25), None),
    }


def _session_verdicts(root: Path, baseline: Path, current: dict[str, Any]) -> tuple[dict[str, str], str]:
    """What the end of a run says: the plugin's Session, built on this machine's settings for the files'
    hardware."""
    info = typed(current).info
    fingerprint = info.fingerprint
    device = "cuda" if info.device == "cuda" else "cpu"
    settings = Settings(torch.device(device), Profile(info.profile), fingerprint.gpu_count, fingerprint)
    session = Session(settings, BaselineStore.find(root), RunOptions(baseline=str(baseline)))
    session.finish(session.derive(current))
    assert session.comparison is not None
    return ({n: v.value for n, v in session.comparison.benchmark_verdicts().items()},
            session.summary_lines()[0].split(": ", 2)[2])


@pytest.mark.parametrize(
    "case",
    [
        "single-run baseline",
        "multi-run baseline",
        "single-run baseline, spread from the store",
        "committed multi-run H200 baseline",
    ],
)
@pytest.mark.slow
def test_the_summary_compare_and_report_give_the_same_verdicts(tmp_path, monkeypatch, capsys, case):
    baseline, current, stored = _pairs(tmp_path)[case]
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "baselines").mkdir()
    if stored is not None:
        store = BaselineStore(tmp_path / "baselines")
        store.save(typed(stored))
    monkeypatch.chdir(tmp_path)
    base_path, cur_path = tmp_path / "base.json", tmp_path / "current.json"
    base_path.write_text(json.dumps(baseline))
    cur_path.write_text(json.dumps(current))

    summary, summary_headline = _session_verdicts(tmp_path, base_path, current)
    assert cli.main(["compare", str(base_path), str(cur_path), "--format", "json"]) == 0
    compared = json.loads(capsys.readouterr().out)
    assert (
        cli.main(["report", str(cur_path), "--baseline", str(base_path), "--out", str(tmp_path / "r")]) == 0
    )
    reported = json.loads((tmp_path / "r" / "verdicts.json").read_text())
    report_headline = (tmp_path / "r" / "report.md").read_text().splitlines()[0]  # the verdict line

    assert summary == compared["benchmarks"] == reported["benchmarks"]
    assert compared["rows"] == reported["rows"]
    assert summary_headline in report_headline
    slowed_one = RELU if "H200" in case else MATMUL
    # seen, whatever the evidence (a single-run baseline is not judged at all)
    assert compared["benchmarks"][slowed_one] in ("regressed", "unknown", "not judged")
    # one baseline run says nothing of how far a figure moves between runs, whatever the store holds
    if case.startswith("single-run baseline"):
        assert compared["benchmarks"][MATMUL] == "not judged" and not compared["counts"].get("regressed")
