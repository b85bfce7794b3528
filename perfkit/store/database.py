"""A shared history of runs in a database: a SQLite file for one machine, PostgreSQL for a team.

pytest-benchmark's storage keeps each run as a file on the runner that made it; a team with several
runners needs one place they all write to and every reader queries. One SQL layer (SQLAlchemy Core)
serves both databases, so there is no hand-written SQL per dialect.

What is stored: each run's whole result JSON, exactly as read, so the one loader (perfkit.resultfile.load)
turns it back into the ResultSet the file gives, migrated by whatever perfkit reads it; beside it the
columns a query selects by (hardware id, profile, run datetime, machine, commit), and each benchmark's
figures as the loader read them at ingest (``perfkit_figures``: for queries such as a dashboard's,
never read back by perfkit, which reads the JSON).

A run's identity is the SHA-256 of its JSON with sorted keys: the same file ingested twice, or by two
runners at once, is stored once (a unique digest and an insert that ignores the conflict). A run is also
its hardware id, profile and datetime: a baseline is ingested as the runs it was saved from
(perfkit.store.baseline_runs), and one of them ingested from its own file too is stored once; an undated
run of a baseline (kept by a merge without its date) is its hardware id, profile and figures. The schema
has a version of its own (``perfkit_schema``), brought forward on open by the ordered steps of
:data:`MIGRATIONS`; a database written by a newer perfkit is refused rather than guessed at.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Engine,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    func,
    inspect,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.pool import NullPool
from sqlalchemy.sql.elements import ColumnElement

from perfkit.errors import BaselineError, StoreError, UsageError
from perfkit.resultfile import load
from perfkit.resultfile.figures import TIME, TIME_UNIT
from perfkit.resultfile.model import ProfileName, ResultSet
from perfkit.store.storage_folder import History

#: Seconds to wait for a server that does not answer, or for another writer's lock on a SQLite file.
TIMEOUT_S = 30
#: Key of the PostgreSQL advisory lock that serialises migrations of one database.
MIGRATION_LOCK = 0x7065_7266_6B69  # "perfki"
#: Key of the PostgreSQL advisory lock that one ingest holds while it looks for its run and stores it.
INGEST_LOCK = MIGRATION_LOCK + 1
EXAMPLES = "sqlite:///history.db (a file) or postgresql://user@host/dbname"

metadata = MetaData()

schema_table = Table(
    "perfkit_schema", metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),  # one row, id 1
    Column("version", Integer, nullable=False),
)

runs_table = Table(
    "perfkit_runs", metadata,
    Column("id", Integer, primary_key=True),
    Column("digest", String(64), nullable=False, unique=True),  # sha256 of the sorted JSON: the identity
    Column("hardware_id", Text, nullable=False),
    Column("profile", Text, nullable=False),
    Column("run_datetime", Text, nullable=False),  # pytest-benchmark's ISO datetime (UTC), as the file has it
    Column("machine", Text),  # fingerprint.machine: a hash of the GPUs' UUIDs or the host
    Column("commit_id", Text),
    Column("file_schema", Integer, nullable=False),  # the file's perfkit schema_version, as written
    Column("run_count", Integer, nullable=False),  # 1 for a run; a baseline file stands for several
    Column("partial", Boolean, nullable=False),  # a run cut short (RESULTS.json.partial)
    Column("source", Text, nullable=False),  # the path it was ingested from
    Column("ingested_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("document", Text, nullable=False),  # the whole result JSON
    Index("perfkit_runs_by_hardware", "hardware_id", "profile", "run_datetime"),
    Index("perfkit_runs_by_commit", "commit_id"),
    Index("perfkit_runs_by_machine", "machine"),
)

figures_table = Table(
    "perfkit_figures", metadata,
    Column("run_id", Integer, ForeignKey("perfkit_runs.id", ondelete="CASCADE"), primary_key=True),
    Column("benchmark", Text, primary_key=True),
    Column("figure", Text, primary_key=True),
    Column("value", Float, nullable=False),
    Column("unit", Text, nullable=False),
    Index("perfkit_figures_by_name", "benchmark", "figure"),
)


def _create_v1(conn: Connection) -> None:
    """Version 1: runs and their figures. A later version adds a step that alters what exists (the tables
    above then describe the newest version, and this step keeps creating version 1's)."""
    metadata.create_all(conn, tables=[runs_table, figures_table])


#: Step ``i`` brings a database from schema version ``i`` to ``i + 1``; never edit a released step.
MIGRATIONS: tuple[Callable[[Connection], None], ...] = (_create_v1,)
SCHEMA_VERSION = len(MIGRATIONS)


def parse_url(text: str) -> URL:
    """A SQLite or PostgreSQL URL (PostgreSQL through psycopg 3); anything else is one usage sentence."""
    try:
        url = make_url(text)
    except ArgumentError:
        raise UsageError(f"--db {text!r} is not a database URL; write {EXAMPLES}") from None
    backend, driver = url.get_backend_name(), url.get_driver_name()
    if backend in ("postgresql", "postgres") and driver in ("", "psycopg", "postgres", "postgresql"):
        return url.set(drivername="postgresql+psycopg")
    if backend == "sqlite" and driver in ("", "pysqlite", "sqlite"):
        if url.database in (None, "", ":memory:"):
            raise UsageError(f"--db {text!r} is an in-memory database, which keeps nothing; write {EXAMPLES}")
        return url.set(drivername="sqlite+pysqlite")
    raise UsageError(f"--db {text!r}: perfkit stores history in SQLite or PostgreSQL only; write {EXAMPLES}")


def _reason(exc: SQLAlchemyError) -> str:
    """The driver's own first line (e.g. "connection refused"), without SQLAlchemy's SQL echo and links."""
    inner = getattr(exc, "orig", None) or exc
    lines = [line.strip() for line in str(inner).splitlines() if line.strip()]
    return lines[0].rstrip(".") if lines else type(inner).__name__


@dataclass(frozen=True)
class Ingested:
    """One result file's fate: stored now, or found already stored (``stored`` False)."""

    source: str
    digest: str
    stored: bool
    results: ResultSet


def digest_of(raw: Mapping[str, Any]) -> str:
    """The run's identity: SHA-256 of its JSON with sorted keys (key order and whitespace do not count)."""
    text = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@final
class Store:
    """An open history database (see the module docstring); :func:`open_store` makes one."""

    def __init__(self, engine: Engine, where: str) -> None:
        self.engine = engine
        self.where = where  # the URL with its password hidden: what every message names

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """A database failure as one StoreError sentence (no traceback, no SQL)."""
        try:
            yield
        except SQLAlchemyError as exc:
            raise StoreError(f"{self.where}: cannot {doing}: {_reason(exc)}") from None

    @property
    def _postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    def schema_version(self) -> int | None:
        """The database's schema version; None where it holds no perfkit history yet."""
        with self._errors("read the schema version"), self.engine.connect() as conn:
            return _version(conn)

    def migrate(self, create: bool) -> None:
        """Bring the schema to :data:`SCHEMA_VERSION`, one step at a time, under a lock (several runners may
        open a new database at once); ``create``: make it where there is none (ingest), else refuse
        (readers)."""
        with self._errors("open the history"), self.engine.begin() as conn:
            version = _version(conn)
            if version == SCHEMA_VERSION:
                return
            if self._postgres:  # SQLite's transactions here begin IMMEDIATE, which locks the file already
                conn.execute(select(func.pg_advisory_xact_lock(MIGRATION_LOCK)))
                version = _version(conn)
            if version is None:
                if not create:
                    raise StoreError(f"{self.where} holds no perfkit history; store runs with `perfkit "
                                     f"history ingest RESULTS.json --db {self.where}` first")
                schema_table.create(conn)
                conn.execute(schema_table.insert().values(id=1, version=0))
                version = 0
            if version > SCHEMA_VERSION:
                raise StoreError(f"{self.where} holds a history of schema version {version}, newer than this "
                                 f"perfkit knows ({SCHEMA_VERSION}); upgrade perfkit to read or write it")
            for step in range(version, SCHEMA_VERSION):
                MIGRATIONS[step](conn)
                conn.execute(update(schema_table).where(schema_table.c.id == 1).values(version=step + 1))

    def ingest(self, raw: Mapping[str, Any], results: ResultSet, source: str) -> Ingested:
        """Store one run (its parsed JSON ``raw`` and what the loader made of it) unless it is there already:
        the same JSON, or a run of the same hardware id, profile and datetime (a run kept both as its own file
        and in a baseline, perfkit.store.baseline_runs, is one run; the first stored stays).

        The insert ignores a conflict on the digest and, on PostgreSQL, ingests take a lock in turn, so two
        runners storing the same run at once both succeed and it is stored once; the figures go in the same
        transaction as their run."""
        digest = digest_of(raw)
        info = results.info
        row = {
            "digest": digest, "hardware_id": results.hardware_id, "profile": results.profile,
            "run_datetime": results.datetime, "machine": info.machine, "commit_id": results.commit or None,
            "file_schema": int((raw.get("machine_info") or {}).get("perfkit", {}).get("schema_version", 0)),
            "run_count": max(1, len(info.run_dates)), "partial": results.partial, "source": source,
            "document": json.dumps(raw, separators=(",", ":"), ensure_ascii=False),
        }
        dialect_insert = postgresql.insert if self._postgres else sqlite.insert
        statement = (dialect_insert(runs_table).values(row)
                     .on_conflict_do_nothing(index_elements=["digest"]).returning(runs_table.c.id))
        same_run = select(runs_table.c.digest).where(
            runs_table.c.hardware_id == results.hardware_id, runs_table.c.profile == results.profile,
            runs_table.c.run_datetime == results.datetime).limit(1)
        with self._errors(f"store {source}"), self.engine.begin() as conn:
            if self._postgres:  # one ingest at a time, as SQLite's IMMEDIATE transactions already are
                conn.execute(select(func.pg_advisory_xact_lock(INGEST_LOCK)))
            # the run may be stored already from another file: its own, or a baseline's (of another save)
            stored = conn.execute(same_run).scalar() if results.datetime else _undated_alike(conn, results)
            if stored is not None:
                return Ingested(source, str(stored), False, results)
            run_id = conn.execute(statement).scalar()
            if run_id is not None:
                conn.execute(figures_table.insert(), _figure_rows(run_id, results))
        return Ingested(source, digest, run_id is not None, results)

    def kinds(self, hardware_id: str | None = None, profile: ProfileName | None = None
              ) -> tuple[list[str], list[str]]:
        """The hardware ids and the profiles of the stored runs (of one hardware id and profile, where given),
        read from their columns alone: what a reader asks before it reads every run."""
        query = select(runs_table.c.hardware_id, runs_table.c.profile).distinct()
        if hardware_id is not None:
            query = query.where(runs_table.c.hardware_id == hardware_id)
        if profile is not None:
            query = query.where(runs_table.c.profile == profile)
        with self._errors("read the history"), self.engine.connect() as conn:
            pairs = list(conn.execute(query).all())
        return sorted({h for h, _ in pairs}), sorted({p for _, p in pairs})

    def history(self, hardware_id: str | None = None, profile: ProfileName | None = None,
                newest: int | None = None) -> History:
        """The stored runs (of one hardware id and profile, where given; the ``newest`` n only, where given),
        oldest first, each read by the one loader; a run the loader refuses (say, written by a newer
        perfkit) is skipped with its reason, as :func:`perfkit.store.storage_folder.load_history` skips a
        file."""
        # code-point order, as Python sorts the storage's runs (a server's locale collation need not be)
        when: ColumnElement[Any] = runs_table.c.run_datetime.collate("C") if self._postgres else \
            runs_table.c.run_datetime
        query = select(runs_table.c.digest, runs_table.c.document)
        if hardware_id is not None:
            query = query.where(runs_table.c.hardware_id == hardware_id)
        if profile is not None:
            query = query.where(runs_table.c.profile == profile)
        if newest is not None:
            query = query.order_by(when.desc(), runs_table.c.id.desc()).limit(newest)
        else:
            query = query.order_by(when, runs_table.c.id)
        with self._errors("read the history"), self.engine.connect() as conn:
            rows = list(conn.execute(query).all())
        if newest is not None:
            rows.reverse()
        found: list[ResultSet] = []
        skipped: list[str] = []
        for digest, document in rows:
            source = f"{self.where}#{digest[:12]}"
            try:
                found.append(load.parse(json.loads(document), source, fresh=True))
            except BaselineError as exc:
                skipped.append(str(exc))
            except ValueError as exc:  # JSON that does not parse: written by hand, not by ingest
                skipped.append(f"{source}: unreadable ({exc})")
        return History(tuple(found), (), tuple(skipped))


def _version(conn: Connection) -> int | None:
    if not inspect(conn).has_table(schema_table.name):
        return None
    version = conn.execute(select(schema_table.c.version).where(schema_table.c.id == 1)).scalar()
    return None if version is None else int(version)


def _undated_alike(conn: Connection, results: ResultSet) -> str | None:
    """The digest of a stored undated run (perfkit.store.baseline_runs) of the same hardware id and profile
    holding the same figures as ``results``, an undated run too: with no date to tell it by, a run is its
    measurements (the file around them changes with each save of the baseline that keeps them)."""
    mine = {(r["benchmark"], r["figure"], r["value"]) for r in _figure_rows(0, results)}
    candidates = select(runs_table.c.id, runs_table.c.digest).where(
        runs_table.c.hardware_id == results.hardware_id, runs_table.c.profile == results.profile,
        runs_table.c.run_datetime == "")
    for run_id, digest in conn.execute(candidates).all():
        theirs = conn.execute(select(figures_table.c.benchmark, figures_table.c.figure, figures_table.c.value)
                              .where(figures_table.c.run_id == run_id)).all()
        if {tuple(row) for row in theirs} == mine:
            return str(digest)
    return None


def _figure_rows(run_id: int, results: ResultSet) -> list[dict[str, Any]]:
    """One row per benchmark and figure: the run's median time and each metric's value, with its unit."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for bench in results.benchmarks:
        for figure, value in bench.figures().items():
            unit = TIME_UNIT if figure == TIME else bench.metrics[figure].unit
            rows[(bench.fullname, figure)] = {"run_id": run_id, "benchmark": bench.fullname, "figure": figure,
                                              "value": float(value), "unit": unit}
    return list(rows.values())


def _engine(url: URL) -> Engine:
    """An engine without a pool (each command opens the database once); on SQLite every transaction
    begins IMMEDIATE, so writers queue for the file's lock (up to :data:`TIMEOUT_S`) instead of failing
    half-way, and DDL is transactional (pysqlite's own BEGIN handling is switched off, as SQLAlchemy's
    documentation recommends)."""
    if url.get_backend_name() == "postgresql":
        return create_engine(url, poolclass=NullPool, connect_args={"connect_timeout": TIMEOUT_S})
    engine = create_engine(url, poolclass=NullPool, connect_args={"timeout": TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _no_implicit_begin(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin_immediate(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def open_store(text: str, create: bool = False) -> Store:
    """The history database at URL ``text``, its schema brought forward. ``create``: make the database's
    tables (and a SQLite file's folder) where there are none, as ingest does; readers never create one, so
    a mistyped URL is an error, not an empty history."""
    url = parse_url(text)
    where = make_url(text).render_as_string(hide_password=True)  # as the user wrote it, less the password
    if url.get_backend_name() == "sqlite":
        path = Path(str(url.database))
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        elif path.is_dir():
            raise StoreError(f"{where}: a folder, not a database file; name the file, e.g. "
                             f"sqlite:///{path / 'history.db'}")
        elif not path.is_file():
            raise StoreError(f"{where}: no such database file; `perfkit history ingest RESULTS.json --db "
                             f"{where}` creates it")
    try:
        store = Store(_engine(url), where)
    except (SQLAlchemyError, ImportError) as exc:
        raise StoreError(f"{where}: cannot open the database: {exc}") from None
    try:
        store.migrate(create)
    except BaseException:
        store.close()
        raise
    return store


def kept_runs(text: str, hardware_id: str | None = None, profile: ProfileName | None = None,
              newest: int | None = None) -> History:
    """The runs stored at URL ``text`` (see :meth:`Store.history`), for readers that need nothing else."""
    with open_store(text) as store:
        return store.history(hardware_id, profile, newest)
