"""A throwaway PostgreSQL server for the history-database tests: a real server, never a mock.

It runs from the installed binaries (``initdb`` / ``pg_ctl`` on PATH, else Debian's
``/usr/lib/postgresql/<version>/bin``) in a temporary folder, on a free port of 127.0.0.1, with trust
authentication and no durability (nothing outlives the tests), and is stopped afterwards. initdb refuses
to run as root, so as root the server runs as the ``postgres`` user Debian's package creates (else
``nobody``).
"""
from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "perfkit"
START_TIMEOUT_S = 60


def binaries() -> Path | None:
    """The folder holding initdb and pg_ctl, or None where PostgreSQL is not installed."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl", path=str(Path(found).parent)):
        return Path(found).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                      key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    return versions[-1].parent if versions else None


def _server_user() -> str | None:
    """Whom to run the server as: None (this user) unless root, which initdb refuses."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' user exists: initdb refuses "
                       "root, so the PostgreSQL tests need one of them")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Server:
    port: int

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    @contextmanager
    def database(self) -> Iterator[str]:
        """A fresh, empty database on this server (its URL), dropped afterwards."""
        import psycopg

        name = f"perfkit_{uuid.uuid4().hex[:12]}"
        admin = f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname=postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        try:
            yield self.url(name)
        finally:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def server() -> Iterator[Server]:
    """Start a server, yield it, stop it and remove its files (also when the tests fail)."""
    bin_dir = binaries()
    if bin_dir is None:
        raise RuntimeError("no PostgreSQL binaries found")
    user = _server_user()
    as_user = ["runuser", "-u", user, "--"] if user else []
    root = Path(tempfile.mkdtemp(prefix="perfkit-pg-"))  # not pytest's tmp_path: that is private to root
    data = root / "data"
    try:
        if user:
            entry = pwd.getpwnam(user)
            os.chown(root, entry.pw_uid, entry.pw_gid)
        _run([*as_user, str(bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust",
              "--no-sync", "-E", "UTF8", "--locale=C"])
        for attempt in range(3):  # another process may take the free port between choosing and binding it
            port = _free_port()
            settings = {"port": str(port), "listen_addresses": "'127.0.0.1'",
                        "unix_socket_directories": f"'{root}'", "max_connections": "60",
                        "fsync": "off", "full_page_writes": "off", "synchronous_commit": "off"}
            (data / "postgresql.auto.conf").write_text("".join(f"{k} = {v}\n" for k, v in settings.items()))
            done = subprocess.run([*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-l",
                                   str(root / "log"), "-w", "-t", str(START_TIMEOUT_S), "start"],
                                  capture_output=True, text=True, check=False)
            if done.returncode == 0:
                break
            if attempt == 2:
                log = (root / "log").read_text(errors="replace") if (root / "log").exists() else ""
                raise RuntimeError(f"PostgreSQL did not start: {done.stdout}{done.stderr}{log[-2000:]}")
        try:
            yield Server(port)
        finally:
            subprocess.run([*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w",
                            "stop"], capture_output=True, check=False)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stdout}{done.stderr}")
