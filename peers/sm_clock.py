"""The SM clock of the peer's CUDA device through NVML (pynvml, from the package nvidia-ml-py), for the sampler's
throttle discard (peers/protocol.py sample_until; harness/measure/gpu_clock.h is kvb's own reader).

Optional: without pynvml, an NVML that does not start, or a device it does not answer for, there is no reader and
the runner's samples are kept unchecked (result column discarded_samples empty).
"""

from __future__ import annotations

import importlib
import sys
from typing import Callable, Optional

from peers.protocol import ClockReading

SmClock = Callable[[], Optional[ClockReading]]


def _bus_id(device: int) -> Optional[str]:
    """PCI bus id "DOMAIN:BUS:DEVICE.0" of CUDA device `device` from PyTorch when a peer imported it (so that
    CUDA_VISIBLE_DEVICES is honoured, as kvb finds its NVML handle); None when unknown."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        p = torch.cuda.get_device_properties(device)
        return f"{p.pci_domain_id:08x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}.0"
    except Exception:  # no CUDA device, or a torch whose properties lack the PCI fields
        return None


def _handle(nvml, device: int):
    """The NVML handle of CUDA device `device`: by PCI bus id when known, else by index (kvb's order)."""
    bus_id = _bus_id(device)
    if bus_id is not None:
        try:
            return nvml.nvmlDeviceGetHandleByPciBusId(bus_id.encode())  # bytes: every pynvml version takes them
        except Exception:  # NVML does not know the id: by index, as kvb falls back
            pass
    return nvml.nvmlDeviceGetHandleByIndex(device)


def _optional(query, *args) -> Optional[int]:
    """query(*args), or None when NVML cannot answer it (an older driver, an unsupported field)."""
    try:
        return int(query(*args))
    except Exception:
        return None


def _reasons_query(nvml, handle):
    """NVML's clocks-event reasons query under its current name, else its older one (a driver older than the
    bindings lacks the new name), whichever answers for `handle`; None when neither does."""
    for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
        query = getattr(nvml, name, None)
        if query is not None and _optional(query, handle) is not None:
            return query
    return None


def nvml_sm_clock(device: int, module: str = "pynvml") -> Optional[SmClock]:
    """A reader of CUDA device `device`'s SM clock: each call returns a ClockReading (current and maximum MHz, the
    clocks-event reason bits; None for a value NVML cannot give), or None when the clock cannot be read. None instead
    of a reader when `module` does not import, NVML does not start or the first reading fails. Never raises."""
    try:
        nvml = importlib.import_module(module)
        nvml.nvmlInit()
        handle = _handle(nvml, device)
    except Exception:  # no pynvml, no driver, no such device: the clock is not checked
        return None
    reasons = _reasons_query(nvml, handle)

    def read() -> Optional[ClockReading]:
        sm = _optional(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM)
        if sm is None:
            return None
        return ClockReading(sm, _optional(nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_SM),
                            _optional(reasons, handle) if reasons else None)

    return read if read() is not None else None
