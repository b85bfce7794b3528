"""``perfkit dashboard``: static pages of a history database."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from perfkit.cli.common import DB_HELP, out_folder, say_skipped, work_of
from perfkit.errors import BaselineError


def add_parser(sub: Any) -> None:
    dash = sub.add_parser("dashboard", help="static pages of a history database: each benchmark's latest "
                                            "verdict, trend, runs and speedups across hardware")
    dash.add_argument("--db", required=True, metavar="URL", help=DB_HELP)
    dash.add_argument("--out", type=Path, required=True, metavar="DIR",
                      help="folder for index.html and the benchmark pages (made where it does not exist)")
    dash.set_defaults(func=_dashboard)


def _dashboard(args: argparse.Namespace) -> int:
    """Every run of the database; the folder is checked before the database is read, and nothing in it but
    the dashboard's own pages and charts is written over."""
    from perfkit.render import dashboard_html
    from perfkit.render.dashboard import build
    from perfkit.store import database  # SQLAlchemy: imported only where a database is named

    out_folder(args.out, "the dashboard")
    with database.open_store(args.db) as db:
        where, kept = db.where, db.history()
    say_skipped(kept)
    if not kept.runs:
        raise BaselineError(f"{where} holds no perfkit runs; store some with `perfkit history ingest "
                            f"RESULTS.json --db {where}` first")
    built = build(kept, work_of)
    index = dashboard_html.write(built, args.out)
    pages = sum(len(g.benchmarks) for g in built.groups)
    print(f"perfkit: wrote {index} and {pages} benchmark page(s) of {len(built.groups)} hardware id(s) and "
          f"profile(s), from {len(kept)} run(s) in {where} (static: opens offline)")
    return 0
