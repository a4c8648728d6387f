"""What a prediction's calibration saw, and how far outside it a prediction lies.

The calibrated range is a `[calibration] file`'s `ranges` and `machine` (traces of the reference
engine or vLLM), or, for the roofline, the setup of the measured rows its factors were fitted to
(the experiment file itself, before `--set`). Distance is counted in octaves beyond the range on
each axis (k, context length, top-k, batch), plus half-units of temperature; a different machine
(CPU model or threads, GPU, TP, quantization) is its own term. `mtpsim.uncertainty.draws` turns
both into a model-discrepancy spread, so intervals widen with the distance.
"""

from __future__ import annotations

import math
import os
import platform
from dataclasses import field
from pathlib import Path
from typing import Any

from mtpsim.dataclass import dataclass
from mtpsim.report.numbers import compact
from mtpsim.spec import Experiment


def machine_info(device: str = "cpu", threads: int | None = None) -> dict[str, Any]:
    """The machine a run happens on: CPU model and threads, or the GPU's name."""
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    out: dict[str, Any] = {"device": device, "cpu": cpu, "cores": os.cpu_count()}
    if threads is not None:
        out["threads"] = threads
    if device.startswith("cuda"):
        import torch  # only for a CUDA run, which has torch already

        out["gpu"] = torch.cuda.get_device_name()
    return out


@dataclass(frozen=True, slots=True)
class Domain:
    """The calibrated range: per axis [lo, hi]; `machine` what it was measured on."""

    source: str
    axes: dict[str, tuple[float, float]]
    machine: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Extrapolation:
    distance: float  # octaves (and half-units of temperature) beyond the range, summed
    machine_differs: bool
    notes: tuple[str, ...]  # one per axis outside the range, e.g. "k 5 > 4"
    axes: dict[str, float] = field(default_factory=dict)  # axis -> its part of `distance`
    probe_rescaled: bool = False  # step costs rescaled by the machine-speed probe ratio

    @property
    def flagged(self) -> bool:
        return self.distance > 0 or self.machine_differs

    @property
    def context(self) -> float:
        """Octaves of context length beyond the range (the axis acceptance extrapolates worst on)."""
        return self.axes.get("context", 0.0)


def setup_axes(exp: Experiment) -> dict[str, tuple[float, float]]:
    """The experiment's own range on each axis."""
    w, e = exp.workload, exp.engine
    spread_in = w.input_len_spread if w.input_len_distribution == "uniform" else 0.0
    lo = w.input_len * (1 - spread_in)
    hi = w.input_len * (1 + spread_in) + w.output_len
    batch = min(e.max_num_seqs, w.max_concurrency or w.num_prompts, w.num_prompts)
    axes = {"k": (exp.k, exp.k), "context": (max(lo, 1.0), hi),
            "top-k": (exp.index_topk, exp.index_topk), "batch": (1.0 if batch > 1 else batch, batch),
            "temperature": (w.temperature, w.temperature)}
    if exp.k == 0:  # plain decoding drafts nothing: no acceptance to extrapolate along k
        del axes["k"]
    return axes


def exp_machine(exp: Experiment) -> dict[str, Any]:
    """What the prediction is about: for the reference engine on the CPU, this host."""
    if exp.calibration.file:
        if exp.reference.device == "cuda":  # which GPU a run would get is unknown without torch
            return {}
        return {k: v for k, v in machine_info("cpu", exp.reference.threads or None).items()
                if k in ("cpu", "threads")}
    return {"gpu": exp.hardware.name, "tp": exp.engine.tp, "quantization": exp.model.quantization}


def domain_of(exp: Experiment, calibration: Any | None, file_exp: Experiment | None) -> Domain | None:
    """The calibrated range of `exp`'s prediction; None when nothing was calibrated."""
    if calibration is not None:
        r = calibration.ranges
        axes = {"k": _span(r.get("k")), "context": _span(r.get("context_len")),
                "top-k": _span(r.get("index_topk")), "batch": _span(r.get("num_reqs"))}
        if r.get("temperature"):
            axes["temperature"] = _span(r["temperature"])
        return Domain(f"calibration {calibration.path}",
                      {k: v for k, v in axes.items() if v is not None},
                      dict(getattr(calibration, "machine", {}) or {}))
    if file_exp is not None and file_exp.calibration.measured:
        return Domain(f"measured rows of {file_exp.source}", setup_axes(file_exp),
                      exp_machine(file_exp))
    return None


def _span(v: Any) -> tuple[float, float] | None:
    if not v:
        return None
    return float(min(v)), float(max(v))


def axis_distances(exp: Experiment, dom: Domain) -> tuple[float, list[str], dict[str, float]]:
    """(octaves beyond `dom` summed over axes, plus half-units of temperature; a note per axis
    outside, e.g. "k 5 outside 4 (0.3)"; axis -> its part)."""
    mine = setup_axes(exp)
    dist, notes, per_axis = 0.0, [], {}
    for axis, (lo, hi) in dom.axes.items():
        if axis not in mine:
            continue
        a, b = mine[axis]
        if axis == "temperature":
            d = (max(0.0, lo - a) + max(0.0, b - hi)) / 0.5
            shown = f"{a:g}" if a == b else f"{a:g}-{b:g}"
        else:
            d = (math.log2(lo / a) if a < lo else 0.0) + (math.log2(b / hi) if b > hi else 0.0)
            shown = f"{a:,.0f}" if a == b else f"{a:,.0f}-{b:,.0f}"
        if d > 1e-9:
            dist += d
            per_axis[axis] = d
            seen = compact(lo) if lo == hi else f"{compact(lo)}-{compact(hi)}"
            notes.append(f"{axis} {shown} outside {seen} ({d:.1f})")
    return dist, notes, per_axis


def extrapolation(exp: Experiment, dom: Domain | None) -> Extrapolation:
    """How far `exp` lies outside `dom` (nothing calibrated: no extrapolation term)."""
    if dom is None:
        return Extrapolation(0.0, False, ())
    dist, notes, per_axis = axis_distances(exp, dom)
    here = exp_machine(exp)
    differs = False
    if not here:
        notes.append("machine not compared (a CUDA run's GPU is not known before it runs)")
    elif dom.machine:
        diff = [k for k in here if k in dom.machine and str(here[k]) != str(dom.machine[k])]
        if diff:
            differs = True
            notes.append("machine differs: " + ", ".join(
                f"{k} {here[k]} vs {dom.machine[k]}" for k in diff))
    elif exp.calibration.file:
        differs = True
        notes.append("machine unknown: the calibration file does not record it")
    theirs, mine = dom.machine.get("probe_wall_s"), exp.calibration.probe_s
    if mine and isinstance(theirs, int | float) and theirs > 0:
        # the probe measures the speed the CPU string only names: it decides, either way
        ratio = mine / theirs
        differs = abs(math.log(ratio)) > math.log(1 + PROBE_TOLERANCE)
        notes = [n for n in notes if not n.startswith("machine differs")]
        notes.append(f"machine speed: probe {mine:.3g} s vs the calibration's {theirs:.3g} s "
                     f"(x{ratio:.2f}; step costs rescaled by it)")
        return Extrapolation(dist, differs, tuple(notes), per_axis, probe_rescaled=True)
    if mine:
        notes.append("machine speed not compared: the calibration records no probe figure")
    return Extrapolation(dist, differs, tuple(notes), per_axis)


# Probe ratios within this of 1 count as the same machine speed: the probe's own run-to-run
# spread on one machine (benchmarks/probe_drift.py measures it; docs/uncertainty.md).
PROBE_TOLERANCE = 0.10


# A plain simulate says how far its calibration is from the spec from this many octaves (summed
# over axes) outside the calibrated range: one doubling beyond what the traces held.
FAR_OCTAVES = 1.0


def calibration_warning(exp: Experiment, calibration: Any) -> str | None:
    """One line when a plain `simulate` prices `exp` with a calibration (a --trace fit or a
    `[calibration] file`) measured far from it: on another machine than the spec's GPUs (a
    reference-engine CPU calibration applied to a production GPU spec priced its serving in
    days, with no word), or FAR_OCTAVES or more outside its range. None when close. A spec
    whose engine runs on this host (the reference engine) is held against the range only: the
    machine-speed probe speaks for its machine."""
    from mtpsim.spec.sections import SCHEDULERS

    dom = domain_of(exp, calibration, None)
    if dom is None:
        return None
    dist, notes, _ = axis_distances(exp, dom)
    machine = dom.machine
    where = machine_text(machine)
    theirs = str(machine.get("gpu", ""))
    gpus = f"{exp.engine.tp} x {exp.hardware.name}"
    other = not SCHEDULERS[exp.engine.scheduler].on_host and machine.get("device") is not None \
        and (str(machine["device"]).startswith("cpu") or exp.hardware.name.lower() not in theirs.lower())
    if not other and dist < FAR_OCTAVES:
        return None
    what = [f"its machine, not this spec's {gpus}"] if other else []
    engine = f"{calibration.engine} engine " if getattr(calibration, "engine", "") else ""
    target = gpus if other else "these settings"
    path = getattr(calibration, "path", "<memory>")
    named = "the --trace fit" if path == "<memory>" else f"calibration {path}"
    return (f"warning: priced with {named} ({engine}traces on "
            f"{where}), far from this spec: {'; '.join(what + notes)}. Its step costs and "
            f"acceptance replace the spec's models, so the figures above are extrapolated from that "
            f"calibration, not a prediction for {target}")


def machine_text(machine: dict[str, Any]) -> str:
    """`a CPU (AMD EPYC, 1 thread)`, `a GPU (NVIDIA B200)`, or `an unrecorded machine`."""
    if machine.get("gpu"):
        return f"a GPU ({machine['gpu']})"
    if str(machine.get("device", "")).startswith("cpu"):
        threads = machine.get("threads")
        count = f", {threads} thread{'s' * (threads != 1)}" if isinstance(threads, int) else ""
        return f"a CPU ({machine.get('cpu', '?')}{count})"
    return "an unrecorded machine"
