"""ReplaySSM's buffered decode (a checkpoint plus a ring of corrected deltas, keys and log-decays), as vLLM and SGLang
releases may ship it. The runner looks for it and says what it found; it has no adapter for the ring's conventions
(write positions, flush threshold, the null slot 0), so the variant is always skipped with that reason, and the
recorded H200 numbers of results/anchors.csv (replayssm_decode, replayssm_fork_decode) stay the comparison.
"""

from __future__ import annotations

import importlib.util

import peers.torch_support as ts

# Modules that hold ReplaySSM's GDN decode in the releases that ship it.
CANDIDATES = (
    ("vllm", "vllm.model_executor.layers.mamba.gdn.replayssm"),
    ("vllm", "vllm.model_executor.layers.fla.ops.fused_recurrent_replayssm"),
    ("sglang", "sglang.kernels.ops.attention.fla.gdn_replayssm_spec_decode"),
    ("sglang", "sglang.srt.layers.attention.fla.fused_recurrent_replayssm"),
)


def _find(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


class ReplaySsmDecode:
    """ReplaySSM's decode: found or not, skipped with the reason (module docstring)."""

    variant = "replayssm_decode"
    package = "vllm or sglang"
    description = "ReplaySSM buffered decode (vLLM or SGLang release), looked for only"
    conventions = "checkpoint [slots, HV, V, K] plus a ring of bf16 (delta, key) and fp32 log-decay records"

    def probe(self, device: int = 0):
        """Always raises Unavailable: what was found, and that the runner has no adapter for it."""
        installed = [top for top in ("vllm", "sglang") if _find(top)]
        if not installed:
            raise ts.Unavailable("ReplaySSM ships in vLLM or SGLang; neither is installed")
        found = [m for top, m in CANDIDATES if top in installed and _find(m)]
        versions = ", ".join(" ".join(ts.dist_version((top,))) for top in installed)
        if not found:
            raise ts.Unavailable(f"no ReplaySSM decode kernel in {versions}")
        raise ts.Unavailable(f"ReplaySSM found ({found[0]}, {versions}) but the runner has no adapter for its ring "
                             "conventions yet")


PEERS = {ReplaySsmDecode.variant: ReplaySsmDecode}
