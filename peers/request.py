"""What kvb asks of the peer runner: one sweep point, written by kvb as request.json in a folder of its own, with the
check case beside it (harness/kinds/peer_request.h writes both).

request.json fields (a bad or missing one raises RequestError naming it and the allowed values):
  kvb_peer_request  1 (the version of this contract)
  kind              "decode"
  variant           the peer variant (peers/registry.py), e.g. "fla_recurrent"
  shape             {"heads_qk": H, "heads_v": HV, "head_dim_k": K, "head_dim_v": V}
  batch, layers     requests per step; layers per model step, each with its own state pool
  groups            model replicas a step rotates through (kvb's l2_rotation: cold L2), >= 1
  seed              seeds the states drawn on the device
  l2                "cold" (flush L2, untimed, before each sample) or "hot"
  l2_bytes          the device's L2 size in bytes (the flush writes and reads twice that)
  device            CUDA device index
  sampling          {"min_samples", "max_samples", "max_seconds", "target_noise_pct", "min_clock_fraction",
                    "max_throttled_seconds"} (harness/measure/sampling.h SamplingRule; the last two optional, with
                    sampling.h's defaults 0.75 and 30 s when absent)
  steps             {"cycle", "warmup_cycles", "warmup_min_ms", "sample_min_ms"} (harness/measure/step_timing.h)
  tolerance         {"state": ..., "output": ...} per-head relative errors a checked row may reach (core/tolerances.h)
  check_rows        the batch rows kvb computed the reference for, ascending
  tensors           name -> {"file", "dtype" (float32 | float64 | int32), "shape"}: little-endian arrays in this
                    folder (harness/workloads/peer_case.h writes them). One layer's inputs for every row, exact in
                    the kernels' dtypes: q, k [N, H, K], v [N, HV, V], a, b [N, HV] (bf16 values), A_log, dt_bias
                    [HV], scale [1] (fp32 values); slots [N] (each row's pool slot, a permutation of 0..N-1, for
                    peers that index a pool); the checked rows' states before the step, check_states [R, HV, K, V]
                    (fp32 values, layout kv); the float64 reference after the step, ref_o [R, HV, V] and ref_states
                    [R, HV, K, V] (layout kv).
  phase_file        optional: a file the runner rewrites with "timing" when sampling starts and "done" when it ends
                    (kvb samples the SM clock then)
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any, Dict, List

import numpy as np

from peers.protocol import SamplingRule, StepRule

CONTRACT_VERSION = 1
KINDS = ("decode",)
DTYPES = {"float32": "<f4", "float64": "<f8", "int32": "<i4"}
# Tensors every decode request carries, with their shapes in terms of the point (N rows, R checked rows).
DECODE_TENSORS = {
    "q": ("N", "H", "K"), "k": ("N", "H", "K"), "v": ("N", "HV", "V"), "a": ("N", "HV"), "b": ("N", "HV"),
    "A_log": ("HV",), "dt_bias": ("HV",), "scale": (1,), "slots": ("N",),
    "check_states": ("R", "HV", "K", "V"), "ref_o": ("R", "HV", "V"), "ref_states": ("R", "HV", "K", "V"),
}


class RequestError(ValueError):
    """A request field or tensor file that is missing or wrong; the message names it and what is allowed."""


@dataclass(frozen=True)
class Shape:
    """Head counts and head dims of one GDN layer (core/gdn_shape.h GdnShape)."""

    heads_qk: int
    heads_v: int
    head_dim_k: int
    head_dim_v: int


@dataclass
class Request:
    """A parsed request.json; `folder` holds it and its tensor files."""

    folder: str
    kind: str
    variant: str
    shape: Shape
    batch: int
    layers: int
    groups: int
    seed: int
    l2: str
    l2_bytes: int
    device: int
    sampling: SamplingRule
    steps: StepRule
    cycle: int
    tol_state: float
    tol_output: float
    check_rows: List[int]
    tensors: Dict[str, Dict[str, Any]]
    phase_file: str = ""

    def tensor(self, name: str) -> np.ndarray:
        """The named tensor as a numpy array of its shape. Raises RequestError when absent or of the wrong size."""
        spec = self.tensors.get(name)
        if spec is None:
            raise RequestError(f"request tensors: no '{name}' (allowed: {', '.join(sorted(self.tensors))})")
        path = os.path.join(self.folder, spec["file"])
        try:
            data = np.fromfile(path, dtype=DTYPES[spec["dtype"]])
        except OSError as e:
            raise RequestError(f"request tensors.{name}: cannot read {path}: {e.strerror}") from None
        shape = tuple(spec["shape"])
        if data.size != int(np.prod(shape)):
            raise RequestError(f"request tensors.{name}: {path} holds {data.size} values, shape {list(shape)} needs "
                               f"{int(np.prod(shape))}")
        return data.reshape(shape)

    def phase(self, text: str) -> None:
        """Writes `text` to the phase file when the request names one."""
        if self.phase_file:
            with open(self.phase_file, "w") as f:
                f.write(text + "\n")


def _field(d: Dict[str, Any], key: str, where: str, kind, allowed: str):
    if key not in d:
        raise RequestError(f"{where}{key}: missing (allowed: {allowed})")
    v = d[key]
    ok = isinstance(v, kind) and not (kind is int and isinstance(v, bool))
    if kind is float:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool)
    if not ok:
        raise RequestError(f"{where}{key} = {v!r} is not allowed (allowed: {allowed})")
    return v


def _positive_int(d, key, where="request "):
    v = _field(d, key, where, int, "an integer >= 1")
    if v < 1:
        raise RequestError(f"{where}{key} = {v} is not allowed (allowed: an integer >= 1)")
    return v


def _positive_float(d, key, where="request "):
    v = float(_field(d, key, where, float, "a number > 0"))
    if not v > 0:
        raise RequestError(f"{where}{key} = {v} is not allowed (allowed: a number > 0)")
    return v


def _optional_number(d, key, default: float, low: float, high: float, where: str, allowed: str) -> float:
    """d[key] as a finite float in (low, high], or `default` when absent. Raises RequestError naming the field."""
    if key not in d:
        return default
    v = float(_field(d, key, where, float, allowed))
    if not (low < v <= high and math.isfinite(v)):
        raise RequestError(f"{where}{key} = {v} is not allowed (allowed: {allowed})")
    return v


def _sampling_rule(d: Dict[str, Any]) -> SamplingRule:
    """The request's "sampling" object as a SamplingRule; the clock floor and the throttled-time limit default to
    sampling.h's when absent (requests written before they were carried)."""
    where = "request sampling."
    default = SamplingRule()
    return SamplingRule(
        min_samples=_positive_int(d, "min_samples", where), max_samples=_positive_int(d, "max_samples", where),
        max_seconds=_positive_float(d, "max_seconds", where),
        target_noise_pct=_positive_float(d, "target_noise_pct", where),
        min_clock_fraction=_optional_number(d, "min_clock_fraction", default.min_clock_fraction, 0.0, 1.0, where,
                                            "a number > 0 and <= 1"),
        max_throttled_seconds=_optional_number(d, "max_throttled_seconds", default.max_throttled_seconds, 0.0,
                                               math.inf, where, "a finite number of seconds > 0"))


def load_request(path: str) -> Request:
    """Reads and checks request.json at `path`. Raises RequestError naming the file or field."""
    try:
        with open(path) as f:
            d = json.load(f)
    except OSError as e:
        raise RequestError(f"{path}: cannot read the request: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise RequestError(f"{path}: not JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(d, dict):
        raise RequestError(f"{path}: the request must be a JSON object")
    version = d.get("kvb_peer_request")
    if version != CONTRACT_VERSION:
        raise RequestError(f"request kvb_peer_request = {version!r} is not allowed (allowed: {CONTRACT_VERSION})")
    kind = _field(d, "kind", "request ", str, ", ".join(KINDS))
    if kind not in KINDS:
        raise RequestError(f"request kind = {kind!r} is not allowed (allowed: {', '.join(KINDS)})")
    sh = _field(d, "shape", "request ", dict, "an object of heads_qk, heads_v, head_dim_k, head_dim_v")
    shape = Shape(*(_positive_int(sh, k, "request shape.") for k in ("heads_qk", "heads_v", "head_dim_k",
                                                                      "head_dim_v")))
    if shape.heads_v % shape.heads_qk:
        raise RequestError(f"request shape.heads_v = {shape.heads_v} is not allowed (allowed: a multiple of "
                           f"heads_qk = {shape.heads_qk})")
    l2 = _field(d, "l2", "request ", str, "cold, hot")
    if l2 not in ("cold", "hot"):
        raise RequestError(f"request l2 = {l2!r} is not allowed (allowed: cold, hot)")
    sampling = _field(d, "sampling", "request ", dict, "an object")
    steps = _field(d, "steps", "request ", dict, "an object")
    tol = _field(d, "tolerance", "request ", dict, "an object of state, output")
    tensors = _field(d, "tensors", "request ", dict, "an object of name -> {file, dtype, shape}")
    for name, spec in tensors.items():
        if not isinstance(spec, dict) or spec.get("dtype") not in DTYPES or not isinstance(spec.get("file"), str) \
                or not isinstance(spec.get("shape"), list):
            raise RequestError(f"request tensors.{name} = {spec!r} is not allowed (allowed: {{file, dtype ("
                               f"{', '.join(DTYPES)}), shape}})")
    rows = _field(d, "check_rows", "request ", list, "a list of row indices")
    batch = _positive_int(d, "batch")
    if not rows or any(not isinstance(r, int) or r < 0 or r >= batch for r in rows) or rows != sorted(set(rows)):
        raise RequestError(f"request check_rows = {rows!r} is not allowed (allowed: ascending rows 0 to {batch - 1})")
    seed = _field(d, "seed", "request ", int, "an integer >= 0")
    if seed < 0:
        raise RequestError(f"request seed = {seed} is not allowed (allowed: an integer >= 0)")
    device = _field(d, "device", "request ", int, "a CUDA device index >= 0")
    req = Request(
        folder=os.path.dirname(os.path.abspath(path)), kind=kind,
        variant=_field(d, "variant", "request ", str, "a peer variant (run_peer.py list)"), shape=shape, batch=batch,
        layers=_positive_int(d, "layers"), groups=_positive_int(d, "groups"), seed=seed, l2=l2,
        l2_bytes=_positive_int(d, "l2_bytes"), device=device,
        sampling=_sampling_rule(sampling),
        steps=StepRule(_positive_int(steps, "warmup_cycles", "request steps."),
                       _positive_float(steps, "warmup_min_ms", "request steps."),
                       _positive_float(steps, "sample_min_ms", "request steps.")),
        cycle=_positive_int(steps, "cycle", "request steps."),
        tol_state=_positive_float(tol, "state", "request tolerance."),
        tol_output=_positive_float(tol, "output", "request tolerance."),
        check_rows=rows, tensors=tensors, phase_file=str(d.get("phase_file") or ""))
    return req


def expected_shape(req: Request, name: str) -> tuple:
    """The shape DECODE_TENSORS gives tensor `name` at the request's point."""
    s = req.shape
    dims = {"N": req.batch, "R": len(req.check_rows), "H": s.heads_qk, "HV": s.heads_v, "K": s.head_dim_k,
            "V": s.head_dim_v}
    return tuple(dims.get(d, d) for d in DECODE_TENSORS[name])


def check_tensors(req: Request) -> None:
    """Every tensor a decode request needs is declared with its expected shape. Raises RequestError naming it."""
    for name in DECODE_TENSORS:
        spec = req.tensors.get(name)
        if spec is None:
            raise RequestError(f"request tensors: no '{name}' (needed: {', '.join(DECODE_TENSORS)})")
        want = expected_shape(req, name)
        if tuple(spec["shape"]) != want:
            raise RequestError(f"request tensors.{name}.shape = {spec['shape']} is not allowed (allowed: "
                               f"{list(want)})")
