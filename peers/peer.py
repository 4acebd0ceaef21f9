"""What a peer is to the runner: a decode kernel from another project, called with that project's conventions.

A peer class names its variant (the value of kvb's `variant` axis), the package that provides it, and the conventions
it is called with; it says whether it can run here (probe), runs one launch for the check (check), and builds the
timed model step (timed_model). The runner (run_peer.py) does the rest, the same way for every peer.
"""

from __future__ import annotations

from typing import Dict, Protocol

from peers.check import DecodeCase, DecodeOutputs
from peers.request import Request


class Unavailable(Exception):
    """The peer cannot run here; the message is the one-line reason (a missing package, no GPU, ...)."""


class TimedModel(Protocol):
    """One model step of a point, ready to replay: every layer of every group launched once per step."""

    def replay_ms(self, steps: int) -> float:
        """Replays `steps` model steps and returns their elapsed milliseconds."""

    def flush(self) -> None:
        """Evicts the cache between samples (cold L2); nothing for hot L2."""

    def device_bytes(self) -> int:
        """Device memory the point's pools, inputs and outputs hold, bytes."""


class DecodePeer(Protocol):
    """A decode peer. `variant`: kvb's variant name; `package`: the distribution to install (pip name);
    `description`: what it is, one line; `conventions`: how it is called, one line (state layout, slot indexing,
    padding, gates; known once probe() has looked at the installed version)."""

    variant: str
    package: str
    description: str
    conventions: str

    def probe(self, device: int) -> Dict[str, str]:
        """Versions when the peer can run on CUDA device `device`: {"package": pip name, "package_version",
        "torch_version", "triton_version"} ("" where not applicable). Raises Unavailable with the reason otherwise."""

    def check(self, case: DecodeCase, req: Request) -> DecodeOutputs:
        """Runs one launch of the case's layer with the peer's conventions; returns every row's outputs and the
        checked rows' states after the step (layout kv, float64)."""

    def timed_model(self, case: DecodeCase, req: Request) -> TimedModel:
        """The point's model step (req.groups x req.layers layer sets, each with its own state pool), ready to time."""

