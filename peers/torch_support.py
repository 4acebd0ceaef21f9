"""PyTorch pieces every GPU peer shares: the probe for torch, triton and a package; device tensors of the case; the
model step as a CUDA graph (torch.cuda.CUDAGraph) timed with CUDA events; the cold-L2 flush between samples.

Imported only by peers that run on the GPU, and only after their probe found torch.
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
from typing import Callable, Dict, List, Sequence

import numpy as np

from peers.peer import Unavailable


def require_torch_gpu(device: int = 0, triton_needed: bool = True):
    """Imports torch (and triton when needed) and checks that PyTorch sees a CUDA device; returns torch. Raises
    Unavailable with the reason otherwise."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        raise Unavailable("torch is not installed (the peers run on PyTorch)") from None
    if triton_needed:
        try:
            importlib.import_module("triton")
        except ImportError:
            raise Unavailable(f"triton is not installed (torch {torch.__version__})") from None
    if not torch.cuda.is_available():
        raise Unavailable(f"PyTorch {torch.__version__} sees no CUDA device")
    if device >= torch.cuda.device_count():
        raise Unavailable(f"PyTorch sees {torch.cuda.device_count()} CUDA devices, not device {device}")
    return torch


def import_package(module: str, dists: Sequence[str]):
    """Imports `module` from the package installed as one of `dists` (pip names). Raises Unavailable naming them when
    it is not installed or cannot be imported."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and (e.name == module or module.startswith(e.name + ".")):
            raise Unavailable(f"{' or '.join(dists)} is not installed (python3 -m pip install {dists[0]})") from None
        raise Unavailable(f"{module} cannot be imported: {e}") from None
    except Exception as e:  # a broken install: say what broke, in one line
        raise Unavailable(f"{module} cannot be imported: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                          ) from None


def import_function(module: str, function: str, dists: Sequence[str]):
    """`function` of `module` from the package installed as one of `dists` (import_package). Raises Unavailable naming
    the module, the function and the version installed when the module lacks it."""
    fn = getattr(import_package(module, dists), function, None)
    if fn is None:
        raise Unavailable(f"{module} has no {function} ({' '.join(dist_version(dists))})")
    return fn


def dist_version(dists: Sequence[str], fallback_module=None) -> tuple[str, str]:
    """(pip name, version) of the first of `dists` installed, else of the module's __version__."""
    for d in dists:
        try:
            return d, metadata.version(d)
        except metadata.PackageNotFoundError:
            continue
    return dists[0], str(getattr(fallback_module, "__version__", "unknown"))


def versions(torch, dists: Sequence[str], module) -> Dict[str, str]:
    """The version columns of a peer's row."""
    name, version = dist_version(dists, module)
    try:
        triton_version = importlib.import_module("triton").__version__
    except ImportError:
        triton_version = ""
    return {"package": name, "package_version": version, "torch_version": torch.__version__,
            "triton_version": triton_version}


def device_tensor(torch, x: np.ndarray, dtype, device, shape=None):
    """A device tensor of numpy array `x` (values exact in `dtype`) in `shape`."""
    t = torch.from_numpy(np.ascontiguousarray(x)).to(device=device).to(dtype)
    return t.reshape(shape) if shape is not None else t


class DecodeInputs:
    """One decode token per row of a case on the device, in the shapes the peers' decode kernels take (one token):
    q, k [N, 1, H, K], v [N, 1, HV, V], a, b [N, 1, HV] (bf16); A_log, dt_bias [HV] (fp32)."""

    def __init__(self, torch, case, device):
        s, n, bf16 = case.shape, case.batch, torch.bfloat16
        self.q = device_tensor(torch, case.q, bf16, device, (n, 1, s.heads_qk, s.head_dim_k))
        self.k = device_tensor(torch, case.k, bf16, device, (n, 1, s.heads_qk, s.head_dim_k))
        self.v = device_tensor(torch, case.v, bf16, device, (n, 1, s.heads_v, s.head_dim_v))
        self.a = device_tensor(torch, case.a, bf16, device, (n, 1, s.heads_v))
        self.b = device_tensor(torch, case.b, bf16, device, (n, 1, s.heads_v))
        self.A_log = device_tensor(torch, case.A_log, torch.float32, device)
        self.dt_bias = device_tensor(torch, case.dt_bias, torch.float32, device)


def random_states(torch, rows: int, shape, device, generator, layout_vk: bool):
    """`rows` fp32 states N(0, sd = K^-1/2) (reference/qwen3_next_inputs.h draw_state), [rows, HV, K, V] or, with
    layout_vk, [rows, HV, V, K]."""
    hv, k, v = shape.heads_v, shape.head_dim_k, shape.head_dim_v
    dims = (rows, hv, v, k) if layout_vk else (rows, hv, k, v)
    return torch.randn(dims, device=device, dtype=torch.float32, generator=generator) * (k ** -0.5)


def layer_set_model(torch, device, req, make_set: Callable[[], tuple], call: Callable[..., object]):
    """The timed model of a point: req.groups x req.layers layer sets, each made by `make_set()` (its own pools,
    inputs and outputs) and launched as `call(*set)` once per model step; with req.l2 "hot", one set shared by every
    layer (kvb's share_pools). Returns a GraphModel holding the sets."""
    n = req.groups * req.layers
    sets = [make_set() for _ in range(1 if req.l2 == "hot" else n)]

    def step():
        return [call(*sets[i % len(sets)]) for i in range(n)]

    model = GraphModel(torch, device, step, req.l2 == "cold", req.l2_bytes)
    model.sets = sets
    return model


class GraphModel:
    """A model step captured as one CUDA graph: `step()` launches every layer set once. The step runs once on a side
    stream before the capture (compilation, autotuning), then is captured; `keep` holds tensors the step allocated
    so that each layer keeps its own memory. Cold L2: flush() writes, then reads, two regions of 2 x L2 bytes each
    (harness/measure/l2_flush.h), untimed."""

    def __init__(self, torch, device, step: Callable[[], List], l2_cold: bool, l2_bytes: int):
        self.torch = torch
        self.device = device
        self.stream = torch.cuda.Stream(device=device)
        self.stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(self.stream):
            step()
        torch.cuda.synchronize(device)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph, stream=self.stream):
            self.keep = step()
        torch.cuda.synchronize(device)
        self.bytes = int(torch.cuda.memory_allocated(device))
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)
        self.l2_cold = l2_cold
        if l2_cold:
            n = 2 * l2_bytes // 4
            self.write_region = torch.empty(n, dtype=torch.float32, device=device)
            self.read_region = torch.zeros(n, dtype=torch.float32, device=device)
            self.sink = torch.zeros((), dtype=torch.float32, device=device)

    def replay_ms(self, steps: int) -> float:
        """Replays `steps` model steps between two CUDA events; their elapsed milliseconds."""
        with self.torch.cuda.stream(self.stream):
            self.start.record(self.stream)
            for _ in range(steps):
                self.graph.replay()
            self.end.record(self.stream)
        self.end.synchronize()
        return float(self.start.elapsed_time(self.end))

    def flush(self) -> None:
        """Cold L2: evicts every earlier line (writes the write region, then reads the read region); waits for it."""
        if not self.l2_cold:
            return
        with self.torch.cuda.stream(self.stream):
            self.write_region.fill_(1.0)
            self.torch.sum(self.read_region, dim=0, out=self.sink)
        self.stream.synchronize()

    def device_bytes(self) -> int:
        """Bytes PyTorch held on the device once the step was captured (pools, inputs, outputs; not the flush
        regions)."""
        return self.bytes
