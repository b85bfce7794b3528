"""The README's worked example of a new benchmark runs as written (so it stays true)."""
from __future__ import annotations

import json
import re

from tests.conftest import ROOT


def test_the_worked_example_of_a_new_benchmark_runs_and_records_its_rate(pytester):
    readme = (ROOT / "README.md").read_text()
    code = re.search(r"## Adding a benchmark.*?```python\n(.*?)```", readme, re.DOTALL)
    assert code, "README lost its worked example"
    pytester.makepyfile(test_softmax=code.group(1))
    result = pytester.runpytest("-p", "perfkit.plugin", "--perfkit-device=cpu", "--perfkit-profile=quick",
                                "--benchmark-json=r.json")
    result.assert_outcomes(passed=2)
    benches = json.loads((pytester.path / "r.json").read_text())["benchmarks"]
    assert all("bandwidth_gbps" in b["extra_info"]["metrics"] for b in benches)
