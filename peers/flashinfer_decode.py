"""FlashInfer's fp32-state recurrent decode: `flashinfer.gdn_decode.gated_delta_rule_decode_pretranspose` (CuTe DSL
kernels, compiled on first use; SM90 and newer).

Conventions: state [slots, HV, V, K] fp32 (layout vk, K contiguous) updated in place; where the function takes a pool
and indices (initial_state, initial_state_indices), row i reads and writes pool slot slots[i] of kvb's permutation,
else row i's state is pool row i; q and k l2-normalised in the kernel (use_qk_l2norm); gates in the kernel (A_log,
a, dt_bias, b); outputs written into a bf16 buffer kvb's runner provides ([N, 1, HV, V], NaN-poisoned for the check).
"""

from __future__ import annotations

import inspect

import numpy as np

from peers.check import DecodeCase, DecodeOutputs
from peers.request import Request
import peers.torch_support as ts

DISTS = ("flashinfer-python", "flashinfer")
MODULE = "flashinfer.gdn_decode"
FUNCTION = "gated_delta_rule_decode_pretranspose"


class FlashInferRecurrentDecode:
    """FlashInfer's gated_delta_rule_decode_pretranspose with an fp32 state (module docstring: conventions)."""

    variant = "flashinfer_recurrent"
    package = DISTS[0]
    description = "FlashInfer gdn_decode gated_delta_rule_decode_pretranspose (CuTe DSL), fp32-state recurrent decode"

    def __init__(self):
        self.torch = None
        self.fn = None
        self.indexed = False

    @property
    def conventions(self) -> str:
        slots = "pool slot = slots[row] (initial_state_indices)" if self.indexed else "pool row = batch row"
        return f"state [slots, HV, V, K] fp32 in place, {slots}, gates in the kernel, bf16 outputs"

    def probe(self, device: int = 0):
        """Versions, or Unavailable: torch, a CUDA device of compute capability 9.0 or newer, and FlashInfer with
        gated_delta_rule_decode_pretranspose."""
        self.torch = ts.require_torch_gpu(device, triton_needed=False)
        major, minor = self.torch.cuda.get_device_capability(device)
        if major < 9:
            raise ts.Unavailable(f"FlashInfer's GDN decode needs SM90 or newer (this device is sm_{major}{minor})")
        self.fn = ts.import_function(MODULE, FUNCTION, DISTS)
        params = inspect.signature(self.fn).parameters
        self.indexed = "initial_state" in params and "initial_state_indices" in params
        return ts.versions(self.torch, DISTS, __import__("flashinfer"))

    def _layer(self, case: DecodeCase, device, poison: bool):
        """Device inputs, slot indices and output buffer of one layer set, and its call on a pool."""
        torch, s, n = self.torch, case.shape, case.batch
        x = ts.DecodeInputs(torch, case, device)
        slots = torch.from_numpy(case.slots.astype(np.int32)).to(device)
        out = torch.full((n, 1, s.heads_v, s.head_dim_v), float("nan") if poison else 0.0, dtype=torch.bfloat16,
                         device=device)

        def call(pool):
            common = dict(q=x.q, k=x.k, v=x.v, A_log=x.A_log, a=x.a, dt_bias=x.dt_bias, b=x.b, scale=case.scale,
                          output=out, use_qk_l2norm=True)
            if self.indexed:
                self.fn(state=None, initial_state=pool, initial_state_indices=slots, **common)
            else:
                self.fn(state=pool, **common)
            return out

        return call

    def _slot(self, case: DecodeCase, row: int) -> int:
        return int(case.slots[row]) if self.indexed else row

    def check(self, case: DecodeCase, req: Request) -> DecodeOutputs:
        """One launch on a pool whose checked rows' slots hold the case's states (the others drawn at random)."""
        torch = self.torch
        device = torch.device("cuda", req.device)
        gen = torch.Generator(device=device).manual_seed(req.seed)
        pool = ts.random_states(torch, case.batch, case.shape, device, gen, layout_vk=True)
        for i, row in enumerate(case.check_rows):
            state = ts.device_tensor(torch, case.check_states[i], torch.float32, device)
            pool[self._slot(case, row)] = state.transpose(-1, -2)
        out = self._layer(case, device, poison=True)(pool)
        torch.cuda.synchronize(device)
        slots = torch.tensor([self._slot(case, r) for r in case.check_rows], device=device)
        states = pool[slots].transpose(-1, -2).contiguous()
        return DecodeOutputs(out.float().cpu().numpy().astype(np.float64), states.cpu().numpy().astype(np.float64))

    def timed_model(self, case: DecodeCase, req: Request):
        """req.groups x req.layers layer sets (torch_support.layer_set_model), each with its own state pool, inputs
        and output buffer."""
        torch = self.torch
        device = torch.device("cuda", req.device)
        gen = torch.Generator(device=device).manual_seed(req.seed + 1)
        return ts.layer_set_model(
            torch, device, req,
            lambda: (self._layer(case, device, poison=False),
                     ts.random_states(torch, case.batch, case.shape, device, gen, layout_vk=True)),
            lambda call, pool: call(pool))


PEERS = {FlashInferRecurrentDecode.variant: FlashInferRecurrentDecode}
