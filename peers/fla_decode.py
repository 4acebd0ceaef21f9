"""fla's recurrent decode: `fused_recurrent_gated_delta_rule` of flash-linear-attention (PyPI fla-core, or
flash-linear-attention, which installs it), the Triton kernel SGLang and vLLM decode Qwen3-Next with.

Conventions: state [N, HV, K, V] fp32 (fla's default layout, kv); no slot indices, so row i's state is pool row i; the
final state goes to a tensor fla allocates (one per layer set, kept, so every layer writes its own memory: the bytes
of an in-place update); q and k l2-normalised in the kernel; gates in the kernel (use_gate_in_kernel with A_log and
dt_bias, use_beta_sigmoid_in_kernel) where fla takes them, else g = -exp(A_log) softplus(a + dt_bias) and
beta = sigmoid(b) in fp32 computed once, outside the timed step; bf16 outputs.
"""

from __future__ import annotations

import inspect

import numpy as np

from peers.check import DecodeCase, DecodeOutputs
from peers.request import Request
import peers.torch_support as ts

DISTS = ("fla-core", "flash-linear-attention")
MODULE = "fla.ops.gated_delta_rule"
FUNCTION = "fused_recurrent_gated_delta_rule"


class FlaRecurrentDecode:
    """fla's fused_recurrent_gated_delta_rule, one decode token per row (module docstring: conventions)."""

    variant = "fla_recurrent"
    package = DISTS[0]
    description = "fla fused_recurrent_gated_delta_rule (Triton), recurrent decode"

    def __init__(self):
        self.torch = None
        self.fn = None
        self.gates_in_kernel = False

    @property
    def conventions(self) -> str:
        gates = "gates in the kernel" if self.gates_in_kernel else "gates computed outside the kernel, untimed"
        return f"state [N, HV, K, V] fp32, pool row = batch row, final state to its own tensor, {gates}, bf16 outputs"

    def probe(self, device: int = 0):
        """Versions, or Unavailable: torch, triton, a CUDA device and fla with fused_recurrent_gated_delta_rule."""
        self.torch = ts.require_torch_gpu(device)
        self.fn = ts.import_function(MODULE, FUNCTION, DISTS)
        params = inspect.signature(self.fn).parameters
        self.gates_in_kernel = "use_gate_in_kernel" in params and "use_beta_sigmoid_in_kernel" in params
        return ts.versions(self.torch, DISTS, __import__("fla"))

    def _layer(self, case: DecodeCase, device):
        """Device inputs of one layer set (the case's values in fla's shapes) and its call."""
        torch = self.torch
        x = ts.DecodeInputs(torch, case, device)
        if self.gates_in_kernel:
            extra = dict(g=x.a, beta=x.b, use_gate_in_kernel=True, A_log=x.A_log, dt_bias=x.dt_bias,
                         use_beta_sigmoid_in_kernel=True)
        else:
            g = -torch.exp(x.A_log) * torch.nn.functional.softplus(x.a.float() + x.dt_bias)
            extra = dict(g=g, beta=torch.sigmoid(x.b.float()))

        def call(state):
            return self.fn(q=x.q, k=x.k, v=x.v, scale=case.scale, initial_state=state, output_final_state=True,
                           use_qk_l2norm_in_kernel=True, **extra)

        return call

    def check(self, case: DecodeCase, req: Request) -> DecodeOutputs:
        """One launch on a pool whose checked rows hold the case's states (the others drawn at random)."""
        torch = self.torch
        device = torch.device("cuda", req.device)
        gen = torch.Generator(device=device).manual_seed(req.seed)
        pool = ts.random_states(torch, case.batch, case.shape, device, gen, layout_vk=False)
        for i, row in enumerate(case.check_rows):
            pool[row] = ts.device_tensor(torch, case.check_states[i], torch.float32, device)
        o, final = self._layer(case, device)(pool)
        torch.cuda.synchronize(device)
        rows = torch.tensor(case.check_rows, device=device)
        return DecodeOutputs(o.float().cpu().numpy().astype(np.float64),
                             final[rows].cpu().numpy().astype(np.float64))

    def timed_model(self, case: DecodeCase, req: Request):
        """req.groups x req.layers layer sets (torch_support.layer_set_model), each with its own state pool and its
        own copy of the case's inputs."""
        torch = self.torch
        device = torch.device("cuda", req.device)
        gen = torch.Generator(device=device).manual_seed(req.seed + 1)
        return ts.layer_set_model(
            torch, device, req,
            lambda: (self._layer(case, device),
                     ts.random_states(torch, case.batch, case.shape, device, gen, layout_vk=False)),
            lambda call, pool: call(pool))


PEERS = {FlaRecurrentDecode.variant: FlaRecurrentDecode}
