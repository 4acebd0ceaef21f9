"""A stand-in peer for the tests of the peer runner: the gated delta rule in numpy (fp32, on the CPU), called through
the same interface as a real peer (peers/peer.py), so that kvb's check case, the runner's check and its timing can be
tested without a GPU.

Its pool is [slots, HV, V, K] (layout vk) indexed by the case's slot permutation, as FlashInfer's is. Variants:
  standin_recurrent     places each checked state transposed into its slot: right
  standin_wrong_layout  places the [K, V] state as it is into the [V, K] pool: the check must catch it
  standin_wrong_slot    places each checked state into the pool row of its batch row, not its slot: the check must
                        catch it
  standin_unavailable   its probe says it cannot run here
"""

from __future__ import annotations

import time

import numpy as np

from peers.check import DecodeCase, DecodeOutputs
from peers.peer import Unavailable
from peers.request import Request


def _l2norm(x):
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True, dtype=np.float32) + np.float32(1e-6))


def decode_rows(pool, slots, case: DecodeCase) -> np.ndarray:
    """One decode token for every row, in fp32: pool [slots, HV, V, K] updated in place; returns o [N, HV, V]."""
    s = case.shape
    group = s.heads_v // s.heads_qk
    f32 = np.float32
    q = np.repeat(_l2norm(case.q.astype(f32)), group, axis=1) * f32(case.scale)  # [N, HV, K]
    k = np.repeat(_l2norm(case.k.astype(f32)), group, axis=1)
    x = case.a.astype(f32) + case.dt_bias.astype(f32)
    softplus = np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20)))).astype(f32)
    g = (-np.exp(case.A_log.astype(f32)) * softplus).astype(f32)  # [N, HV]
    beta = (1 / (1 + np.exp(-case.b.astype(f32)))).astype(f32)
    o = np.empty((case.batch, s.heads_v, s.head_dim_v), dtype=f32)
    for row in range(case.batch):
        st = pool[slots[row]] * np.exp(g[row])[:, None, None]  # [HV, V, K]
        u = beta[row][:, None] * (case.v[row].astype(f32) - np.einsum("hvk,hk->hv", st, k[row]))
        st = st + u[:, :, None] * k[row][:, None, :]
        pool[slots[row]] = st
        o[row] = np.einsum("hvk,hk->hv", st, q[row])
    return o


class StandInRecurrent:
    """The recurrence in numpy with a [V, K] pool indexed by slot (module docstring)."""

    variant = "standin_recurrent"
    package = "numpy"
    description = "numpy gated delta rule (test stand-in)"
    conventions = "state [slots, HV, V, K] fp32 in place, pool slot = slots[row]"

    def probe(self, device: int = 0):
        return {"package": "numpy", "package_version": np.__version__, "torch_version": "", "triton_version": ""}

    def place(self, pool, case: DecodeCase, i: int, row: int) -> None:
        """Puts checked row i's state [HV, K, V] where the peer reads it."""
        pool[case.slots[row]] = case.check_states[i].transpose(0, 2, 1)

    def _pool(self, case: DecodeCase, seed: int):
        s = case.shape
        rng = np.random.default_rng(seed)
        shape = (case.batch, s.heads_v, s.head_dim_v, s.head_dim_k)
        return (rng.standard_normal(shape) * s.head_dim_k ** -0.5).astype(np.float32)

    def check(self, case: DecodeCase, req: Request) -> DecodeOutputs:
        pool = self._pool(case, req.seed)
        for i, row in enumerate(case.check_rows):
            self.place(pool, case, i, row)
        o = decode_rows(pool, case.slots, case)
        states = np.stack([pool[case.slots[r]].transpose(0, 2, 1) for r in case.check_rows])
        return DecodeOutputs(o.astype(np.float64), states.astype(np.float64))

    def timed_model(self, case: DecodeCase, req: Request):
        return CpuModel([self._pool(case, req.seed + 1 + i) for i in range(req.groups * req.layers)], case)


class StandInWrongLayout(StandInRecurrent):
    variant = "standin_wrong_layout"

    def place(self, pool, case, i, row):
        pool[case.slots[row]] = case.check_states[i].reshape(pool.shape[1:])


class StandInWrongSlot(StandInRecurrent):
    variant = "standin_wrong_slot"

    def place(self, pool, case, i, row):
        pool[row] = case.check_states[i].transpose(0, 2, 1)


class StandInUnavailable(StandInRecurrent):
    variant = "standin_unavailable"

    def probe(self, device: int = 0):
        raise Unavailable("the stand-in's package is not installed (a test)")


class CpuModel:
    """Every layer set's pool stepped on the CPU; wall-clock milliseconds."""

    def __init__(self, pools, case):
        self.pools, self.case = pools, case

    def replay_ms(self, steps: int) -> float:
        start = time.perf_counter()
        for _ in range(steps):
            for pool in self.pools:
                decode_rows(pool, self.case.slots, self.case)
        return (time.perf_counter() - start) * 1e3

    def flush(self) -> None:
        pass

    def device_bytes(self) -> int:
        return sum(p.nbytes for p in self.pools)


PEERS = {c.variant: c for c in (StandInRecurrent, StandInWrongLayout, StandInWrongSlot, StandInUnavailable)}
