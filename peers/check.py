"""The check before timing: a peer's outputs and states on the rows kvb computed the float64 reference for.

kvb's C++ reference (reference/gdn_reference.h) computes the reference; this module only reads it and measures the
peer's distance from it with kvb's own measure (reference/gdn_reference.h max_rel_err: per head, the largest absolute
error over the head's largest reference magnitude; NaN gives infinity; an all-zero reference head counts its absolute
error) and verdict (harness/workloads/check_support.h check_verdict).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from peers.request import Request, Shape, check_tensors


@dataclass
class DecodeCase:
    """One layer's decode launch as kvb drew it (reference/qwen3_next_inputs.h), every value exact in its kernel dtype,
    held in float32: q, k [N, H, K], v [N, HV, V], a, b [N, HV] (bf16 values); A_log, dt_bias [HV] (fp32 values);
    scale (fp32 value); slots [N] int32 (the pool slot of each row: a permutation of 0..N-1); check_rows (R rows);
    check_states [R, HV, K, V] (the checked rows' fp32 states before the step, layout kv)."""

    shape: Shape
    batch: int
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    a: np.ndarray
    b: np.ndarray
    A_log: np.ndarray
    dt_bias: np.ndarray
    scale: float
    slots: np.ndarray
    check_rows: list
    check_states: np.ndarray


@dataclass
class DecodeOutputs:
    """What a peer's decode launch gave: o [N, HV, V] for every row, and the checked rows' states after the step
    [R, HV, K, V] in layout kv, as float64 (NaN where an output was not written)."""

    o: np.ndarray
    states: np.ndarray


@dataclass
class CheckResult:
    """Errors of the checked rows (max_rel_err), whether every output of the launch was written, and why the check
    failed ("" when it passed)."""

    state_err: float
    o_err: float
    outputs_written: bool
    rows: int
    detail: str

    def passed(self) -> bool:
        """True when the check found nothing wrong."""
        return not self.detail


def load_decode_case(req: Request) -> tuple[DecodeCase, np.ndarray, np.ndarray]:
    """The case and the float64 reference (ref_o [R, HV, V], ref_states [R, HV, K, V] layout kv) of a decode
    request. Raises RequestError naming a missing or malformed tensor."""
    check_tensors(req)
    t = req.tensor
    case = DecodeCase(shape=req.shape, batch=req.batch, q=t("q"), k=t("k"), v=t("v"), a=t("a"), b=t("b"),
                      A_log=t("A_log"), dt_bias=t("dt_bias"), scale=float(t("scale")[0]), slots=t("slots"),
                      check_rows=list(req.check_rows), check_states=t("check_states"))
    return case, t("ref_o"), t("ref_states")


def max_rel_err(ref: np.ndarray, got: np.ndarray, heads: int) -> float:
    """Largest per-head error relative to that head's largest reference magnitude (ref::max_rel_err): `ref` and `got`
    split into `heads` equal heads. NaN in either gives infinity. Raises ValueError when the sizes differ or do not
    split into `heads`."""
    ref = np.asarray(ref, dtype=np.float64).reshape(-1)
    got = np.asarray(got, dtype=np.float64).reshape(-1)
    if ref.size != got.size:
        raise ValueError(f"max_rel_err: ref has {ref.size} values, got has {got.size}")
    if heads < 1 or ref.size % heads:
        raise ValueError(f"max_rel_err: {ref.size} values do not split into {heads} heads")
    if np.isnan(ref).any() or np.isnan(got).any():
        return float("inf")
    r, g = ref.reshape(heads, -1), got.reshape(heads, -1)
    ref_max = np.abs(r).max(axis=1)
    err_max = np.abs(g - r).max(axis=1)
    per_head = np.where(ref_max > 0, err_max / np.where(ref_max > 0, ref_max, 1.0), err_max)
    return float(per_head.max()) if per_head.size else 0.0


def verdict(outputs_written: bool, state_err: float, o_err: float, tol_output: float, tol_state: float) -> str:
    """"" when every output was written and both errors are within tolerance, else the first reason, one line (the
    words of check_verdict)."""
    if not outputs_written:
        return "some output elements were not written (NaN poison left)"
    if not state_err <= tol_state:
        return f"state error {state_err:.3g} above {tol_state:.1g}"
    if not o_err <= tol_output:
        return f"output error {o_err:.3g} above {tol_output:.1g}"
    return ""


def check_decode(case: DecodeCase, got: DecodeOutputs, ref_o: np.ndarray, ref_states: np.ndarray,
                 tol_state: float, tol_output: float) -> CheckResult:
    """Compares a peer's decode launch with the reference on the checked rows: outputs (tolerance tol_output) and
    states after the step (tol_state), per value head; every row's outputs must be finite (written)."""
    hv = case.shape.heads_v
    n, v_dim = case.batch, case.shape.head_dim_v
    state_elems = hv * case.shape.head_dim_k * case.shape.head_dim_v
    o = np.asarray(got.o, dtype=np.float64)
    states = np.asarray(got.states, dtype=np.float64)
    if o.size != n * hv * v_dim:
        return CheckResult(0.0, 0.0, False, 0, f"the peer returned {o.size} output values, expected {n * hv * v_dim}")
    if states.size != len(case.check_rows) * state_elems:
        return CheckResult(0.0, 0.0, True, 0, f"the peer returned {states.size} state values, expected "
                           f"{len(case.check_rows) * state_elems}")
    o = o.reshape(n, hv, v_dim)
    states = states.reshape(len(case.check_rows), state_elems)
    written = bool(np.isfinite(o).all())
    state_err = o_err = 0.0
    for i, row in enumerate(case.check_rows):
        o_err = max(o_err, max_rel_err(ref_o[i], o[row], hv))
        state_err = max(state_err, max_rel_err(ref_states[i], states[i], hv))
    return CheckResult(state_err, o_err, written, len(case.check_rows),
                       verdict(written, state_err, o_err, tol_output, tol_state))
