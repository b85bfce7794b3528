"""The torchrun launcher on CPU (gloo): DDP replicas agree, a crash or a hang fails in one sentence
with nothing left running, a busy default port does not matter, and rendezvous options pass through."""
from __future__ import annotations

import dataclasses
import os
import socket
import tempfile
import time
from pathlib import Path

import pytest

from perfkit.errors import UsageError
from perfkit.parallel import launch
from perfkit.parallel.records import RESULTS, AccuracyJob, AccuracyResult, ScalingResult, job_to_json
from perfkit.parallel.scaling import ScalingWorkload

ROOT = Path(__file__).parent.parent
ENV = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
TINY = "tests.dist_workers:tiny"


def _launch(job: dict, nproc: int = 2, **kwargs) -> dict:
    return launch.launch(kwargs.pop("module", "tests.dist_workers"), {"device": "cpu", **job}, nproc,
                              env=ENV, **kwargs)


def _run(job) -> object:
    """A typed job on two CPU ranks, as the plugin's perfkit_torchrun runs it (with the tests on the path)."""
    raw = launch.launch("perfkit.parallel.jobs", job_to_json(job), 2, env=ENV)
    return RESULTS[job.TAG].from_json(raw)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_torchrun_command_is_standalone_unless_rendezvous_is_given():
    plain = launch.torchrun_command(["-m", "job"], 4)
    assert "--standalone" in plain and plain[-4:] == ["--nproc-per-node", "4", "-m", "job"]
    args = launch.parse_torchrun_args("--nnodes 2 --rdzv-endpoint host:29500 --nproc-per-node 8")
    multi = launch.torchrun_command(["-m", "job"], 4, args)
    assert "--standalone" not in multi and multi.count("--nproc-per-node") == 1 and "8" in multi


@pytest.mark.slow
def test_torch_elastics_logs_stay_in_the_launchs_own_folder(tmp_path):
    command = launch.torchrun_command(["-m", "job"], 2, (), tmp_path / "elastic")
    assert command[command.index("--log-dir") + 1] == str(tmp_path / "elastic") and command[-2:] == [
        "-m",
        "job",
    ]
    before = set(Path(tempfile.gettempdir()).glob("torchelastic_*"))
    assert _launch({"action": "world"}, 2) == {"world": 2}
    assert set(Path(tempfile.gettempdir()).glob("torchelastic_*")) == before  # nothing left in the temp dir


def test_torchrun_args_must_not_name_a_program():
    with pytest.raises(UsageError, match="rendezvous options"):
        launch.parse_torchrun_args("--nnodes 1 -m mymodule")


@pytest.mark.slow
def test_ddp_replicas_agree_over_gloo_even_with_the_default_port_taken():
    busy = socket.socket()
    try:
        busy.bind(("127.0.0.1", 29500))
        busy.listen()
    except OSError:
        pass  # already taken by someone else: just as good
    try:
        job = ScalingWorkload("tiny", TINY, "cifar10", (3, 32, 32), 16, dataset_size=512).job(
            2, None, device="cpu", warmup=2
        )
        result = _run(dataclasses.replace(job, profile_steps=2, nosync_steps=3, allreduce_reps=3))
    finally:
        busy.close()
    assert isinstance(result, ScalingResult)
    run = result.run
    assert run.world == 2 and run.global_batch == 32 and run.replicas_max_abs_diff == 0.0
    assert len(run.step_s) == run.steps_per_epoch == 512 // 2 // 16
    assert run.loss_last < run.loss_first
    assert run.peaks == (None, None) and len(result.allreduce_op_s or ()) == 3 and result.profile is None
    # what the launch cost: the interpreter, its imports and the process group, then the model and warm-up
    assert result.startup_s is not None and 0.0 < result.startup_s < 120.0
    assert result.setup_s is not None and 0.0 < result.setup_s < 120.0
    assert result.build_s is not None and result.first_step_s is not None
    assert 0.0 < result.build_s + result.first_step_s < result.setup_s  # parts of it


@pytest.mark.slow
def test_replica_check_sees_a_perturbed_rank():
    assert _launch({"action": "perturb"})["difference"] == pytest.approx(0.25)


@pytest.mark.slow
def test_a_crashing_rank_fails_with_its_own_message():
    with pytest.raises(launch.DistributedError, match=r"rank 1 of 2 failed: ValueError: boom on rank 1"):
        _launch({"action": "crash"})


@pytest.mark.slow
def test_a_hung_job_times_out_and_leaves_no_process(tmp_path):
    started = time.monotonic()
    with pytest.raises(launch.DistributedError, match="ran past 20 s and was stopped"):
        _launch({"action": "hang", "pid_dir": str(tmp_path)}, timeout_s=20)
    assert time.monotonic() - started < 20 + 2 * launch.STOP_GRACE_S + 5
    pids = [int(p.read_text()) for p in tmp_path.glob("*.pid")]
    assert len(pids) == 2 and not any(_alive(pid) for pid in pids)


@pytest.mark.slow
def test_rendezvous_arguments_reach_torchrun():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = launch.parse_torchrun_args(f"--nnodes 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
                                           "--rdzv-id perfkit-test")
    assert _launch({"action": "hello"}, torchrun_args=args) == {"world": 2}


@pytest.mark.slow
def test_large_batch_job_trains_and_reports_accuracy():
    job = AccuracyJob(TINY, None, 512, 256, 2, 64, base_batch=32, base_lr=0.05, rule="linear-warmup",
                      warmup_epochs=1, recipe="synthetic-hard", device="cpu")
    result = _run(job)
    assert isinstance(result, AccuracyResult)
    assert result.lr == pytest.approx(0.1) and result.warmup_steps == 512 // 2 // 32
    assert [h.epoch for h in result.history] == [0, 1] and 0 <= result.test_accuracy <= 1
    assert result.replicas_max_abs_diff == 0.0 and result.data.startswith("synthetic-hard:")


@pytest.mark.slow
def test_an_unknown_job_kind_fails_in_one_sentence_naming_the_kinds():
    with pytest.raises(
        launch.DistributedError, match="unknown job kind 'dance'; one of scaling, allreduce, accuracy"
    ):
        launch.launch("perfkit.parallel.jobs", {"kind": "dance", "device": "cpu"}, 2, env=ENV)


@pytest.mark.slow
def test_a_one_process_job_runs_without_torchrun_and_ignores_an_inherited_rendezvous():
    result = launch.launch("tests.dist_workers", {"device": "cpu", "action": "launcher"}, 1,
                           env={**ENV, "MASTER_ADDR": "192.0.2.1", "MASTER_PORT": "9"}, timeout_s=60)
    assert result == {"world": 1, "torchrun": False}  # torchrun gives its workers TORCHELASTIC_RUN_ID
    assert _launch({"action": "launcher"}, 2) == {"world": 2, "torchrun": True}
    with pytest.raises(launch.DistributedError, match=r"rank 0 of 1 failed: ValueError: boom on rank 0"):
        _launch({"action": "crash", "crash_rank": 0}, 1)
