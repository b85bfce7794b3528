"""A throwaway single-node Slurm cluster for the fleet tests: a real cluster, never a mock.

munged, slurmctld and slurmd from Debian's packages (slurm-wlm, munge), in a temporary folder with a key of
their own, on free ports of this host, with two partitions on the one node (and a third that is down);
stopped afterwards. slurmd runs
jobs as root here, so the cluster needs root (CI runs as root); elsewhere the tests say they skipped.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
PARTITIONS = ("cpu-a", "cpu-b")
#: A partition that is down: a job submitted to it stays queued (reason PartitionDown)
DOWN = "cpu-down"
START_TIMEOUT_S = 60


def missing() -> str | None:
    """Why no cluster can start here, or None."""
    absent = [d for d in (*DAEMONS, "sbatch", "squeue", "sinfo") if shutil.which(d) is None
              and not Path("/usr/sbin", d).exists()]
    if absent:
        return (f"Slurm is not installed ({', '.join(absent)} not found): `apt-get install slurm-wlm munge` "
                "runs the fleet tests on a real single-node cluster")
    if os.geteuid() != 0:
        return "a single-node Slurm cluster's slurmd runs jobs as root: the fleet tests run as root (CI does)"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _daemon(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


@dataclass(frozen=True)
class Cluster:
    folder: Path
    config: Path

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.config)}

    def squeue(self) -> list[tuple[str, str]]:
        """(job id, state) of every job in the queue."""
        out = subprocess.run(["squeue", "-h", "-o", "%i %T"], env=self.env, capture_output=True, text=True,
                             check=True).stdout
        return [tuple(line.split()[:2]) for line in out.splitlines() if line.strip()]  # type: ignore[misc]


def _config(folder: Path, host: str, cpus: int) -> str:
    socket_path = folder / "munge" / "munge.socket"
    lines = [
        "ClusterName=perfkit-tests", f"SlurmctldHost={host}", "SlurmUser=root", "SlurmdUser=root",
        "AuthType=auth/munge", f"AuthInfo=socket={socket_path}", "CredType=cred/munge", "MpiDefault=none",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "ReturnToService=2",
        "SchedulerType=sched/backfill", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
        f"StateSaveLocation={folder / 'state'}", f"SlurmdSpoolDir={folder / 'spool'}",
        f"SlurmctldPidFile={folder / 'slurmctld.pid'}", f"SlurmdPidFile={folder / 'slurmd.pid'}",
        f"SlurmctldLogFile={folder / 'slurmctld.log'}", f"SlurmdLogFile={folder / 'slurmd.log'}",
        f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}", "JobCompType=jobcomp/none",
        "AccountingStorageType=accounting_storage/none",
        f"NodeName={host} CPUs={cpus} RealMemory=4000 State=UNKNOWN",
        *(f"PartitionName={p} Nodes={host} {'Default=YES ' if i == 0 else ''}MaxTime=INFINITE State=UP"
          for i, p in enumerate(PARTITIONS)),
        f"PartitionName={DOWN} Nodes={host} MaxTime=INFINITE State=DOWN",
    ]
    return "\n".join(lines) + "\n"


@contextmanager
def cluster() -> Iterator[Cluster]:
    """A running cluster whose node is idle, every daemon stopped afterwards."""
    with tempfile.TemporaryDirectory(prefix="perfkit-slurm-") as name:
        folder = Path(name)
        for sub in ("munge", "state", "spool"):
            (folder / sub).mkdir()
        key = folder / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        munge = folder / "munge"
        config = folder / "slurm.conf"
        config.write_text(_config(folder, socket.gethostname().split(".")[0], os.cpu_count() or 1))
        pids = [munge / "munged.pid", folder / "slurmctld.pid", folder / "slurmd.pid"]
        try:
            subprocess.run([_daemon("munged"), "--force", f"--key-file={key}",
                            f"--socket={munge / 'munge.socket'}", f"--pid-file={pids[0]}",
                            f"--seed-file={munge / 'seed'}", f"--log-file={munge / 'munged.log'}"],
                           check=True, capture_output=True)
            for daemon in ("slurmctld", "slurmd"):
                subprocess.run([_daemon(daemon), "-f", str(config)], check=True, capture_output=True)
            running = Cluster(folder, config)
            _wait_idle(running)
            yield running
        finally:
            subprocess.run(["scancel", "--full", "--quiet", "-u", "root"],
                           env={**os.environ, "SLURM_CONF": str(config)}, capture_output=True, check=False)
            for pid_file in reversed(pids):
                _stop(pid_file)


def _wait_idle(running: Cluster) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], env=running.env, capture_output=True, text=True,
                             check=False).stdout
        if out.strip() and all(state.strip() == "idle" for state in out.splitlines()):
            return
        time.sleep(0.5)
    log = (running.folder / "slurmctld.log").read_text(errors="replace")[-2000:]
    raise RuntimeError(f"the test cluster's node did not come up idle in {START_TIMEOUT_S} s:\n{log}")


def _stop(pid_file: Path) -> None:
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
