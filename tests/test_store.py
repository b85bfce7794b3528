"""The history database (perfkit.store.database), against a SQLite file and a real PostgreSQL server: ingest
stores each run once, also from runners ingesting at once; every reader gets from ``--db`` what it gets from
pytest-benchmark's storage; bad input is one sentence, exit 2, and loses nothing."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, table, update

from perfkit import cli
from perfkit.resultfile import load
from perfkit.resultfile.model import run_count
from perfkit.store import baseline_runs, database, storage_folder
from tests.conftest import DATA, ROOT, slowed, three_runs
from tests.test_history import ADD, COPY, _day, _run, _stepped, _store

RESULT_FILES = sorted([*DATA.glob("*.json"), *(DATA / "legacy").glob("*.json")])
BASELINES = sorted((ROOT / "baselines").glob("*.json"))
CPU_BASELINE = ROOT / "baselines" / "cpu-amd-epyc-2cpu-quick.json"
BATCH_SWEEP = "benches/test_batch_sweep.py::test_batch_sweep"


def _count(url: str, table: Any = database.runs_table) -> int:
    with database.open_store(url) as db, db.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar() or 0)


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(args)
    out, err = capsys.readouterr()
    return code, out, err


def _plain_run(raw: dict[str, Any], when: str, factor: float = 1.0) -> dict[str, Any]:
    """One run made from a result file or baseline: its own datetime, every time times ``factor``, and none of
    a baseline's stored runs (a run stands for itself)."""
    out = copy.deepcopy(raw)
    for key in ("runs", "noise", "run_dates", "run_machines"):
        out["machine_info"]["perfkit"].pop(key, None)
    for bench in raw["benchmarks"]:
        out = slowed(out, bench["fullname"], factor)
    out["datetime"] = when
    return out


def _env() -> dict[str, str]:
    """Child processes import this checkout's perfkit (it may be installed from another)."""
    paths = [str(ROOT), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def test_ingesting_a_run_twice_stores_it_once_with_its_figures(db_url, tmp_path, capsys):
    path = DATA / "cpu-quick.json"
    code, out, _ = _cli(["history", "ingest", str(path), "--db", db_url], capsys)
    assert code == 0 and "stored as run" in out and "1 run(s) stored, 0 already there" in out
    reordered = tmp_path / "same-run.json"  # the same run, keys reordered and indented: the same identity
    raw = json.loads(path.read_text())
    reordered.write_text(json.dumps(dict(reversed(list(raw.items()))), indent=2))
    code, out, _ = _cli(["history", "ingest", str(path), str(reordered), "--db", db_url], capsys)
    assert code == 0 and out.count("already stored: run") == 2 and "0 run(s) stored, 2 already there" in out
    assert _count(db_url) == 1
    results = load.load(path)
    assert _count(db_url, database.figures_table) == sum(len(b.figures()) for b in results.benchmarks)
    with database.open_store(db_url) as db, db.engine.connect() as conn:
        row = conn.execute(select(database.runs_table)).one()
        figures = {(r.benchmark, r.figure): (r.value, r.unit)
                   for r in conn.execute(select(database.figures_table))}
    assert (row.hardware_id, row.profile, row.run_datetime, row.commit_id, row.file_schema, row.run_count,
            row.partial) == ("cpu-amd-epyc", "quick", results.datetime, results.commit, 1, 1, False)
    copy_bench = results.by_name()["benches/test_ceilings.py::test_copy_bandwidth"]
    assert figures[(copy_bench.fullname, "time")] == (copy_bench.median, "s")
    assert figures[(copy_bench.fullname, "copy_bandwidth_gbps")] == (
        copy_bench.metrics["copy_bandwidth_gbps"].value, "GB/s")


def test_every_committed_result_file_reads_back_from_the_database_as_from_the_file(db_url, capsys):
    code, out, _ = _cli(["history", "ingest", *map(str, RESULT_FILES), "--db", db_url], capsys)
    assert code == 0 and f"{len(RESULT_FILES)} run(s) stored" in out
    with database.open_store(db_url) as db:
        kept = db.history()
    assert kept.skipped == () and len(kept) == len(RESULT_FILES)
    by_digest = {r.source.rsplit("#", 1)[1]: r for r in kept.runs}
    for path in RESULT_FILES:
        from_file = load.load(path)
        from_db = by_digest[database.digest_of(load.read_json(path))[:12]]
        assert from_db.to_json() == from_file.to_json(), path
        assert [b.figures() for b in from_db.benchmarks] == [b.figures() for b in from_file.benchmarks], path
        assert from_db.info == from_file.info and from_db.benchmarks == from_file.benchmarks, path
    assert [r.datetime for r in kept.runs] == sorted(r.datetime for r in kept.runs)  # oldest first


@pytest.mark.slow
def test_every_committed_baseline_is_stored_as_the_runs_it_was_saved_from(db_url, capsys):
    """One stored run per run date, with its machine and each benchmark's value of that date in that run; the
    newest run's entries whole; the values a --merge kept from runs the file does not date stored as undated
    runs before them, said (a benchmark holding both keeps its dated runs' dates and machines): every
    committed benchmark is in the history."""
    code, out, _ = _cli(["history", "ingest", *map(str, BASELINES), "--db", db_url], capsys)
    assert code == 0
    with database.open_store(db_url) as db:
        kept = db.history()
    assert kept.skipped == ()
    for path in BASELINES:
        baseline = load.load(path)
        stored, origins = baseline.runs(), baseline.origins()
        dated = {n for n, runs_of in origins.items() if any(o.date for o in runs_of)}
        undated_at = {n: [i for i in range(run_count(stored[n])) if i >= len(runs_of) or not runs_of[i].date]
                      for n, runs_of in origins.items()}
        machine_of = {o.date: o.machine for runs_of in origins.values() for o in runs_of if o.date}
        same = (baseline.hardware_id, baseline.profile)
        undated = [r for r in kept.runs if (r.hardware_id, r.profile) == same and not r.datetime]
        mine = [r for r in kept.runs if (r.hardware_id, r.profile) == same and r.datetime]
        assert [r.datetime for r in mine] == sorted(machine_of), path  # one stored run per date, oldest first
        newest = max(machine_of)
        assert [r.info.machine for r in mine] == [
            machine_of[d] or (baseline.info.machine if d == newest else None) for d in sorted(machine_of)
        ], path
        assert all(r.commit == baseline.commit and not r.info.runs for r in [*undated, *mine]), path
        whole = baseline.by_name()
        for run in mine:
            for bench in run.benchmarks:
                i = [o.date for o in origins[bench.fullname]].index(run.datetime)
                assert bench.median == stored[bench.fullname]["time"][i], (path, bench.fullname)
                recorded = bench.raw["extra_info"]["metrics"]  # as stored: the loader derives shares anew
                at = baseline.figure_positions(whole[bench.fullname])  # a figure some runs lack: its own runs
                assert all(m["value"] == stored[bench.fullname][name][at[name].index(i)]
                           for name, m in recorded.items())
                measured = {name for name in whole[bench.fullname].metrics if i in at.get(name, ())}
                assert measured == set(recorded), bench.fullname  # each figure in the runs that measured it
                last = i == len(origins[bench.fullname]) - 1  # its newest run keeps its entry whole
                assert bench.samples == (whole[bench.fullname].samples if last else ()), bench.fullname
        assert {b.fullname for r in mine for b in r.benchmarks} == dated, path
        # each undated benchmark: its values in order, oldest first, its newest entry whole in the last run
        assert [r for r in kept.runs if (r.hardware_id, r.profile) == same] == undated + mine  # undated first
        for name, at in undated_at.items():
            held = [r.by_name()[name] for r in undated if name in r.by_name()]
            assert [b.median for b in held] == [stored[name]["time"][i] for i in at], (path, name)
            if at and at[-1] == run_count(stored[name]) - 1:  # a benchmark the file dates nothing of
                assert name in undated[-1].by_name() and held[-1].samples == whole[name].samples, (path, name)
        left_out = sum(1 for at in undated_at.values() if at)
        assert (f"{path}: {left_out} benchmark(s) (e.g." in out) == (left_out > 0), path
        assert (f"stored as {len(undated)} undated run(s)" in out) == (left_out > 0), path
    assert "left out" not in out
    assert {(r.hardware_id, r.profile, b.fullname) for r in kept.runs for b in r.benchmarks} == {
        (b.hardware_id, b.profile, n.fullname) for b in map(load.load, BASELINES) for n in b.benchmarks}
    unpacked = [baseline_runs.unpack(load.load(path)) for path in BASELINES]
    assert len(kept) == sum(len(u.runs) + len(u.undated_runs) for u in unpacked)
    code, out, _ = _cli(["history", "ingest", *map(str, BASELINES), "--db", db_url], capsys)
    assert code == 0 and f"0 run(s) stored, {len(kept)} already there" in out


def test_a_baseline_saved_again_adds_only_its_new_runs_not_its_undated_ones_again(db_url, tmp_path, capsys):
    """An undated run has no date to be told by: the same figures of one hardware id and profile are the same
    run, whatever commit and fingerprint the file around them names after another save."""
    committed = ROOT / "baselines" / "nvidia-h200-x2.json"
    assert _cli(["history", "ingest", str(committed), "--db", db_url], capsys)[0] == 0
    before = _count(db_url)
    raw = json.loads(committed.read_text())
    raw["commit_info"]["id"] = "f" * 40  # saved again at a later commit, nothing re-measured
    raw["machine_info"]["perfkit"]["fingerprint"]["driver"] = "999.1"
    again = tmp_path / "again.json"
    again.write_text(json.dumps(raw))
    code, out, _ = _cli(["history", "ingest", str(again), "--db", db_url], capsys)
    assert code == 0 and f"0 run(s) stored, {before} already there" in out and _count(db_url) == before
    assert f"{again}: its {before} runs of nvidia-h200-x2 (full profile, " in out  # one line for the file
    assert f"): 0 stored, {before} already there" in out


def test_a_run_kept_in_a_baseline_and_in_its_own_file_is_stored_once_from_its_file(db_url, tmp_path, capsys):
    committed = json.loads(CPU_BASELINE.read_text())
    dates = committed["machine_info"]["perfkit"]["run_dates"]  # 12: nine, then the batch sweep's re-save
    fourth, runs = dates[3], len(dates)
    own = tmp_path / "run4.json"
    own.write_text(json.dumps(_plain_run(committed, fourth)))
    code, out, _ = _cli(["history", "ingest", str(CPU_BASELINE), str(own), "--db", db_url], capsys)
    assert code == 0 and f"{own}: stored as run" in out
    assert f"{runs} run(s) stored, 1 already there" in out
    assert f"{CPU_BASELINE}: its {runs} runs of cpu-amd-epyc-2cpu (quick profile, " in out
    assert f"): {runs - 1} stored, 1 already there" in out  # the fourth, stored from its own file
    with database.open_store(db_url) as db:
        kept = db.history()
    assert [r.datetime for r in kept.runs][3] == fourth and all(b.samples for b in kept.runs[3].benchmarks)
    code, out, _ = _cli(["history", "ingest", str(own), "--db", db_url], capsys)  # later, on its own
    assert code == 0 and "0 run(s) stored, 1 already there" in out and _count(db_url) == runs


CHILD = """
import sys, time
from pathlib import Path
from perfkit import cli
import perfkit.store.database  # imported before the barrier, so that the runners meet the database at once
barrier, me, runners = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
(barrier / me).touch()
while len(list(barrier.iterdir())) < runners:
    time.sleep(0.002)
sys.exit(cli.main(sys.argv[4:]))
"""


@pytest.mark.slow
def test_runners_ingesting_at_once_all_succeed_and_store_each_run_once(db_url, tmp_path):
    raw = json.loads((DATA / "cpu-quick.json").read_text())
    files = []
    for i in range(3):
        files.append(tmp_path / f"run{i}.json")
        files[-1].write_text(json.dumps(_plain_run(raw, _day(i), 1 + i / 100)))
    # a fresh database (its tables made by whichever runner comes first); six runners, started together once
    # all have imported perfkit: two runs that two runners each store, one that three do, one runner with two
    jobs = [[files[0]], [files[0]], [files[1]], [files[1]], [files[2], files[1]], [files[2]]]
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(barrier), str(i), str(len(jobs)),
                                  "history", "ingest", *map(str, job), "--db", db_url], cwd=tmp_path,
                                 env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for i, job in enumerate(jobs)]
    outs = [child.communicate(timeout=180) for child in children]
    assert [child.returncode for child in children] == [0] * len(jobs), [err for _, err in outs]
    stored = [line for out, _ in outs for line in out.splitlines() if "stored as run" in line]
    assert sorted(line.split(": stored")[0].rsplit("/", 1)[1] for line in stored) == [
        "run0.json", "run1.json", "run2.json"]  # each run stored by exactly one runner
    assert sum(out.count("already stored") for out, _ in outs) == 4
    assert _count(db_url) == 3
    with database.open_store(db_url) as db:
        assert [r.datetime for r in db.history().runs] == [_day(0), _day(1), _day(2)]


def test_two_files_of_one_run_ingested_at_once_store_it_once(db_url):
    """The same run from two files (its own and a baseline's, say), stored by two runners at once, is stored
    once: an ingest looks for its run and stores it while no other ingest can (SQLite: the file's write
    lock; PostgreSQL: an advisory lock). Both wait here behind a transaction that holds that lock."""
    raw = load.read_json(DATA / "cpu-quick.json")
    other = {**raw, "note": "the same run, kept in another file"}
    assert database.digest_of(other) != database.digest_of(raw)
    done: list[database.Ingested] = []
    with database.open_store(db_url, create=True) as db:
        with db.engine.begin() as conn:  # SQLite: BEGIN IMMEDIATE, as every ingest's transaction
            if db.engine.dialect.name == "postgresql":
                conn.execute(select(func.pg_advisory_xact_lock(database.INGEST_LOCK)))
            runners = [threading.Thread(target=lambda doc=doc: done.append(
                db.ingest(doc, load.parse(doc, "x"), "x"))) for doc in (raw, other)]
            for runner in runners:
                runner.start()
            time.sleep(1.0)
            assert done == []  # both wait for the lock
        for runner in runners:
            runner.join(timeout=60)
    assert sorted(d.stored for d in done) == [False, True] and _count(db_url) == 1


def _ingest_storage(storage: Path, db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Every run file of a pytest-benchmark storage folder, ingested into the database."""
    files = sorted(storage.rglob("*.json"))
    assert _cli(["history", "ingest", *map(str, files), "--db", db_url], capsys)[0] == 0


def _same(out_storage: str, out_db: str, storage: Path, db_url: str) -> None:
    assert out_storage.replace(str(storage), "WHERE") == out_db.replace(db_url, "WHERE")


def test_history_reads_the_database_as_it_reads_storage(db_url, tmp_path, capsys):
    storage = tmp_path / "files"
    _stepped(storage)
    _ingest_storage(storage, db_url, capsys)
    for extra in ([], ["-k", "*copy*", "--figure", "bandwidth_gbps"]):
        code_s, out_s, err_s = _cli(["history", "--storage", str(storage), *extra], capsys)
        code_d, out_d, err_d = _cli(["history", "--db", db_url, *extra], capsys)
        assert code_s == code_d == 0 and err_s == err_d == ""
        _same(out_s, out_d, storage, db_url)
    whole = _cli(["history", "--db", db_url], capsys)[1]
    assert "24 stored run(s) of cpu-test" in whole
    add = next(line for line in whole.splitlines() if line.startswith(ADD))
    assert "run 13 (2026-01-13 02:00, c1302abcde) +" in add  # the step, found in the database's runs
    assert _cli(["history", "--db", db_url, "--out", str(tmp_path / "charts")], capsys)[0] == 0
    assert len(list((tmp_path / "charts").glob("*.png"))) == 2


def test_a_baseline_from_the_database_is_the_one_from_storage(db_url, tmp_path, capsys):
    """A committed baseline's runs (nine, and since 2026-11-27 three of its batch sweep) and two later runs
    of that machine, ingested from the baseline and the two files, or kept as files: the baseline from the
    last three kept runs is the same."""
    committed = json.loads(CPU_BASELINE.read_text())
    later = [_plain_run(committed, "2026-11-28T02:00:00.000000+00:00", 1.01),  # after its last run
             _plain_run(committed, "2026-11-29T02:00:00.000000+00:00", 0.99)]
    storage = tmp_path / "storage"
    kept = baseline_runs.unpack(load.load(CPU_BASELINE)).runs
    _store(storage, [*kept, *later])
    assert _cli(["history", "ingest", str(CPU_BASELINE), *map(str, _store(tmp_path / "later", later)), "--db",
                 db_url], capsys)[0] == 0
    code_s, out_s, _ = _cli(["baseline", "save", "--from-history", "3", "--storage", str(storage),
                             "--dir", str(tmp_path / "from-storage")], capsys)
    code_d, out_d, _ = _cli(["baseline", "save", "--from-history", "3", "--db", db_url,
                             "--dir", str(tmp_path / "from-db")], capsys)
    assert code_s == code_d == 0
    assert f"(the last 3 runs in {storage})" in out_s and f"(the last 3 runs in {db_url})" in out_d
    (saved_s,) = (tmp_path / "from-storage").glob("*.json")
    (saved_d,) = (tmp_path / "from-db").glob("*.json")
    assert saved_s.name == saved_d.name == "cpu-amd-epyc-2cpu-quick.json"
    assert json.loads(saved_s.read_text()) == json.loads(saved_d.read_text())
    info = json.loads(saved_d.read_text())["machine_info"]["perfkit"]
    assert info["run_dates"] == [kept[-1]["datetime"], later[0]["datetime"], later[1]["datetime"]]
    # the baseline's last run re-saved some benchmarks alone (the batch sweep, then the vector add's CPU
    # references): those hold three runs, the rest (the copy among them) the two later runs
    newest = {b["fullname"] for b in kept[-1]["benchmarks"]}
    assert COPY not in newest and COPY in info["runs"]
    for name, figures_of in info["runs"].items():
        assert all(len(values) == (3 if name in newest else 2) for values in figures_of.values()), name
    assert len(newest) < len(info["runs"])


def test_the_report_and_compare_read_the_database_as_they_read_storage(db_url, tmp_path, capsys):
    raw = json.loads((DATA / "cpu-quick.json").read_text())
    raw["machine_info"]["perfkit"].update(hardware_id="cpu-test", profile="full")  # as the kept runs are
    results, slow, baseline = tmp_path / "results.json", tmp_path / "slow.json", tmp_path / "baseline.json"
    results.write_text(json.dumps(raw))
    slow.write_text(json.dumps(slowed(raw, COPY, 1.2)))
    baseline.write_text(json.dumps(three_runs(raw).to_json()))  # a one-run baseline is not judged
    _stepped(tmp_path / "storage")
    # runs of the results' own benchmarks too, so that they add to compare's noise
    _store(tmp_path / "storage", [_plain_run(raw, _day(24 + i), 1 + i / 200) for i in range(3)], first=25)
    storage = tmp_path / "storage"
    _ingest_storage(storage, db_url, capsys)
    for source, option in (("storage", ["--history", str(storage)]), ("db", ["--db", db_url])):
        assert _cli(["report", str(results), "--out", str(tmp_path / source), *option], capsys)[0] == 0
    text_s, text_d = ((tmp_path / s / "report.md").read_text() for s in ("storage", "db"))
    assert "## History: 27 kept run(s) of cpu-test" in text_d and text_s == text_d
    compared = [_cli(["compare", str(baseline), str(slow), "--format", "json", *option], capsys)
                for option in (["--history", str(storage)], ["--db", db_url])]
    assert compared[0] == compared[1] and compared[0][0] == 0
    assert json.loads(compared[0][1])["counts"]["regressed"] == 1


def test_a_database_of_a_newer_perfkit_is_refused_and_left_alone(db_url, tmp_path, capsys):
    assert _cli(["history", "ingest", str(DATA / "cpu-quick.json"), "--db", db_url], capsys)[0] == 0
    with database.open_store(db_url) as db, db.engine.begin() as conn:
        conn.execute(update(database.schema_table).values(version=database.SCHEMA_VERSION + 1))
    for args in (["history", "--db", db_url],
                 ["history", "ingest", str(DATA / "cpu-tta.json"), "--db", db_url]):
        done = subprocess.run([sys.executable, "-m", "perfkit.cli", *args], capture_output=True, text=True,
                              timeout=120, check=False, cwd=tmp_path, env=_env())
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert f"schema version {database.SCHEMA_VERSION + 1}, newer than this perfkit knows" in done.stderr
        assert "upgrade perfkit" in done.stderr
    with _raw(db_url) as db, db.engine.connect() as conn:
        # nothing lost
        assert conn.execute(select(func.count()).select_from(database.runs_table)).scalar() == 1


def _raw(url: str) -> database.Store:
    """The database without the schema check (to look at one that perfkit refuses)."""
    return database.Store(database._engine(database.parse_url(url)), url)


def test_an_older_schema_is_brought_forward_on_open(db_url, monkeypatch):
    with database.open_store(db_url, create=True) as db:
        assert db.schema_version() == database.SCHEMA_VERSION

    def add_notes(conn: Any) -> None:
        from sqlalchemy import Column, Integer, MetaData, Table

        Table("perfkit_notes", MetaData(), Column("id", Integer, primary_key=True)).create(conn)

    monkeypatch.setattr(database, "MIGRATIONS", (*database.MIGRATIONS, add_notes))
    monkeypatch.setattr(database, "SCHEMA_VERSION", database.SCHEMA_VERSION + 1)
    with database.open_store(db_url) as db:  # a reader brings it forward too
        assert db.schema_version() == database.SCHEMA_VERSION
        with db.engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(table("perfkit_notes"))).scalar() == 0


UNREACHABLE = "postgresql://nobody@127.0.0.1:1/x"


def test_an_unreachable_database_is_one_sentence_exit_2(tmp_path):
    done = subprocess.run([sys.executable, "-m", "perfkit.cli", "history", "--db", UNREACHABLE],
                          capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path, env=_env())
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"perfkit: error: {UNREACHABLE}: cannot open the history: ")
    assert "refused" in done.stderr.lower()


@pytest.mark.parametrize(("args", "message"), [
    (["history", "--db", UNREACHABLE], "cannot open the history"),
    (["history", "ingest", str(DATA / "cpu-quick.json"), "--db", UNREACHABLE], "cannot open the history"),
    (["baseline", "save", "--from-history", "3", "--db", UNREACHABLE], "cannot open the history"),
    (["compare", str(DATA / "cpu-quick.json"), str(DATA / "cpu-quick.json"), "--db", UNREACHABLE],
     "cannot open the history"),
    (["history", "--db", "history.db"], "is not a database URL; write sqlite:///history.db"),
    (["history", "--db", "mysql://me@host/runs"], "SQLite or PostgreSQL only"),
    (["history", "ingest", str(DATA / "cpu-quick.json"), "--db", "sqlite://"], "in-memory database"),
    (["history", "--db", "sqlite:///{tmp}/typo.db"], "no such database file; `perfkit history ingest"),
    (["dashboard", "--db", "sqlite:///{tmp}", "--out", "{tmp}/d"], "a folder, not a database file; name"),
    (["baseline", "save", "--db", "sqlite:///{tmp}/h.db"], "pass it too"),
])
def test_bad_database_urls_are_one_sentence_exit_2(tmp_path, capsys, args, message):
    code, out, err = _cli([a.format(tmp=tmp_path) for a in args], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err
    assert not (tmp_path / "typo.db").exists()  # a reader never creates a database


def test_an_empty_database_holds_no_history(db_url, capsys):
    if db_url.startswith("sqlite"):
        Path(db_url[len("sqlite:///"):]).touch()
    code, _, err = _cli(["history", "--db", db_url], capsys)
    assert code == 2 and "holds no perfkit history; store runs with `perfkit history ingest" in err
    with _raw(db_url) as db:
        assert db.schema_version() is None  # reading made no tables


def test_a_bad_file_stops_the_ingest_before_anything_is_stored(db_url, tmp_path, capsys):
    plain = tmp_path / "plain.json"  # written by pytest-benchmark without perfkit
    plain.write_text(json.dumps({"machine_info": {"node": "x"}, "benchmarks": [], "datetime": _day(0)}))
    injected = tmp_path / "injected.json"
    raw = json.loads((DATA / "cpu-quick.json").read_text())
    raw["benchmarks"][0]["extra_info"]["injected_slowdown"] = 1.1
    injected.write_text(json.dumps(raw))
    good = str(DATA / "cpu-tta.json")
    for bad, message in ((plain, "it was not written by a perfkit run"),
                         (tmp_path / "missing.json", "no such file"),
                         (injected, "carry an injected slowdown")):
        code, out, err = _cli(["history", "ingest", good, str(bad), "--db", db_url], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and str(bad) in err and message in err
    with _raw(db_url) as db:
        assert db.schema_version() is None  # nothing stored, not even the tables
    assert _cli(["history", "ingest", str(DATA / "cpu-tta.json"), "--db", db_url], capsys)[0] == 0


@pytest.mark.slow
def test_runs_of_both_profiles_are_kept_and_read_one_profile_at_a_time(db_url, tmp_path, capsys, monkeypatch):
    full, quick = ROOT / "baselines" / "nvidia-h200-x1.json", ROOT / "baselines" / "nvidia-h200-x1-quick.json"
    code, out, _ = _cli(["history", "ingest", str(full), str(quick), "--db", db_url], capsys)
    assert code == 0 and "(full profile," in out and "(quick profile," in out
    with monkeypatch.context() as patched:  # refused from the stored columns, before reading a run (seconds)
        patched.setattr(database.Store, "history", lambda *_: pytest.fail("read every run to refuse them"))
        code, out, err = _cli(["history", "--db", db_url], capsys)
        assert code == 2 and err.count("\n") == 1
        assert "holds runs of the full and quick profiles, whose sizes differ; pass --profile" in err
        code, out, err = _cli(["history", "--db", db_url, "--profile", "full", "--hardware-id", "cpu-x"],
                              capsys)
        assert code == 2 and "holds no runs of cpu-x; it holds runs of nvidia-h200-x1: pass one" in err
    code, out, err = _cli(["baseline", "save", "--from-history", "2", "--db", db_url, "--dir", str(tmp_path)],
                          capsys)
    assert code == 2 and "holds runs of the full and quick profiles; a baseline holds one profile's" in err
    unpacked = [baseline_runs.unpack(load.load(path)) for path in (full, quick)]
    runs = [len(u.runs) + len(u.undated_runs) for u in unpacked]
    code, out, _ = _cli(["history", "--db", db_url, "--profile", "quick"], capsys)
    assert code == 0 and f"over {runs[1]} stored run(s) of nvidia-h200-x1" in out  # the quick baseline's runs
    assert _count(db_url) == sum(runs) and runs[1] > 1  # nothing lost
    # another machine's quick runs beside them: the full profile is one machine's, asked for by profile alone
    assert _cli(["history", "ingest", str(CPU_BASELINE), "--db", db_url], capsys)[0] == 0
    code, out, err = _cli(["history", "--db", db_url, "--profile", "full", "--hardware-id",
                           "cpu-amd-epyc-2cpu"], capsys)  # a machine held, of the other profile only
    assert code == 2 and "holds no kept runs of the full profile of cpu-amd-epyc-2cpu" in err
    code, out, err = _cli(["history", "--db", db_url, "--profile", "full"], capsys)
    assert code == 0 and "stored run(s) of nvidia-h200-x1" in out, err


def test_the_storage_refuses_mixed_profiles_in_the_same_sentence(tmp_path, capsys):
    quick = _run({COPY: 1.0}, _day(1))
    quick["machine_info"]["perfkit"]["profile"] = "quick"
    _store(tmp_path, [_run({COPY: 1.0}, _day(0)), quick])
    code, _, err = _cli(["history", "--storage", str(tmp_path)], capsys)
    assert code == 2 and "holds runs of the full and quick profiles, whose sizes differ; pass --profile" in (
        err)
    assert _cli(["history", "--storage", str(tmp_path), "--profile", "full"], capsys)[0] == 0
    with pytest.raises(Exception, match="pass --profile"):
        storage_folder.baseline_from_history(tmp_path, None, 2)
    results = json.loads((DATA / "cpu-quick.json").read_text())
    results["machine_info"]["perfkit"]["hardware_id"] = "cpu-test"  # a quick run: its report's trend is quick
    (tmp_path / "results.json").write_text(json.dumps(results))
    assert _cli(["report", str(tmp_path / "results.json"), "--out", str(tmp_path / "r"), "--history",
                 str(tmp_path)], capsys)[0] == 0
    assert "## History: 1 kept run(s) of cpu-test" in (tmp_path / "r" / "report.md").read_text()


def test_a_password_stays_out_of_the_message(capsys):
    code, _, err = _cli(["history", "--db", "postgresql://me:s3cret@127.0.0.1:1/x"], capsys)
    assert code == 2 and "s3cret" not in err
    assert "postgresql://me:***@127.0.0.1:1/x: cannot open the history" in err
