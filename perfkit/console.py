"""What the model and machine commands print (``perfkit hw``, ``memory``, ``flops``, ``predict``).

These render measuring-side objects, so they live beside the CLI rather than in results/, which
never imports torch.
"""
from __future__ import annotations

from perfkit.measure.memory import MiB, PeakMemory
from perfkit.render.tables import fmt_time, text_table
from perfkit.resultfile import datasheet
from perfkit.resultfile.fingerprint import Fingerprint
from perfkit.store.baselines import LOCAL_SAVE, StoredCeilings
from perfkit.workloads.estimate import MemoryEstimate, largest_batch
from perfkit.workloads.flops import CONVENTION, FlopTable
from perfkit.workloads.paleo import Prediction


def render_hardware(fingerprint: Fingerprint, stored: StoredCeilings) -> str:
    """``perfkit hw``: the fingerprint, the stored measured ceilings labelled by whose they are (this
    machine's, or another machine's under its hardware id) and the datasheet table with sources."""
    fields = fingerprint.to_json().items()
    parts = ["Fingerprint", text_table(["field", "value"], [[k, str(v)] for k, v in fields])]
    ceilings = stored.ceilings
    if len(ceilings):
        parts += [f"Measured ceilings of {stored.whose} (from {stored.path})",
                  text_table(["ceiling", "value", "from"], [[k, f"{ceilings.found[k].value:.4g}",
                                                            ceilings.found[k].describe()] for k in ceilings])]
        if stored.change:
            parts[-1] += ("\nThis machine's own: run the benchmarks with "
                          f"--perfkit-save-baseline={LOCAL_SAVE} (its own baseline, in .perfkit/baselines/)")
    else:
        # never a local baseline of the ceilings alone: it would judge every later run, all else `new`, and
        # where one of the hardware is committed (the x2 and x4 ones hold no ceilings) it would replace it
        if stored.path.exists():
            said = (f"{stored.path} holds none); add them to it: `pytest benches/test_ceilings.py "
                    f"--benchmark-json=ceilings.json && perfkit baseline save ceilings.json --merge`")
        else:
            said = (f"no baseline of {fingerprint.hardware_id} in {stored.path.parent}, nor this machine's "
                    "own); measure them with this machine's own baseline: `pytest benches/ "
                    f"--perfkit-save-baseline={LOCAL_SAVE}`")
        parts.append(f"Measured ceilings: none stored ({said}")
    precisions = ("fp64",) + datasheet.PRECISIONS
    rows = [[s.key, s.name, f"{s.memory_gb:g}", f"{s.bandwidth_gbps:g}"]
            + [f"{s.tflops[p]:g}" if p in s.tflops else "-" for p in precisions] for s in datasheet.GPUS]
    parts += ["Datasheet peaks (dense TFLOP/s; bandwidth GB/s)",
              text_table(["key", "name", "GB", "GB/s"] + list(precisions), rows),
              "Sources:\n" + "\n".join(f"  {s.key}: {s.source}" for s in datasheet.GPUS)]
    return "\n\n".join(parts)


def render_memory(estimate: MemoryEstimate, measured: PeakMemory | None) -> str:
    """``perfkit memory``: the estimate term by term, and the measured peak beside it when there is one."""
    rows = [[term, f"{nbytes / MiB:,.1f}"] for term, nbytes in estimate.terms().items()]
    rows.append(["total estimate", f"{estimate.total / MiB:,.1f}"])
    if measured is not None:
        rows += [["measured peak allocated", f"{measured.allocated / MiB:,.1f}"],
                 ["measured peak reserved", f"{measured.reserved / MiB:,.1f}"],
                 ["allocated / estimate", f"{measured.allocated / estimate.total:.3f}"]]
    shape = "x".join(map(str, estimate.input_shape))
    title = (f"{estimate.model}, batch {estimate.batch}, input {shape}, float32, {estimate.optimizer} "
             f"(activations: {estimate.to_json()['activations_method']})")
    return title + "\n\n" + text_table(["term", "MiB"], rows) + "\n" + _beyond_every_gpu(estimate)


def _beyond_every_gpu(estimate: MemoryEstimate) -> str:
    """A note under an estimate larger than the largest GPU in the datasheet: the figure is arithmetic, not
    a step any card could run."""
    card = max(datasheet.GPUS, key=lambda spec: spec.memory_gb)
    if estimate.total <= card.memory_gb * 1e9:
        return ""
    fits = largest_batch(estimate, card.memory_gb * 1e9)
    return (f"\nnote: {estimate.total / 1e9:,.0f} GB is more than any GPU in the datasheet holds (the "
            f"largest, {card.name}, has {card.memory_gb:g} GB); by this estimate at most batch {fits:,} "
            "fits in it\n")


def render_flops(table: FlopTable, per_layer: bool) -> str:
    """``perfkit flops``: totals with the convention, optionally every layer with its source."""
    head = [f"{table.model}, input {'x'.join(map(str, table.input_shape))}: {CONVENTION}", "",
            text_table(["total", "value"], [
                ["forward FLOPs", f"{table.total_flops:,}"], ["forward MACs", f"{table.total_macs:,}"],
                ["counted by FlopCounterMode (FLOPs)", f"{table.counted_flops:,}"],
                ["analytic only (ReLU, pooling, batch-norm)", f"{table.uncounted_flops:,}"],
                ["forward + backward FLOPs", f"{table.forward_backward_flops:,}"],
                ["parameters", f"{table.params:,}"], ["convolution share", f"{table.conv_flop_share:.2%}"]])]
    if per_layer:
        rows = [[r.name, r.type, "x".join(map(str, r.output_shape)), f"{r.params:,}", f"{r.flops:,}",
                 f"{r.macs:,}", f"{r.share:.2%}", r.source] for r in table.rows]
        head += [
            "",
            text_table(["layer", "type", "output", "params", "FLOPs", "MACs", "share", "counted by"], rows),
        ]
    return "\n".join(head) + "\n"


def render_prediction(prediction: Prediction) -> str:
    """``perfkit predict``: the predicted time with the peaks and their source."""
    p = prediction.to_json()
    lines = [(f"{p['model']} on {p['gpu_name']} ({p['precision']}, PPP {p['ppp']:g}), input "
             f"{'x'.join(map(str, p['input_shape']))}"),
             (f"  predicted forward time: {fmt_time(p['predicted_s'])} (pipelined: max of compute and memory "
             f"per layer); serial bound {fmt_time(p['predicted_serial_s'])}"),
             f"  {p['total_flops']:,} FLOPs at {p['peak_tflops']:g} TFLOP/s, {p['bandwidth_gbps']:g} GB/s",
             f"  peaks from: {p['source']}",
             f"  {CONVENTION}"]
    return "\n".join(lines) + "\n"
