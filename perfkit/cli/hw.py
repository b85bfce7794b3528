"""``perfkit hw``: this machine's fingerprint, hardware id and the datasheet table."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from perfkit.resultfile import datasheet
from perfkit.resultfile.model import machine_kind
from perfkit.store import baselines


def add_parser(sub: Any) -> None:
    hw = sub.add_parser("hw", help="this machine's fingerprint, hardware id and the datasheet table")
    hw.add_argument("--json", action="store_true", help="machine-readable output")
    hw.add_argument("--id", action="store_true", help="print only the hardware id (for scripts and CI)")
    hw.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                    help="the device to describe (default: a GPU where one is visible, else the CPU)")
    hw.set_defaults(func=_hw)


def _hw(args: argparse.Namespace) -> int:
    from perfkit.measure import hardware  # its fingerprint imports torch (seconds); the id of a CPU does not

    if args.id:
        print(hardware.hardware_id_here(args.device))
        return 0
    from perfkit import console  # renders torch-side objects: imported only by the commands that need them

    fp = hardware.fingerprint(hardware.resolve_device(args.device))
    kind = machine_kind(fp.device, fp)
    stored = baselines.BaselineStore.find(Path.cwd()).machine_ceilings(fp.hardware_id or "unknown", kind)
    table = [dict(vars(spec)) for spec in datasheet.GPUS]
    if args.json:
        print(json.dumps({"fingerprint": fp.to_json(), "stored_ceilings": stored.ceilings.own(),
                          "stored_ceilings_from": str(stored.path) if stored.found else None,
                          "stored_ceilings_of": stored.whose,
                          "datasheet": table}, indent=2))
        return 0
    print(console.render_hardware(fp, stored))
    return 0
