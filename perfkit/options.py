"""Every perfkit option of a run, parsed once from pytest's command line into one frozen value.

The session is built from it whole (perfkit.session), and a confirmation re-run in a fresh process gets the
options that shape what it measures from it (:meth:`RunOptions.rerun_args`), never by reading pytest's
config again.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import cast, get_args

import pytest

from perfkit import pbench
from perfkit.errors import UsageError
from perfkit.store.baselines import LOCAL_SAVE, SaveMode

#: Per benchmark; the longest nightly benchmark takes well under a minute, a weekly one a few.
DEFAULT_TIMEOUT_S = 1800.0
#: Most confirmation re-runs: each is a fresh process of every flagged benchmark (the nightly uses 3), and
#: beyond a few dozen more runs no longer change a verdict, only the night's length.
MAX_CONFIRM = 100
#: The options that name a file a run writes (its results, its verdict, its JUnit report, a stored run): a
#: command the run's end suggests leaves them out, else following it verbatim writes over this run's own
#: files, or stores a second run that the noise estimate then counts.
WRITES_FILE = ("--benchmark-json", "--perfkit-summary", "--junitxml", "--junit-xml", "--benchmark-save")
#: Options that write files under a name they may take (the histogram's and the profile dump's prefix),
#: left out with the name where one follows, and the flag that stores the run (``--benchmark-autosave``).
WRITES_FILE_MAYBE_NAMED = ("--benchmark-histogram", "--benchmark-cprofile-dump")
WRITES_FILE_FLAGS = ("--benchmark-autosave",)


@dataclass(frozen=True)
class RunOptions:
    device: str = "auto"  # auto, cpu or cuda
    profile: str | None = None  # quick or full; None: full with a GPU
    baseline: str = "auto"  # auto, none or a path
    fail_on_regression: bool = False
    save_mode: SaveMode | None = None
    save_local: bool = False  # save this run, with fresh re-runs, as this machine's own baseline
    data_root: str | None = None
    shifted_root: str | None = None
    confirm: int = 0  # re-runs of each flagged benchmark
    summary: Path | None = None  # where the final verdict goes as markdown
    timeout_s: float = DEFAULT_TIMEOUT_S  # per benchmark; 0: none
    memory_cap: str | None = None  # e.g. 10.91GiB
    torchrun_args: str | None = None
    results_path: Path | None = None  # --benchmark-json
    # pytest-benchmark's --benchmark-storage folder: its kept runs add to the noise
    storage: Path | None = None
    lock_clocks: str = "kernels"  # which benchmarks run at a locked SM clock (perfkit.measure.clocks.MODES)
    explain: bool = False  # each benchmark's work profiled once more: its kernel summary (perfkit.explain)
    command: tuple[str, ...] = ()  # pytest's arguments as given: a line that says how to run again uses them

    def __post_init__(self) -> None:
        if self.save_mode is not None and self.save_mode not in get_args(SaveMode):
            raise UsageError(f"unknown save mode {self.save_mode!r}; choose {', '.join(get_args(SaveMode))}")
        if not 0 <= self.confirm <= MAX_CONFIRM:
            raise UsageError(f"--perfkit-confirm takes how many re-runs (0 to {MAX_CONFIRM}: each is a fresh "
                             f"process of every flagged benchmark), not {self.confirm}")
        if self.timeout_s < 0:
            raise UsageError(f"--perfkit-timeout takes seconds (0 for no limit), not {self.timeout_s:g}")

    @classmethod
    def from_config(cls, config: pytest.Config) -> RunOptions:
        summary = config.getoption("perfkit_summary")
        save = config.getoption("perfkit_save_baseline")
        return cls(
            device=config.getoption("perfkit_device"),
            profile=config.getoption("perfkit_profile"),
            baseline=config.getoption("perfkit_baseline"),
            fail_on_regression=config.getoption("perfkit_fail_on_regression"),
            save_mode=None if save == LOCAL_SAVE else cast("SaveMode | None", save),
            save_local=save == LOCAL_SAVE,
            data_root=config.getoption("perfkit_data_root"),
            shifted_root=config.getoption("perfkit_shifted_root"),
            confirm=config.getoption("perfkit_confirm"),
            summary=Path(summary) if summary else None,
            timeout_s=config.getoption("perfkit_timeout"),
            memory_cap=config.getoption("perfkit_memory_cap"),
            torchrun_args=config.getoption("perfkit_torchrun_args"),
            results_path=pbench.json_path(config),
            storage=pbench.storage_path(config),
            lock_clocks=config.getoption("perfkit_lock_clocks"),
            explain=config.getoption("perfkit_explain"),
            command=tuple(str(arg) for arg in config.invocation_params.args),
        )

    def rerun_args(self, device: str, profile: str) -> list[str]:
        """The options a confirmation re-run needs to measure what this run measured (``device`` and
        ``profile``
        as this run resolved them)."""
        args = [
            f"--perfkit-device={device}",
            f"--perfkit-profile={profile}",
            f"--perfkit-timeout={self.timeout_s}",
            f"--perfkit-lock-clocks={self.lock_clocks}",
        ]
        return args + [
            f"{name}={value}"
            for name, value in (
                ("--perfkit-data-root", self.data_root),
                ("--perfkit-shifted-root", self.shifted_root),
                ("--perfkit-torchrun-args", self.torchrun_args),
                ("--perfkit-memory-cap", self.memory_cap),
            )
            if value
        ]

    def rerun_timeout_s(self, benchmarks: int) -> float | None:
        """How long the re-runs of ``benchmarks`` flagged benchmarks may take, each time."""
        return self.timeout_s * benchmarks + 300 if self.timeout_s > 0 else None

    def command_again(self) -> list[str]:
        """pytest's arguments as given, less each option that names a file this run wrote
        (:data:`WRITES_FILE`, as ``--option=FILE`` or ``--option FILE``; :data:`WRITES_FILE_MAYBE_NAMED`;
        :data:`WRITES_FILE_FLAGS`): a command suggested to run next must not replace them."""
        kept: list[str] = []
        args = list(self.command)
        while args:
            arg = args.pop(0)
            option = arg.split("=", 1)[0]
            named = arg in WRITES_FILE_MAYBE_NAMED and args and not args[0].startswith("-")
            if arg in WRITES_FILE or named:
                del args[:1]  # its FILE, as pytest's argparse reads it
            elif option not in (*WRITES_FILE, *WRITES_FILE_MAYBE_NAMED, *WRITES_FILE_FLAGS):
                kept.append(arg)
        return kept
