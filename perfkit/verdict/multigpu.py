"""A run of several GPUs as the roofline model reads it: the launch costs a one-GPU run of its GPU lends it,
and what a modelled row says of the roofs it borrowed or read off the links.

A multi-GPU baseline runs no one-element kernel (the timer-fidelity family is a one-GPU benchmark), so it
measured no launch cost and every network it trains would have no expectation. A launch is mostly the host's
and the driver's work: the one-GPU baseline of the same GPU (by the name its fingerprint gives) lends its own,
as a device never measured is lent the launch cost of the device a prediction starts from
(:meth:`perfkit.verdict.expected.Roofs.with_launch_of`, one mechanism), and each modelled row says whose it
read, since a comparison's table prints no roofs' notes. No I/O here: the caller passes the runs that may
lend.
"""
from __future__ import annotations

from collections.abc import Sequence

from perfkit.resultfile import datasheet
from perfkit.resultfile.model import ResultSet
from perfkit.verdict.expected import Roofs, Work, launch_costs


def launch_lender(results: ResultSet, candidates: Sequence[ResultSet]) -> ResultSet | None:
    """The run among ``candidates`` that lends ``results`` its launch costs: one GPU of the same name that
    measured them, of the same profile first; None where ``results`` measured its own or none fits."""
    if results.info.device != "cuda" or launch_costs(results):
        return None
    kind = (1, results.info.fingerprint.gpu_name)
    fits = [c for c in candidates
            if c.info.device == "cuda" and (c.info.fingerprint.gpu_count, c.info.fingerprint.gpu_name) == kind
            and c.hardware_id != results.hardware_id and launch_costs(c)]
    return min(fits, key=lambda c: (c.profile != results.profile, c.hardware_id), default=None)


def roofs_of(results: ResultSet, lenders: Sequence[ResultSet] = ()) -> Roofs:
    """``results``' own roofs; where it measured no launch cost, with those of the one-GPU run of its GPU
    among ``lenders`` (said in the roofs' notes and beside each modelled row)."""
    roofs = Roofs.of(results)
    lender = launch_lender(results, lenders)
    if lender is None:
        return roofs
    why = f"{results.hardware_id} measured none: the one-GPU baseline of its GPU lends its own"
    return roofs.with_launch_of(Roofs.of(lender), why)


def row_notes(work: Work, then: Roofs, now: Roofs) -> tuple[str, ...]:
    """What a modelled row says of its roofs beyond the split of its time: each all-reduce's bus bandwidth
    on both devices and where it came from, and the launch costs a side borrowed from a device that is
    neither side (a datasheet's device, lent the other side's own, says so in the prediction's notes)."""
    links = sorted({step.roof for step in work.steps if datasheet.allreduce_gpus(step.roof) is not None})
    notes = [f"all-reduce busbw {then.link_source(key)} -> {now.link_source(key)}" for key in links]
    sides = (then.device, now.device)
    lenders = [r.launch_lender for r in (then, now) if r.launch_lender and r.launch_lender not in sides]
    if lenders:
        notes.append(f"launch costs lent by {' and '.join(dict.fromkeys(lenders))}")
    return tuple(notes)
