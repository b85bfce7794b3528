"""A/B of two code versions: each git ref in a checkout of its own, their benchmarks run in alternating
fresh processes until the paired test (perfkit.verdict.paired_test) decides each one or the rounds are spent.

Interleaving is the point (RMIT, duet benchmarking): a drift of the machine over the minutes of an A/B hits
both sides alike. The order inside a round follows ABBA (each round the reverse of the one before) from a
seeded coin, so neither side always runs first, warm after the other, and the seed is recorded. Both sides
use this environment's Python and packages; each imports its own perfkit (PYTHONPATH and cwd at its
checkout). Nothing is written into either checkout: results go to ``out``, bytecode to perfkit.bytecode's
folder (where the environment writes none beside the sources; forgotten with its checkout), the
checkouts made here are removed on the way out, error, Ctrl-C or SIGTERM alike (perfkit.stopping: the
benchmark run under way gets the signal too, and the pairs finished by then stay in ``out``).
"""
from __future__ import annotations

import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from perfkit import bytecode, stopping
from perfkit.ab import collected
from perfkit.ab import report as ab_report
from perfkit.ab.report import AbReport, MinimumEffect, SideRef
from perfkit.ab.touched import benches_touched
from perfkit.errors import BuildError, UsageError
from perfkit.resultfile import load
from perfkit.resultfile.model import ResultSet
from perfkit.store import baselines
from perfkit.verdict import paired_test
from perfkit.verdict.judge import Policy, Verdict, held_back, minimum_effect
from perfkit.verdict.matching import pair

#: pytest's exit status when nothing was collected: that side lacks the benchmarks (new/missing), no error.
NO_TESTS_COLLECTED = 5
WORKING_TREE = "working tree"
DEFAULT_POLICY = Policy()
#: What an A/B writes into its --out: the report, rewritten after every pair
AB_JSON = "ab.json"
#: A checkout's prefix, and its git lock's reason: who made it, so that a later A/B can tell one that a killed
#: run (SIGKILL, the out-of-memory killer) left registered from one that a run beside it still uses.
PREFIX = "perfkit-ab-"
OWNER = "perfkit ab: pid {pid} on {host}"
OWNER_LINE = re.compile(r"^locked perfkit ab: pid (\d+) on (\S+)$", re.MULTILINE)


@dataclass(frozen=True)
class Side:
    label: str  # "base" or "head"
    ref: str
    commit: str
    root: Path


def git(repo: Path, *args: str) -> str:
    """git's output; a failure is one UsageError line with git's own last line (some commands, such as git
    bisect, say why on stdout)."""
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["no message"])[-1]
        raise UsageError(f"git {' '.join(args)} failed in {repo}: {last}")
    return done.stdout.strip()


def repository(path: Path) -> Path:
    """The top folder of the full (not shallow) clone holding ``path``."""
    done = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=path, capture_output=True, text=True,
                          check=False)
    if done.returncode:
        raise UsageError(f"{path} is not inside a git repository; run this from a checkout of the code")
    top = Path(done.stdout.strip())
    if git(top, "rev-parse", "--is-shallow-repository") == "true":
        raise UsageError(f"{top} is a shallow clone, whose history lacks the commits to compare; run "
                         "`git fetch --unshallow` first")
    return top


def resolve(repo: Path, ref: str) -> str:
    """The commit ``ref`` names, or one UsageError line."""
    done = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=repo,
                          capture_output=True, text=True, check=False)
    if done.returncode or not done.stdout.strip():
        raise UsageError(f"{ref!r} names no commit of {repo}; give a branch, tag or commit that "
                         "`git log` shows")
    return done.stdout.strip()


@contextmanager
def worktree(repo: Path, commit: str) -> Iterator[Path]:
    """A detached checkout of ``commit`` in a temporary folder, locked with this process as its owner and
    removed (and unregistered) on the way out."""
    folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    path = folder / "checkout"
    owner = OWNER.format(pid=os.getpid(), host=socket.gethostname())
    try:
        git(repo, "worktree", "add", "--detach", "--quiet", "--lock", "--reason", owner, str(path), commit)
        yield path
    finally:
        _remove_checkout(repo, path)


def _remove_checkout(repo: Path, path: Path) -> None:
    """A checkout made by :func:`worktree` unregistered (locked, so forced twice) and deleted with its
    temporary folder and its bytecode."""
    subprocess.run(["git", "worktree", "remove", "--force", "--force", str(path)], cwd=repo,
                   capture_output=True, check=False)
    if path.parent.name.startswith(PREFIX):
        shutil.rmtree(path.parent, ignore_errors=True)
    subprocess.run(["git", "worktree", "prune"], cwd=repo, capture_output=True, check=False)
    bytecode.forget(path)


def remove_stale_checkouts(repo: Path) -> list[str]:
    """The checkouts that A/B runs killed before their cleanup left registered in ``repo`` (owned by a
    process of this host that is gone), removed; then ``git worktree prune`` forgets any whose folder was
    deleted. A checkout whose owner still runs, or runs on another host, is left alone."""
    stale = []
    for block in git(repo, "worktree", "list", "--porcelain").split("\n\n"):
        owner = OWNER_LINE.search(block)
        if owner and owner.group(2) == socket.gethostname() and not _alive(int(owner.group(1))):
            path = block.splitlines()[0].removeprefix("worktree ")
            _remove_checkout(repo, Path(path))
            stale.append(path)
    subprocess.run(["git", "worktree", "prune"], cwd=repo, capture_output=True, check=False)
    return stale


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def orders(seed: int, rounds: int) -> list[str]:
    """Each round's order of the sides (A base, B head): ABBA, each round the reverse of the one before,
    the first round's by a coin of ``seed``."""
    first = random.Random(seed).choice(("AB", "BA"))
    return [first if i % 2 == 0 else first[::-1] for i in range(rounds)]


def changed_files(repo: Path, base: str, head: str | None) -> list[str]:
    """The files that differ between commits ``base`` and ``head`` (None: the working tree, untracked
    files included), a renamed file under both its names."""
    names = git(repo, "diff", "--name-only", "--no-renames", "-z", base, *([head] if head else []))
    if head is None:
        names += "\0" + git(repo, "ls-files", "--others", "--exclude-standard", "-z")
    return [name for name in names.split("\0") if name]


def selects_nothing(repo: Path, commits: Sequence[str | None], benches: Sequence[str],
                    expr: str | None) -> bool:
    """True where ``-k expr`` selects no benchmark on any side (``commits``; None: the working tree), told
    before any benchmark runs by each side's collection: kept from an earlier A/B on this machine
    (perfkit.ab.collected), else collected now, every side at once (seconds). A side whose collection fails
    leaves the answer to the pairs (False), whose run says why it does not build."""
    if not expr or not benches:
        return False
    found: list[collected.Collected] = []
    seen: set[Path] = set()
    missing: list[tuple[Path | None, Path]] = []  # (where to keep it, None: not kept; the root to collect at)
    with ExitStack() as stack:
        for commit in commits:
            if commit is None and not _tree_holds(repo, "HEAD", benches):
                missing.append((None, repo))  # uncommitted changes to what collects: collected, not kept
                continue
            commit = commit or resolve(repo, "HEAD")
            kept = collected.cache_file(repo, collected.key(repo, commit, benches))
            if kept in seen:
                continue
            seen.add(kept)
            earlier = collected.read(kept)
            if earlier is not None:
                found.append(earlier)
                continue
            root = repo if _tree_holds(repo, commit, benches) else stack.enter_context(worktree(repo, commit))
            missing.append((kept, root))
        fresh = _collect(missing, benches) if missing else []
    if fresh is None:
        return False
    return not any(collected.selects_any(side, expr) for side in [*found, *fresh])


def _tree_holds(repo: Path, commit: str, benches: Sequence[str]) -> bool:
    """Whether the working tree holds what ``commit`` holds of the files that decide what ``benches``
    collect (no untracked file among them either)."""
    paths = [*(bench.split("::")[0] for bench in benches), *collected.COLLECTION_PATHS]
    if git(repo, "ls-files", "--others", "--exclude-standard", "--", *paths):
        return False
    return not subprocess.run(["git", "diff", "--quiet", commit, "--", *paths], cwd=repo, capture_output=True,
                              check=False).returncode


def _collect(sides: Sequence[tuple[Path | None, Path]],
             benches: Sequence[str]) -> list[collected.Collected] | None:
    """Each side's collection of ``benches`` (``(where it is kept or None, its root)``), all at once, kept
    where asked; None where one of them fails."""
    runs, results = [], []
    with tempfile.TemporaryDirectory(prefix="perfkit-collect-") as folder:
        for i, (_, root) in enumerate(sides):
            present = [path for path in benches if (root / path.split("::")[0]).exists()]
            out = Path(folder) / f"{i}.json"
            runs.append((present, out))
            if present:
                env = {**_side_env(root), collected.OUT_ENV: str(out)}
                results.append((collected.command(present, root), root, env))
        done = iter(stopping.run_all(results))
        found: list[collected.Collected] = []
        for (kept, _), (present, out) in zip(sides, runs):
            if not present:
                found.append([])
                continue
            if next(done).returncode not in (0, NO_TESTS_COLLECTED) or (side := collected.read(out)) is None:
                return None
            if kept is not None:
                collected.keep(kept, side)
            found.append(side)
    return found


def _side_env(root: Path) -> dict[str, str]:
    """The environment of a run at checkout ``root``: its own perfkit first, no bytecode written there."""
    paths = [str(root), *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "PYTHONDONTWRITEBYTECODE": "1"}


def run_side(side: Side, benches: Sequence[str], expr: str | None, out: Path,
             options: Sequence[str] = ()) -> ResultSet | None:
    """One fresh-process run of the selected benchmarks of ``side``: ``benches`` are bench paths or pytest
    node ids (None: it has none of them, or none of the bench files: a family added or removed between the
    sides is new or missing, not a failure); ``options``: more of pytest's (``--perfkit-explain``)."""
    present = [path for path in benches if (side.root / path.split("::")[0]).exists()]
    if not present:
        return None
    # rootdir at the checkout: the benchmark names are node ids relative to it, which later pairs run
    command = [sys.executable, "-m", "pytest", *present, "-q", "-p", "perfkit.plugin", "-p",
               "no:cacheprovider", f"--rootdir={side.root}", "--perfkit-baseline=none", "-m",
               "weekly or not weekly", f"--benchmark-json={out}", *options]
    if expr:
        command += ["-k", expr]
    done = stopping.run(command, side.root, _side_env(side.root))
    if done.returncode == NO_TESTS_COLLECTED:
        return None
    if done.returncode or not out.exists() or not out.stat().st_size:
        output, log = done.stdout + done.stderr, out.with_suffix(".log")
        log.write_text(output, encoding="utf-8")
        failed = "\nFAILED " in "\n" + output  # a test failed; else it did not collect
        raise BuildError(f"{side.label} {side.ref} ({side.commit[:10]}) "
                         f"{'fails its benchmarks' if failed else 'does not build'} (pytest exited "
                         f"{done.returncode}): {_why_failed(output)}; its whole output: {log}")
    return load.load(out)


def _why_failed(output: str) -> str:
    """What a failed benchmark run's output says went wrong: pytest's short summary lines (the failed and
    errored tests, each with its message), else its last two lines."""
    lines = output.strip().splitlines()
    failed = [line for line in lines if line.startswith(("FAILED ", "ERROR "))]
    if not failed:
        return " | ".join(lines[-2:])
    more = f" | and {len(failed) - 3} more" if len(failed) > 3 else ""
    return " | ".join(failed[:3]) + more


def refuse_absent(repo: Path, sides: Sequence[tuple[str, str | None]], benches: Sequence[str]) -> None:
    """Refuse a bench path that neither side holds (``sides``: each side's name and commit, None for the
    working tree): it was read as a selection of no benchmark."""
    def holds(commit: str | None, path: str) -> bool:
        if commit is None:
            return (repo / path).exists()
        return subprocess.run(["git", "cat-file", "-e", f"{commit}:{path}"], cwd=repo, capture_output=True,
                              check=False).returncode == 0

    for bench in benches:
        path = bench.split("::")[0].rstrip("/")
        if not any(holds(commit, path) for _, commit in sides):
            names = " or ".join(name for name, _ in sides)
            raise UsageError(f"--benches {bench}: no such file or folder in {names}; give a bench path "
                             "relative to the repository's top folder, e.g. benches/test_layers.py")


def _refuse_no_selection(repo: Path, sides: Sequence[tuple[str, str | None]], benches: Sequence[str],
                         expr: str | None) -> None:
    """Refuse bench paths neither side holds, and a ``-k`` that selects no benchmark on either side
    (``sides``: each side's name and commit, None for the working tree)."""
    refuse_absent(repo, sides, benches)
    try:
        nothing = selects_nothing(repo, [commit for _, commit in sides], benches, expr)
    except KeyboardInterrupt as exc:
        raise stopping.Stopped(stopping.signum_of(exc), "stopped while collecting the benchmarks -k selects, "
                               "before any pair: nothing written", None) from None
    if nothing:
        raise UsageError(f"-k {expr!r} selects no benchmark in {' '.join(benches)} on either side")


def check_input(rounds: int, benches: Sequence[str]) -> None:
    """Refuse what cannot make a fair A/B: too few rounds, or a bench path that does not lie inside each
    checkout (an absolute path would run the same files on both sides)."""
    if rounds < paired_test.MIN_PAIRS:
        raise UsageError(f"--rounds must be at least {paired_test.MIN_PAIRS} (a paired test needs that many "
                         f"pairs), not {rounds}")
    if rounds > paired_test.MAX_ROUNDS:
        raise UsageError(f"--rounds must be at most {paired_test.MAX_ROUNDS} (each pair is two fresh "
                         f"benchmark runs, and that many resolve a change far below any minimum effect), "
                         f"not {rounds}")
    for path in benches:
        if PurePosixPath(path).is_absolute() or ".." in PurePosixPath(path).parts:
            raise UsageError(f"--benches {path}: give bench paths relative to the repository's top folder "
                             "(each side runs them in its own checkout), e.g. benches/test_layers.py")


def output_folder(given: Path | None, prefix: str, written: str) -> Path:
    """``given`` made absolute (the benchmark runs and a bisect's probes run in other folders), or a new
    temporary folder (made only once the input was found good). A folder that holds ``written`` (what this
    command writes there: ab.json, a bisect's steps) from an earlier run is refused: its pair files would be
    overwritten in part and the rest read as this run's."""
    if given is not None and given.is_file():
        raise UsageError(f"--out {given} is a file; give a folder (made where it does not exist)")
    if given is not None and (given / written).exists():
        raise UsageError(f"--out {given} already holds {written} of an earlier run; give a new folder, or "
                         "remove that one to run again")
    return given.absolute() if given is not None else Path(tempfile.mkdtemp(prefix=prefix))


def ab(path: Path, base_ref: str, head_ref: str | None, out: Path | None, *, expr: str | None = None,
       rounds: int = 10, seed: int | None = None, benches: Sequence[str] = ("benches",),
       touched: bool = False, policy: Policy = DEFAULT_POLICY, explain: bool = False,
       floors: Mapping[paired_test.Key, float] | None = None,
       say: Callable[[str], None] = lambda _: None) -> AbReport:
    """Run the A/B and return what it writes to ``out/ab.json`` (None: a new temporary folder, said);
    ``head_ref`` None: the working tree as it is (uncommitted changes included); ``touched``: instead of
    ``benches``, the bench files the change touches (perfkit.ab.touched), none (nothing run) when it touches
    none; ``explain``: the benchmarks it flags profiled once more on each side after the pairs
    (perfkit.ab.explain); ``floors``: the only figures judged, each with its minimum effect in place of the
    policy's (perfkit bisect's hunt: half the regression it hunts). Stopped midway (Ctrl-C, or SIGTERM under
    perfkit.stopping.interruptible), it raises perfkit.stopping.Stopped with the report of the pairs finished
    by then."""
    check_input(rounds, benches)
    repo = repository(path)
    for stale in remove_stale_checkouts(repo):
        say(f"removed {stale}, a checkout left by an A/B that was killed")
    base_commit = resolve(repo, base_ref)
    head_commit = resolve(repo, head_ref or "HEAD")
    if touched:
        benches = benches_touched(changed_files(repo, base_commit, head_ref and head_commit))
        say(f"the change touches {' '.join(benches) or 'no bench file'}")
    _refuse_no_selection(repo, [(base_ref, base_commit), (head_ref or "the working tree",
                                                          head_ref and head_commit)], benches, expr)
    dirty = head_ref is None and bool(git(repo, "status", "--porcelain", "--untracked-files=no"))
    head_label = head_ref or WORKING_TREE + (" (uncommitted changes)" if dirty else "")
    commit = "" if dirty else f" ({head_commit[:10]})"
    say(f"A/B: base {base_ref} ({base_commit[:10]}) against head {head_label}{commit}, up to {rounds} "
        "pairs of fresh processes, one of each side")
    if head_commit == base_commit and not dirty:
        say("both sides are one commit: an A/A, which measures the noise alone (any flag is a false alarm)")
    out = output_folder(out, "perfkit-ab-out-", AB_JSON)
    say(f"results in {out}")
    report: AbReport | None = None
    try:
        with ExitStack() as stack:
            base = Side("base", base_ref, base_commit, _checkout(stack, repo, base_commit, bool(benches)))
            head = (Side("head", head_label, head_commit, repo) if head_ref is None else
                    Side("head", head_ref, head_commit, _checkout(stack, repo, head_commit, bool(benches))))
            out.mkdir(parents=True, exist_ok=True)
            seed = random.randrange(2**32) if seed is None else seed
            report = _report(base, head, seed, [], rounds, benches, policy, [], {}, {"base": [], "head": []},
                             [])
            baselines.write_json_atomically(out / AB_JSON, report.to_json())
            for report in _interleave(base, head, out, expr, rounds, seed, benches, policy, floors):
                say(ab_report.progress(report))
            if explain:
                from perfkit.ab.explain import explained  # it runs sides as this module does: imported late

                report = explained(report, base, head, out, say)
    except KeyboardInterrupt as exc:
        pairs = len(report.orders) if report is not None else 0
        removed = ("" if not benches else " and the checkout removed" if head_ref is None
                   else " and the checkouts removed")
        raise stopping.Stopped(stopping.signum_of(exc), f"{kept(out, pairs, rounds)}{removed}",
                               report if pairs else None) from None
    assert report is not None  # made before the first pair
    return report


def _checkout(stack: ExitStack, repo: Path, commit: str, runs: bool) -> Path:
    """A checkout of ``commit`` held until ``stack`` closes; none (``repo`` itself, where nothing is run or
    removed) where nothing ``runs``: a change that touches no bench."""
    return stack.enter_context(worktree(repo, commit)) if runs else repo


def kept(out: Path, pairs: int, rounds: int) -> str:
    """What an A/B stopped midway leaves in ``out``: the files written by then, named (none while the
    checkouts were still being made)."""
    files = [name for name in (AB_JSON, "base.json", "head.json") if (out / name).is_file()]
    if not files:
        return f"stopped before the first of {rounds} pairs, nothing written to {out}"
    return f"{pairs} finished pair(s) of {rounds} kept in {out} ({', '.join(files)})"


def _interleave(base: Side, head: Side, out: Path, expr: str | None, rounds: int, seed: int,
                benches: Sequence[str], policy: Policy,
                floors: Mapping[paired_test.Key, float] | None) -> Iterator[AbReport]:
    """The report after each pair, written to ``out/ab.json`` first (a run stopped midway keeps it)."""
    if not benches:
        return
    kept: dict[str, list[ResultSet]] = {"base": [], "head": []}
    tally = Tally()
    plan = orders(seed, rounds)
    selection = benches
    for i, order in enumerate(plan):
        got: dict[str, ResultSet | None] = {}
        for letter in order:
            side = base if letter == "A" else head
            got[side.label] = run_side(side, selection, expr, out / f"{side.label}-{i + 1}.json")
        b, h = got["base"], got["head"]
        if b is None and h is None:
            what = f"-k {expr!r} selects no benchmark" if expr else "there is no benchmark"
            raise UsageError(f"{what} in {' '.join(benches)} on either side")
        for label, results in got.items():
            if results is not None:
                kept[label].append(results)
                baselines.write_atomically(out / f"{label}.json", baselines.from_runs(kept[label]))
        this = gated(b, h, policy, floors) if b is not None and h is not None else None
        tally, rows = look(tally, this, i + 1, rounds, policy.alpha)
        report = _report(base, head, seed, plan[: i + 1], rounds, benches, policy, rows, tally.pairs, kept,
                         sorted(tally.ungated))
        baselines.write_json_atomically(out / AB_JSON, report.to_json())
        yield report
        selection = still_open(rows)
        if not selection:  # nothing left to pair: one round tells what is new and missing
            return


def still_open(rows: Sequence[paired_test.PairedRow]) -> list[str]:
    """The node ids of the benchmarks with a figure not yet settled: the next pair runs those alone, so a
    family decided in two pairs costs no more time while a noisy one takes the rounds it needs."""
    return sorted({row.benchmark for row in rows if not row.settled})


@dataclass(frozen=True)
class Tally:
    """What the pairs so far hold for the verdicts; ``look`` makes the next one."""

    pairs: Mapping[paired_test.Key, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    minimum: Mapping[paired_test.Key, float] = field(default_factory=dict)
    higher_better: frozenset[paired_test.Key] = frozenset()
    lone: Mapping[paired_test.Key, paired_test.PairedRow] = field(default_factory=dict)
    ungated: frozenset[str] = frozenset()
    # the rows settled at an earlier look: their figures stopped there and take no more pairs
    decided: Mapping[paired_test.Key, paired_test.PairedRow] = field(default_factory=dict)
    # what disturbed a run of a figure's pairs, the latest said (PairedValue.disturbed)
    disturbed: Mapping[paired_test.Key, str] = field(default_factory=dict)

    def add(self, this: Gated) -> Tally:
        """This pair's values added to the figures still open."""
        fresh = [one for one in this.pairs if one.key not in self.decided]
        pairs = dict(self.pairs)
        for one in fresh:
            pairs[one.key] = (*pairs.get(one.key, ()), one.values)
        return Tally(pairs, {**self.minimum, **{one.key: one.minimum for one in fresh}},
                     self.higher_better | {one.key for one in fresh if one.higher_better},
                     {**self.lone, **this.lone}, self.ungated | set(this.ungated), self.decided,
                     {**self.disturbed, **{one.key: one.disturbed for one in fresh if one.disturbed}})


def look(tally: Tally, this: Gated | None, pair: int, rounds: int,
         alpha: float) -> tuple[Tally, list[paired_test.PairedRow]]:
    """The look after pair ``pair`` (from 1) of ``rounds``: the tally with this pair's values (``this``; None
    where a side ran no benchmark) and every row, sorted; a row settled here is frozen in the tally. The
    loop's whole stopping rule, pure, so the simulations of tests/test_ab_spending.py drive this very rule:
    the next pair runs ``still_open(rows)``, none: the A/B is done."""
    if this is not None:
        tally = tally.add(this)
    rows = paired_test.verdicts(tally.pairs, tally.minimum, alpha, tally.higher_better, rounds=rounds,
                           final=pair == rounds, decided=tally.decided, disturbed=tally.disturbed)
    decided = {(row.benchmark, row.figure): row for row in rows if row.settled}
    rows = sorted([*rows, *(row for key, row in tally.lone.items() if key not in tally.pairs)],
                  key=lambda row: (row.benchmark, row.figure))
    return replace(tally, decided=decided), rows


@dataclass(frozen=True)
class PairedValue:
    key: paired_test.Key  # (benchmark, figure)
    values: tuple[float, float]  # (base, head) in this pair
    minimum: float  # the minimum effect worth a verdict
    higher_better: bool
    # what disturbed either side's run (a busy host, a hot GPU), in the judge's words (judge.held_back),
    # head's first: a figure that came out worse is not called regressed on it; None where neither was
    disturbed: str | None = None


@dataclass(frozen=True)
class Gated:
    pairs: tuple[PairedValue, ...]
    # a gating figure one side lacks: unknown, more pairs won't tell
    lone: dict[paired_test.Key, paired_test.PairedRow]
    ungated: tuple[str, ...]  # benchmarks with no gating figure (FLOP counting): shown, not judged


def gated(base: ResultSet, head: ResultSet, policy: Policy,
          floors: Mapping[paired_test.Key, float] | None = None) -> Gated:
    """One pair's values of every figure the nightly judge gates on, for each benchmark both sides ran: the
    judge's own pairing (perfkit.verdict.matching), so the A/B judges what the nightly judges: the time, or
    the kernel's own time or SM cycles where the bench names them instead, and the metrics declared to gate
    (peak memory, a capacity, a share reached), a gate of either side counting; with what disturbed either
    run, recorded as the judge reads it (the rounds' own spread is no excuse here: the pairs are fresh
    processes, as a confirmation's re-runs are, perfkit.verdict.unsettled_rounds). ``floors``: the only
    figures judged, each with its minimum effect in place of the policy's."""
    found: list[PairedValue] = []
    lone: dict[paired_test.Key, paired_test.PairedRow] = {}
    pairing = pair(base, head)
    entries = (head.by_name(), base.by_name())
    for fig in pairing.figures:
        key = (fig.benchmark, fig.figure)
        if not fig.judged or (floors is not None and key not in floors):
            continue
        least = minimum_effect(fig, policy) if floors is None else floors[key]
        if fig.measured_differently is not None:  # another method or clock on one side: never paired
            lone[key] = paired_test.PairedRow(fig.benchmark, 0, None, Verdict.MEASURED_DIFFERENTLY, least,
                                         settled=True, note=fig.measured_differently, figure=fig.figure)
        elif fig.baseline and fig.current:
            disturbed = held_back(d for side in entries for d in side[fig.benchmark].disturbances)
            found.append(PairedValue(key, (fig.baseline[0], fig.current[0]), least, fig.better == "higher",
                                     disturbed))
        else:
            only = "head" if fig.current else "base"
            lone[key] = paired_test.PairedRow(fig.benchmark, 0, None, Verdict.UNKNOWN, least, settled=True,
                                         note=f"a gating figure only {only} has: not compared",
                                         figure=fig.figure)
    judged = {fig.benchmark for fig in pairing.figures if fig.judged}
    return Gated(tuple(found), lone, tuple(name for name in pairing.common if name not in judged))


def _report(base: Side, head: Side, seed: int, done: list[str], rounds: int, benches: Sequence[str],
            policy: Policy, rows: list[paired_test.PairedRow],
            pairs: Mapping[paired_test.Key, Sequence[tuple[float, float]]], kept: dict[str, list[ResultSet]],
            ungated: list[str]) -> AbReport:
    names = {label: {b.fullname for r in sets for b in r.benchmarks} for label, sets in kept.items()}
    values: dict[str, dict[str, tuple[tuple[float, float], ...]]] = {}
    for (benchmark, figure), runs in pairs.items():
        values.setdefault(benchmark, {})[figure] = tuple(runs)
    return AbReport(
        base=SideRef(base.ref, base.commit), head=SideRef(head.ref, head.commit), seed=seed,
        orders=tuple(done), rounds=rounds, benches=tuple(benches), test=paired_test.TEST, why=paired_test.WHY,
        alpha=policy.alpha, spending=paired_test.SPENDING, interval=paired_test.INTERVAL,
        minimum_effect=MinimumEffect(policy.bound_threshold, policy.threshold), benchmarks=tuple(rows),
        pairs=values, not_judged=tuple(ungated), new=tuple(sorted(names["head"] - names["base"])),
        missing=tuple(sorted(names["base"] - names["head"])))

