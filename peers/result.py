"""The runner's answer to kvb: result.csv, one header and one row, in the decode kind's column names where they mean
the same (harness/kinds/peer_point.h reads it and builds the sweep row)."""

from __future__ import annotations

import csv
import io
import os
from typing import Dict

# Columns of result.csv, in order. discarded_samples: samples dropped because the SM clock was below the sampler's
# floor after them, empty when the clock could not be read (no pynvml or no NVML).
COLUMNS = ("status", "latency_us_median", "latency_us_p10", "latency_us_p90", "samples", "noise_pct", "sample_stop",
           "steps_per_sample", "discarded_samples", "max_rel_err", "max_rel_err_o", "check_rows", "device_bytes",
           "package", "package_version", "torch_version", "triton_version", "peer_conventions")


def num(x: float) -> str:
    """A number as kvb writes it (fmt "{:.6g}")."""
    return format(x, ".6g")


def err(x: float) -> str:
    """An error as kvb writes it (fmt "{:.3g}")."""
    return format(x, ".3g")


def one_line(text: str) -> str:
    """`text` with line breaks and tabs turned into spaces."""
    return " ".join(str(text).split())


def write_result(path: str, values: Dict[str, str]) -> None:
    """Writes result.csv at `path` (through a temporary file, then a rename). Raises KeyError for a column not in
    COLUMNS."""
    for k in values:
        if k not in COLUMNS:
            raise KeyError(f"result column {k!r} is not one of {', '.join(COLUMNS)}")
    text = io.StringIO()
    w = csv.writer(text, lineterminator="\n")
    w.writerow(COLUMNS)
    w.writerow([one_line(values.get(c, "")) for c in COLUMNS])
    write_text_atomic(path, text.getvalue())


def write_text_atomic(path: str, text: str) -> None:
    """Writes `text` at `path` through a temporary file beside it, then a rename: a reader sees the old file or the
    whole new one."""
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        f.write(text)
    os.replace(tmp, path)
