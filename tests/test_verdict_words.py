"""Every surface that shows a verdict says what the judge said: no "nothing to read" while an unjudged figure
moved, no "no noise known" for a figure measured differently, across hardware no speedup table at odds with
the row of the same speedup, no "regressed" explanation for a suspect the confirmation turned unknown, no
count in the end-of-run headline without its row (an audit of 2026-12-06, each failing on 69ea9d7)."""
from __future__ import annotations

import json
import math
from typing import Any

import pytest

from perfkit import SCHEMA_VERSION, cli, confirm
from perfkit.render import verdicts
from perfkit.store import baselines
from perfkit.verdict.judge import Policy, Verdict, judge
from perfkit.verdict.noise import Noise
from tests.conftest import ROOT, judged, typed

LOCKED = {"clock_lock": {"sm_clock": "base/1980 MHz locked", "version": 1}}


def _results(benches: dict[str, list[float]], **extra: Any) -> dict[str, Any]:
    """A minimal result set (as tests/test_compare.py builds them): one benchmark per name."""
    out = [{"fullname": n, "name": n, "group": None, "extra_info": dict(extra.get(n, {})),
            "stats": {"data": list(d), "median": sorted(d)[len(d) // 2], "iqr": 0.0, "rounds": len(d)}}
           for n, d in benches.items()]
    info = {"schema_version": SCHEMA_VERSION, "hardware_id": "cpu-test", "fingerprint": {}, "ceilings": {}}
    return {"benchmarks": out, "machine_info": {"perfkit": info}}


def _from_runs(runs: list[dict[str, Any]]) -> Any:
    return baselines.from_runs([typed(r) for r in runs])


def test_nothing_to_read_is_not_said_while_a_not_judged_figure_moved_30_percent():
    """A one-run baseline entry 30% slower is ``not judged``; the markdown (compare --format markdown, the
    report, --perfkit-summary) opened with "Nothing to read: no gating figure moved beyond its minimum
    effect", which is false: it moved six times its minimum effect, unjudged."""
    baseline = _from_runs([_results({"b": [1.0] * 5}), _results({"b": [1.002] * 5}),
                           _results({"b": [0.998] * 5, "one": [1.0] * 5})])
    cmp = judged(baseline, _results({"b": [1.0] * 5, "one": [1.3] * 5}))
    row = next(r for r in cmp.rows if r.benchmark == "one")
    assert row.verdict is Verdict.NOT_JUDGED and row.change is not None and row.change > 0.25
    page = verdicts.render(cmp, "markdown")
    assert "no gating figure moved beyond its minimum effect" not in page
    assert "1 gating figure not judged, folded below" in page


def test_a_figure_measured_differently_is_not_said_to_lack_noise():
    """A time taken at another SM clock is ``measured differently`` (its note: re-save the baseline entry
    from a run timed like this one); the verdict line counted it "without one (no noise known to weigh
    them)" and the weak-figure table told the user to save a baseline from several runs, for noise it had."""
    baseline = _from_runs([_results({"b": [v] * 5, "c": [v] * 5}) for v in (1.0, 1.01, 0.99, 1.0, 1.005)])
    cmp = judged(baseline, _results({"b": [1.2] * 5, "c": [1.0] * 5}, b=LOCKED))
    row = next(r for r in cmp.rows if r.benchmark == "b" and r.gating)
    assert row.verdict is Verdict.MEASURED_DIFFERENTLY
    assert "no noise known" not in verdicts.verdict_line(cmp)
    assert not verdicts._tighten(row).startswith("no noise is known")


def _h100_against(h200: dict[str, Any], tmp_path: Any, capsys: Any) -> dict[str, Any]:
    current = tmp_path / "h200.json"
    current.write_text(json.dumps(h200))
    baseline = ROOT / "baselines" / "nvidia-h100-80gb-hbm3-x1.json"
    assert cli.main(["compare", str(baseline), str(current), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_across_hardware_the_rows_and_the_speedup_table_agree_on_what_was_measured_alike(tmp_path, capsys):
    """H100 baseline against the H200's. A time locked at another SM clock is each device's own clock (its
    roofs' notes say so): the row and the across table both read its speedup; the judge used to call the row
    ``measured differently`` while the table called the same speedup "FAR from expected". A time timed
    unlocked against one locked, and a figure measured by another method version, are ``measured
    differently`` in both, and out of the geometric mean."""
    h200 = json.loads((ROOT / "baselines" / "nvidia-h200-x1.json").read_text())
    layer = "benches/test_layers.py::test_layer[{}]"
    clocked, method, unlocked = (layer.format(n) for n in ("relu-forward", "conv-forward", "linear-forward"))
    plain = _h100_against(h200, tmp_path, capsys)
    entries = {b["fullname"]: b for b in h200["benchmarks"]}
    entries[clocked]["extra_info"]["clock_lock"] = {"sm_clock": "base/1755 MHz locked", "version": 1}
    entries[method]["extra_info"]["methods"] = {"time": 9}
    assert entries[unlocked]["extra_info"].pop("clock_lock")  # the H100's entry is locked at base
    out = _h100_against(h200, tmp_path, capsys)
    table = {h["benchmark"]: h for h in out["hardware_rows"]}
    assert out["benchmarks"][clocked] != "measured differently" and table[clocked]["verdict"] is not None
    for apart in (method, unlocked):
        assert out["benchmarks"][apart] == "measured differently" and table[apart]["verdict"] is None
    speedups = [h["speedup"] for h in plain["hardware_rows"]
                if h["speedup"] > 0 and h["benchmark"] not in (method, unlocked)]
    left_out = math.exp(-sum(math.log(s) for s in speedups) / len(speedups))
    assert out["geomean_time_ratio"] == pytest.approx(left_out)
    assert plain["geomean_time_ratio"] != pytest.approx(left_out)


def test_a_suspect_the_confirmation_did_not_measure_is_not_explained_as_regressed():
    """A night's suspect that no re-run measured is ``unknown`` ("flagged regressed; the confirmation's
    re-runs did not measure it"), but the first look's explanation stayed: the report's "Why they moved"
    table and the JSON's ``why`` still said ``regressed``."""
    base = _from_runs([_results({"a": [v] * 5, "b": [v] * 5, "c": [v] * 5})
                       for v in (1.0, 1.01, 0.99, 1.0, 1.005)])
    noise = Noise.of(base)
    first = judge(base, typed(_results({"a": [1.3] * 5, "b": [1.3] * 5, "c": [1.0] * 5})), noise, Policy())
    assert {r.benchmark for r in first.regressions} == {"a", "b"}
    reruns = [typed(_results({"a": [1.3 + 0.001 * i] * 5})) for i in range(3)]
    night = confirm.second_look(first, reruns, lambda again, look: judge(base, again, noise, Policy(),
                                                                          first_look=look))
    assert {r.benchmark: r.verdict for r in night.rows if r.gating}["b"] is Verdict.UNKNOWN
    assert [w.verdict for w in night.why if w.benchmark == "b"] in ([], ["unknown"])


def test_the_end_of_run_summary_lists_a_ratio_its_headline_counts_changed():
    """A ratio that should stay put moved +40%, significantly: ``changed``, and the headline counts its
    benchmark ``1 changed``; the terminal's end-of-run summary showed that headline and nothing else (no
    row, no line pointing at `perfkit compare`), while the markdown lists it as a row to read."""
    def ratio(value: float) -> dict[str, Any]:
        return {"b": {"metrics": {"ratio": {"value": value, "unit": "ratio", "better": "none"}}}}

    runs = [_results({"b": [v] * 5, "c": [v] * 5}, **ratio(0.5 * (1 + (i - 2) * 0.003)))
            for i, v in enumerate((1.0, 1.01, 0.99, 1.0, 1.005))]
    cmp = judged(_from_runs(runs), _results({"b": [1.0] * 5, "c": [1.0] * 5}, **ratio(0.7)))
    assert cmp.counts()[Verdict.CHANGED] == 1
    lines = verdicts.summary_lines(cmp, "baseline.json")
    assert "1 changed" in lines[0]
    assert any("ratio" in line or "changed" in line for line in lines[1:]), lines
