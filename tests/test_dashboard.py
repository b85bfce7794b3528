"""The dashboard (perfkit dashboard) of the nightly runs of an H200, an H100 and two H200s: the committed
baselines' runs and fresh runs, ingested into SQLite and into a real PostgreSQL server. It opens offline in
headless Chromium, every link from the index reaches a benchmark page whose chart draws, both databases
give the same site, each benchmark's verdict is the judge's on its newest run, and bad input is one sentence,
exit 2, with nothing lost."""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from perfkit.render import dashboard, dashboard_html
from perfkit.resultfile import load
from perfkit.resultfile.model import RunOrigin
from perfkit.store import baselines, database
from perfkit.verdict import comparison
from perfkit.verdict.judge import MIN_BASELINE_RUNS, Verdict
from tests.conftest import DATA, ROOT, slowed
from tests.test_html import _render
from tests.test_store import _cli, _plain_run, _raw

COPY = "benches/test_ceilings.py::test_copy_bandwidth"
DDP = "benches/test_data_parallel.py::test_ddp[resnet50-224-b64-gpus1]"
DDP18 = "benches/test_data_parallel.py::test_ddp[resnet18-cifar-b128-weak-gpus1]"
PEAK = "peak_allocated_mib"
#: The entries kept of each baseline: every machine's copy and DDP of one GPU, two GPUs' DDP, and one entry
#: that the two-H200 baseline kept from runs it does not date (its nightly run brings it).
KEPT = (COPY, DDP, DDP18,
        "benches/test_data_parallel.py::test_ddp[resnet50-224-b64-gpus2]",
        "benches/test_data_parallel.py::test_ddp[vgg16-224-b64-gpus2]")
#: A new benchmark whose id holds every character a page name must survive, and some HTML must escape.
ODD = "benches/test_odd.py::test_odd[a/b::c d?&<x>]"
H200, H100, TWO_H200 = "nvidia-h200-x1", "nvidia-h100-80gb-hbm3-x1", "nvidia-h200-x2"
BASELINES = {H200: "nvidia-h200-x1.json", H100: "nvidia-h100-80gb-hbm3-x1.json",
             TWO_H200: "nvidia-h200-x2.json"}
SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
#: two nightly runs dated after every run the committed baselines hold (a baseline re-saved today stays older)
NIGHTS = ("2030-01-01T02:00:00.000000+00:00", "2030-01-02T02:00:00.000000+00:00")

#: Added at the end of a page's body (after tests.test_html's CHECK has set data-check): where its links
#: lead, as the browser resolves them, and how many inline SVGs it drew and how many drew nothing.
LINKS = """<script>
window.addEventListener("load", () => {
  const check = JSON.parse(document.body.getAttribute("data-check"));
  const svgs = [...document.querySelectorAll("svg")];
  const empty = svgs.filter(s => { const box = s.getBBox(); return !(box.width > 0 && box.height > 0); });
  const links = [...document.links].map(a => a.href);
  document.body.setAttribute("data-check",
                             JSON.stringify({...check, links, svgs: svgs.length, empty_svgs: empty.length}));
});
</script>"""


def _nightly(folder: Path) -> list[Path]:
    """The committed baselines of the three machines cut to their copy and DDP entries (a baseline file,
    stored as its runs), then fresh nightly runs: one of each machine, and a second of the H200 with its copy
    30% slower, a DDP's peak memory 20% higher, a new driver and commit, and a new benchmark."""
    folder.mkdir(parents=True, exist_ok=True)
    files, fresh = [], []
    for hardware_id, name in BASELINES.items():
        whole = load.load(ROOT / "baselines" / name)
        cut = baselines.select(whole, [b.fullname for b in whole.benchmarks if b.fullname in KEPT])
        files.append(folder / name)
        files[-1].write_text(json.dumps(cut.to_json()))
        fresh.append((hardware_id, _plain_run(cut.to_json(), NIGHTS[0])))
    again = slowed(_plain_run(json.loads(files[0].read_text()), NIGHTS[1]), COPY, 1.3)
    peak = next(b for b in again["benchmarks"] if b["fullname"] == DDP)["extra_info"]["metrics"][PEAK]
    peak["value"] *= 1.2
    again["commit_info"]["id"] = "f00dfeed" * 5
    again["machine_info"]["perfkit"]["fingerprint"]["driver"] = "590.1"
    odd = dict(next(b for b in again["benchmarks"] if b["fullname"] == COPY), fullname=ODD, name="test_odd")
    again["benchmarks"].append(odd)
    for i, (hardware_id, run) in enumerate([*fresh, (H200, again)]):
        files.append(folder / f"nightly-{i}-{hardware_id}.json")
        files[-1].write_text(json.dumps(run))
    return files


def _origins(hardware_id: str, name: str) -> tuple[RunOrigin, ...]:
    """The date and machine of each run the committed baseline of ``hardware_id`` keeps of benchmark
    ``name``."""
    return _origins_of(hardware_id)[name]


def _origins_of(hardware_id: str) -> dict[str, tuple[RunOrigin, ...]]:
    return load.load(ROOT / "baselines" / BASELINES[hardware_id]).origins()


def _ingested(db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    files = _nightly(tmp_path / "runs")
    code, out, err = _cli(["history", "ingest", *map(str, files), "--db", db_url], capsys)
    assert code == 0, err
    return out


def _check(page: Path) -> dict[str, Any]:
    """What headless Chromium saw of ``page`` where it lies (its charts and links are relative to it)."""
    return _render(page.read_text().replace("</body>", LINKS + "</body>", 1), page.parent)


def _path(url: str) -> Path:
    parsed = urlparse(url)
    assert parsed.scheme == "file", url  # nothing leaves the folder
    return Path(unquote(parsed.path))


@pytest.mark.slow
def test_the_dashboard_opens_offline_and_every_link_reaches_a_page_whose_chart_renders(db_url, tmp_path,
                                                                                        capsys):
    _ingested(db_url, tmp_path, capsys)
    site = tmp_path / "site"
    code, out, err = _cli(["dashboard", "--db", db_url, "--out", str(site)], capsys)
    assert code == 0 and err == "" and "and 12 benchmark page(s) of 3 hardware id(s)" in out
    index = site / "index.html"
    for page in site.rglob("*.html"):
        text = page.read_text()
        assert "http://" not in text and "https://" not in text and "<script" not in text, page
    seen = _check(index)
    assert seen["images"] == 0 and seen["errors"] == []
    assert seen["svgs"] == 12 and seen["empty_svgs"] == 0  # one sparkline per benchmark, each drawn
    pages = sorted({_path(link) for link in seen["links"]} - {site / "checked.html"})  # less its own anchors
    pages.remove(site / dashboard_html.ACROSS)  # the pairs of hardware ids: a table, the way back
    across = _check(site / dashboard_html.ACROSS)
    assert across["errors"] == [] and index in {_path(link) for link in across["links"]}
    assert len(pages) == 12 and all(p.is_file() and p.suffix == ".html" for p in pages)
    charts = 0
    for page in pages:
        shown = _check(page)
        assert shown["images"] == 0 and shown["errors"] == [], page  # nothing beside the page to load
        assert shown["svgs"] >= 1 and shown["empty_svgs"] == 0, page  # its charts, inline, each drawn
        assert index in {_path(link) for link in shown["links"]}, page  # the way back
        charts += page.read_text().count('<svg class="history"')
    # a time chart on each page, the chart of the DDP's peak memory, which regressed, and, wherever a DDP
    # step's verdict is unknown, of its GPU time, on which that rests (each step's verdict against the
    # baseline's newest runs: tests above); their launches per step, shown, are charted no more
    groups = dashboard.build(database.kept_runs(db_url)).groups
    moved = [b.moved[0] for g in groups for b in g.benchmarks if b.moved is not None]
    step_gpu = sum(p.read_text().count('aria-label="history of gpu_step_ms of ') for p in pages)
    assert sorted(set(moved)) == ["gpu_step_ms", PEAK] and moved.count(PEAK) == 1
    assert step_gpu == moved.count("gpu_step_ms") >= 1 and charts == 13 + step_gpu
    assert not any("history of launches_per_step" in p.read_text() for p in pages)
    odd = next(p for p in pages if "test_odd" in p.name)
    assert set(odd.name) <= SAFE
    assert "test_odd[a/b::c d?&amp;&lt;x&gt;]" in odd.read_text()


def test_a_sqlite_and_a_postgresql_store_of_the_same_runs_give_the_same_dashboard(postgres_server, tmp_path,
                                                                                 capsys):
    sites = []
    with postgres_server.database() as postgres:
        for name, url in (("sqlite", f"sqlite:///{tmp_path / 'history.db'}"), ("postgresql", postgres)):
            _ingested(url, tmp_path / name, capsys)
            sites.append(tmp_path / name / "site")
            assert _cli(["dashboard", "--db", url, "--out", str(sites[-1])], capsys)[0] == 0
    files = [sorted(p.relative_to(site) for p in site.rglob("*") if p.is_file()) for site in sites]
    assert files[0] == files[1] and len(files[0]) == 2 + 12  # index, across.html, the pages
    for relative in files[0]:
        assert (sites[0] / relative).read_bytes() == (sites[1] / relative).read_bytes(), relative


def test_each_benchmark_shows_the_judges_verdict_on_its_newest_run_its_runs_and_speedups(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'history.db'}"
    out = _ingested(url, tmp_path, capsys)
    # a --merge kept it from runs the file does not date: stored undated, before the dated runs
    assert "nvidia-h200-x2.json: 1 benchmark(s) (e.g. " in out and "stored as 1 undated run(s)" in out
    built = dashboard.build(database.kept_runs(url))
    groups = {g.hardware_id: g for g in built.groups}
    assert sorted(groups) == [H100, H200, TWO_H200] and {g.profile for g in built.groups} == {"full"}
    h200 = {b.name: b for b in groups[H200].benchmarks}
    copy = h200[COPY]
    assert copy.latest.verdict is Verdict.REGRESSED and copy.latest.when == NIGHTS[1]
    assert copy.latest.against == 3  # its last three runs before: the baseline's newest two and a nightly
    (time,) = [r for r in copy.latest.rows if r.figure == "time"]
    values = [r.value for r in copy.runs]
    assert time.baseline == pytest.approx(statistics.geometric_mean(values[-4:-1]))  # the judge: mean logs
    assert time.current == values[-1]
    assert values[-1] == pytest.approx(1.3 * values[-2]) and time.p_value is not None and time.p_value < 0.05
    # nothing moved it: never a verdict that flags; an unknown shows the chart of the gating figure it rests
    # on, its GPU time (its time and launches per step are shown, not gated)
    assert h200[DDP18].latest.verdict in (Verdict.UNCHANGED, Verdict.UNKNOWN)
    assert h200[DDP18].moved is None or h200[DDP18].moved[0] == "gpu_step_ms"
    assert h200[ODD].latest.verdict is Verdict.NEW and h200[ODD].latest.against == 0
    ddp = h200[DDP].latest.deciding()
    assert h200[DDP].latest.verdict is Verdict.REGRESSED and ddp is not None and ddp.figure == PEAK
    assert ddp.change == pytest.approx(1.2 * h200[DDP].moved[1].points[-2][1] / ddp.baseline - 1)
    assert h200[DDP].moved[0] == PEAK and len(h200[DDP].moved[1].points) == len(_origins(H200, DDP)) + 2
    assert [r.when for r in copy.runs][-2:] == list(NIGHTS)
    assert len(copy.runs) == len(_origins(H200, COPY)) + 2
    # each baseline run at its own machine; the fresh nightly runs repeat the file's fingerprint
    file_machine = load.load(ROOT / "baselines" / BASELINES[H200]).info.machine
    assert {r.machine for r in copy.runs} == {o.machine for o in _origins(H200, COPY)} | {file_machine}
    assert [r.changes for r in copy.runs][-1] == (("driver", "580.159.04", "590.1"),)
    assert copy.runs[-1].commit.startswith("f00dfeed") and not any(r.changes for r in copy.runs[:-1])
    speedups = {s.hardware_id: s for s in h200[DDP].speedups}
    assert sorted(speedups) == [H100, TWO_H200]
    h100_ddp = {b.name: b for b in groups[H100].benchmarks}[DDP]
    assert speedups[H100].row.speedup == pytest.approx(h100_ddp.runs[-1].value / h200[DDP].runs[-1].value)
    # the other machines' nightly runs repeat their newest baseline run: nothing regressed or improved (the
    # H100's copy may read unknown: its last three runs come from three machines, two degrees of freedom); the
    # entry only the two H200s' nightly run holds is new
    others = {(g.hardware_id, b.name): b.latest.verdict for g in (groups[H100], groups[TWO_H200])
              for b in g.benchmarks}
    assert not {Verdict.REGRESSED, Verdict.IMPROVED} & set(others.values())
    assert others[TWO_H200, COPY] is Verdict.UNCHANGED
    assert Verdict.NEW not in others.values()
    undated = {b.name: b for b in groups[TWO_H200].benchmarks}[KEPT[-1]]
    assert [r.when for r in undated.runs] == ["", NIGHTS[0]] and undated.latest.against == 1
    assert undated.latest.verdict is Verdict.NOT_JUDGED  # one run before it: too few to judge against
    index = dashboard_html.write(built, tmp_path / "site").read_text()
    rows = index[index.index(f'id="{dashboard_html.group_slug(groups[H200])}"'):]
    assert rows.index(COPY) < rows.index(DDP)  # the worst verdicts first
    page = (tmp_path / "site" / dashboard_html.page_name(groups[H200], copy)).read_text()
    assert "regressed" in page and "590.1" in page and "f00dfeed" in page
    page = (tmp_path / "site" / dashboard_html.page_name(groups[TWO_H200], undated)).read_text()
    assert "<td>undated</td>" in page
    # one class the style sheet colours, not two ("not" and "judged") that it does not
    assert '<span class="v not-judged">not judged</span>' in page and ".not-judged" in page
    ddp_page = tmp_path / "site" / dashboard_html.page_name(groups[H200], h200[DDP])
    assert f'aria-label="history of {PEAK} of {DDP}"' in ddp_page.read_text()
    # the cross-hardware page: each pair of ids once, every benchmark both hold beside its expectation
    across = (tmp_path / "site" / dashboard_html.ACROSS).read_text()
    assert f'<a href="{dashboard_html.ACROSS}">' in index
    assert f"<h2>{H100} over {H200} (full profile)</h2>" in across and f"{H200} over {H100}" not in across
    h100_copy = {b.name: b for b in groups[H100].benchmarks}[COPY]
    (over_h200,) = [s for s in h100_copy.speedups if s.hardware_id == H200]
    assert f"{over_h200.row.speedup:.3g}x" in across and f"{over_h200.row.expected:.3g}x" in across


@pytest.mark.slow
def test_every_committed_benchmark_is_on_the_dashboard_of_the_committed_baselines(tmp_path, capsys):
    """Entries a --merge kept without their runs' dates too (107 of the H200's, 44 of the H100's, 17 of the
    two H200s', 25 of the four H200s'): stored as undated runs, each gets its row and page."""
    url = f"sqlite:///{tmp_path / 'history.db'}"
    committed = sorted((ROOT / "baselines").glob("*.json"))
    assert _cli(["history", "ingest", *map(str, committed), "--db", url], capsys)[0] == 0
    shown = {(g.hardware_id, g.profile, b.name) for g in dashboard.build(database.kept_runs(url)).groups
             for b in g.benchmarks}
    files = [load.load(path) for path in committed]
    assert shown == {(f.hardware_id, f.profile, b.fullname) for f in files for b in f.benchmarks}


def test_page_names_are_file_safe_and_never_shared():
    ids = [ODD, "benches/test_odd.py::test_odd[a-b--c-d]", "benches/x.py::t[" + "y" * 300 + "]", "::/[]"]
    names = [dashboard_html.unique_name(i) for i in ids]
    assert len(set(names)) == len(ids) and all(len(n) <= 91 for n in names)
    assert all(set(n) <= SAFE for n in names)
    assert not any(n.startswith((".", "-")) for n in names)
    # unlike a hardware id's slug, a page name keeps the id's case, '.' and '_': it reads as the benchmark
    assert dashboard_html.unique_name("benches/test_x.py::test_Y[a_b]").startswith("test_x.py-test_Y-a_b-")


def test_runs_of_another_profile_get_their_own_trend(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'history.db'}"
    files = [ROOT / "baselines" / "nvidia-h200-x1-quick.json", *_nightly(tmp_path / "runs")[:1]]
    assert _cli(["history", "ingest", *map(str, files), "--db", url], capsys)[0] == 0
    built = dashboard.build(database.kept_runs(url))
    # the cut baseline's runs: each of its entries at its own runs' dates
    stored = {name: _origins(H200, name) for name in KEPT if name in _origins_of(H200)}
    dates = {o.date for origins in stored.values() for o in origins}
    # the quick baseline's runs likewise: each entry at its own runs' dates (its CPU references were re-saved
    # from later runs than the rest)
    quick_stored = load.load(ROOT / "baselines" / "nvidia-h200-x1-quick.json").origins()
    quick_dates = {o.date for origins in quick_stored.values() for o in origins}
    assert [(g.hardware_id, g.profile, len(g.runs)) for g in built.groups] == [
        (H200, "full", len(dates)), (H200, "quick", len(quick_dates))]
    full, quick = built.groups
    assert not {r.datetime for r in full.runs} & {r.datetime for r in quick.runs}
    assert all(len(b.runs) == len(stored[b.name]) for b in full.benchmarks)
    assert all(len(b.runs) == len(quick_stored[b.name]) for b in quick.benchmarks)
    assert {len(b.runs) for b in quick.benchmarks} == {3}
    assert len(quick.runs) == 6  # the CPU references' three runs came later than the rest's three
    assert not any(b.speedups for g in built.groups for b in g.benchmarks)  # sizes differ: no speedup


UNREACHABLE = "postgresql://nobody@127.0.0.1:1/x"


@pytest.mark.parametrize(("db", "message"), [
    (UNREACHABLE, f"{UNREACHABLE}: cannot open the history: "),
    ("sqlite:///{tmp}/typo.db", "no such database file; `perfkit history ingest"),
    ("history.db", "is not a database URL"),
])
def test_a_database_that_cannot_be_read_is_one_sentence_and_writes_nothing(tmp_path, capsys, db, message):
    code, out, err = _cli(["dashboard", "--db", db.format(tmp=tmp_path), "--out", str(tmp_path / "site")],
                          capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err and "Traceback" not in err
    assert not (tmp_path / "site").exists() and not (tmp_path / "typo.db").exists()


def test_an_empty_store_is_one_sentence(db_url, tmp_path, capsys):
    if db_url.startswith("sqlite"):
        Path(db_url[len("sqlite:///"):]).touch()
    site = tmp_path / "site"
    code, _, err = _cli(["dashboard", "--db", db_url, "--out", str(site)], capsys)
    assert code == 2 and err.count("\n") == 1 and "holds no perfkit history; store runs with" in err
    with database.open_store(db_url, create=True):  # the tables, without a run
        pass
    code, _, err = _cli(["dashboard", "--db", db_url, "--out", str(site)], capsys)
    assert code == 2 and err.count("\n") == 1 and "holds no perfkit runs; store some with `perfkit" in err
    assert not site.exists()


def test_a_store_of_a_newer_perfkit_is_refused_and_left_alone(db_url, tmp_path, capsys):
    _ingested(db_url, tmp_path, capsys)
    with database.open_store(db_url) as db, db.engine.begin() as conn:
        conn.execute(database.schema_table.update().values(version=database.SCHEMA_VERSION + 1))
    code, _, err = _cli(["dashboard", "--db", db_url, "--out", str(tmp_path / "site")], capsys)
    assert code == 2 and err.count("\n") == 1 and "newer than this perfkit knows" in err
    with _raw(db_url) as db, db.engine.connect() as conn:
        assert conn.execute(database.runs_table.select()).all()  # nothing lost
    assert not (tmp_path / "site").exists()


def test_an_out_that_is_a_file_is_refused_before_the_database_is_read(tmp_path, capsys):
    taken = tmp_path / "site"
    taken.write_text("mine")
    code, out, err = _cli(["dashboard", "--db", UNREACHABLE, "--out", str(taken)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"--out {taken} is a file; give a folder for the dashboard" in err
    assert taken.read_text() == "mine"
    url = f"sqlite:///{tmp_path / 'h.db'}"
    assert _cli(["history", "ingest", str(DATA / "cpu-quick.json"), "--db", url], capsys)[0] == 0
    code, out, err = _cli(["dashboard", "--db", url, "--out", str(taken / "sub")], capsys)  # cannot be made
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert f"{taken / 'sub'}; choose another path" in err and taken.read_text() == "mine"


def test_a_run_is_judged_against_the_runs_measured_like_it_and_the_older_way_is_another_series(tmp_path):
    from perfkit.store.storage_folder import History
    from tests.test_history import KERNEL, kernel_runs

    def built(runs: list[dict[str, Any]]) -> dashboard.Benchmark:
        kept = History(tuple(load.parse(run, f"run {i}") for i, run in enumerate(runs)))
        (group,) = dashboard.build(kept).groups
        return {b.name: b for b in group.benchmarks}[KERNEL]

    # 12% slower on its 13th night, the sixth since its kernel was timed alone: the 25 us of the launch pace
    # before it, 20% apart, are no part of the noise it is judged with, nor its baseline
    slower = built(kernel_runs(6, 7, slower_from=12, factor=1.12))
    assert slower.latest.verdict is Verdict.REGRESSED and slower.latest.deciding().figure == "kernel_s"
    first = built(kernel_runs(6, 1, slower_from=99)).latest  # the first night timed alone: nothing alike yet
    assert first.verdict is Verdict.MEASURED_DIFFERENTLY
    assert "method 2 here and method 1 in the baseline" in first.deciding().note
    runs = kernel_runs(6, 6, slower_from=99)
    older = dict(runs[5], datetime="2026-01-20T02:00:00.000000+00:00")  # an old checkout's run, timed as then
    assert built([*runs, older]).latest.verdict is not Verdict.MEASURED_DIFFERENTLY  # against its own kind
    site = tmp_path / "site"
    dashboard_html.write(dashboard.build(History(tuple(
        load.parse(run, "run") for run in kernel_runs(6, 7, slower_from=12, factor=1.12)))), site)
    (page,) = site.glob("*/*K1-grid*.html")
    assert "measured by method" not in page.read_text()  # the whole step: one way
    index = (site / "index.html").read_text()
    row = next(line for line in index.split("<tr>") if "K1-grid" in line)
    assert row.count("<polyline") == 1  # the index's sparkline is the time's


def _of_another_cpu(raw: dict[str, Any], when: str) -> dict[str, Any]:
    """A run of the committed CPU baseline's benchmarks on a CPU of another generation under its hardware id
    (cloud VMs name both "AMD EPYC")."""
    out = _plain_run(raw, when)
    out["machine_info"]["perfkit"]["fingerprint"].update(cpu_signature="family 25 model 1",
                                                         cpu_model="AMD EPYC 7B13")
    return out


def test_runs_of_two_cpu_models_under_one_id_are_never_judged_against_each_other(db_url, tmp_path, capsys):
    committed = ROOT / "baselines" / "cpu-amd-epyc-2cpu-quick.json"
    raw = json.loads(committed.read_text())
    other, mine = tmp_path / "other.json", tmp_path / "mine.json"
    other.write_text(json.dumps(_of_another_cpu(raw, NIGHTS[0])))
    assert _cli(["history", "ingest", str(committed), str(other), "--db", db_url], capsys)[0] == 0
    code, out, err = _cli(["dashboard", "--db", db_url, "--out", str(tmp_path / "site")], capsys)
    assert code == 0 and "Traceback" not in err and "40 benchmark page(s)" in out
    (group,) = dashboard.build(database.kept_runs(db_url)).groups
    assert {b.latest.verdict for b in group.benchmarks} == {Verdict.NOT_JUDGED}
    assert all(b.latest.elsewhere == "cpu_signature family 26 model 2 -> family 25 model 1"
               for b in group.benchmarks)
    page = (tmp_path / "site" / dashboard_html.page_name(group, group.benchmarks[0])).read_text()
    assert "on this machine (the earlier ones ran on another machine under the id: cpu_signature" in page
    # the baseline's machine again: judged against its own last three runs, never the other CPU's
    mine.write_text(json.dumps(_plain_run(raw, NIGHTS[1])))
    assert _cli(["history", "ingest", str(mine), "--db", db_url], capsys)[0] == 0
    (group,) = dashboard.build(database.kept_runs(db_url)).groups
    assert all(b.latest.against == 3 and not b.latest.elsewhere for b in group.benchmarks)
    assert Verdict.NOT_JUDGED not in {b.latest.verdict for b in group.benchmarks}


def test_a_verdict_its_time_shares_comes_from_the_time_and_one_it_does_not_from_the_figure_that_moved():
    def row(figure: str, verdict: Verdict) -> comparison.Row:
        return comparison.Row(DDP, figure, "ms", "lower", 1.0, 1.05, 0.05, verdict, gating=True)

    peak, time = row(PEAK, Verdict.UNKNOWN), row("time", Verdict.UNKNOWN)
    assert dashboard.Latest(Verdict.UNKNOWN, (peak, time), NIGHTS[0], 5).deciding() is time  # charted already
    regressed = row(PEAK, Verdict.REGRESSED)
    assert dashboard.Latest(Verdict.REGRESSED, (regressed, time), NIGHTS[0], 5).deciding() is regressed


def test_a_flagged_benchmarks_page_says_which_kernels_moved(tmp_path, capsys):
    """An H200's three runs of two layers and a run with an extra multiply after the ReLU, each with its
    kernel summary (``--perfkit-explain``), ingested as a night's history: the ReLU's page reads its new
    kernel and lists the kernels that moved."""
    url = f"sqlite:///{tmp_path / 'history.db'}"
    runs = [DATA / "h200-explain" / f"held_base{i}.json" for i in (1, 2, 3)]
    code, _, err = _cli(["history", "ingest", *map(str, runs), str(DATA / "h200-explain" /
                                                                    "heldout_extra_kernel.json"),
                         "--db", url], capsys)
    assert code == 0, err
    built = dashboard.build(database.kept_runs(url))
    (group,) = built.groups
    relu = {b.name: b for b in group.benchmarks}["benches/test_layers.py::test_layer[relu-forward]"]
    assert relu.latest.verdict is Verdict.REGRESSED and relu.latest.why is not None
    assert relu.latest.why.reading.startswith("new kernel vectorized_elementwise_kernel[Mul]")
    out = tmp_path / "dash"
    dashboard_html.write(built, out)
    page = (out / dashboard_html.page_name(group, relu)).read_text()
    assert "<h2>Why it moved</h2>" in page and "vectorized_elementwise_kernel[Mul]" in page
    assert "vectorized_elementwise_kernel[clamp_scalar]" in page and "<td>GPU time</td>" in page


def test_a_page_before_the_judge_has_its_runs_says_so_shows_the_values_and_never_says_re_save(tmp_path):
    """The CPU run alone, then with one, two and three nights before it: until MIN_BASELINE_RUNS earlier runs
    hold a benchmark no page passes on the judge's advice to re-save a baseline (the dashboard's is its
    database); each says how many earlier runs it has, that ingesting runs brings the rest, and shows the
    values unjudged. With three, the page is judged as every other."""
    from perfkit.store.storage_folder import History

    raw = json.loads((DATA / "cpu-quick.json").read_text())
    nights = [f"2030-01-0{day}T02:00:00.000000+00:00" for day in range(1, 5)]
    for count in range(1, 5):
        built = dashboard.build(History(tuple(load.parse(_plain_run(raw, night), f"run {i}")
                                              for i, night in enumerate(nights[:count]))))
        assert {b.latest.against for g in built.groups for b in g.benchmarks} == {count - 1}
        site = tmp_path / f"site{count}"
        dashboard_html.write(built, site)
        pages = [page.read_text() for page in site.glob("*/*.html")]
        assert len(pages) == len(raw["benchmarks"])
        judged = count - 1 >= MIN_BASELINE_RUNS
        for page in pages:
            assert "re-save" not in page and ("<th>MDE</th>" in page) is judged
            assert ("each run that <code>perfkit history ingest RESULTS.json --db URL</code> stores adds "
                    "one" in page) is not judged
            # the values beside the earlier runs', where there are any (no table of no rows)
            assert ("<th>figure</th><th>before</th><th>latest</th><th>change</th>" in page) is (count > 1)
            if count == 2:
                assert "only 1 earlier run of cpu-amd-epyc holds it, fewer than the 3 the judge needs" in page
