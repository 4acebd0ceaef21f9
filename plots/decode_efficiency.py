"""Decode latency over floor (bandwidth efficiency) against batch: recurrent, KVBuffer per buffer size, the peers.

The floor of a point (column floor_us, docs/EXPERIMENTS.md) is its model bytes at the bandwidth measured on the
same GPU in the same run: written bytes paired with read bytes at the measured copy bandwidth, the remaining reads
at the measured read bandwidth (byte_model/byte_model.h). latency_over_floor = median latency / floor; 1 means the
kernel moves its modelled bytes as fast as the measured copy and read loops. Error bars: p10 / floor .. p90 / floor.
The floor is each point's own, so a KVBuffer series at 1 is as fast as its bytes allow, not as fast as recurrent.
Series are plain launches; the peers measured in the same run (rows of a peer variant) are drawn beside them, so a CSV
of peer rows alone is refused, as decode_latency refuses it, and so is a --phase none of its KVBuffer rows has.

Usage: python3 plots/decode_efficiency.py [--csv results/decode_latency.csv] [--out-dir results/figures]
       [--phase staggered|aligned]
Writes OUT_DIR/decode_efficiency.png and .pdf. Exit 2 on bad input (a missing column is named).
"""

from __future__ import annotations

import stop_at_start  # first, before the plotting libraries load: a signal meanwhile stops it in one line

NAME = "decode_efficiency"
stop_at_start.guard_figure(NAME, __name__)

import sys  # noqa: E402

import decode_data as dd  # noqa: E402
import style  # noqa: E402

DEFAULT_CSV = "decode_latency.csv"
KIND = "decode"  # the result CSV kind it reads (result_csv.py)
REQUIRED_COLUMNS = (
    dd.SERIES_COLUMNS
    + ("latency_over_floor", "floor_us", "latency_us_p10", "latency_us_p90")
    + dd.FOOTNOTE_COLUMNS
)


def build(rows, path, phase: str = "staggered"):
    """The figure for decode `rows` read from `path` (KVBuffer rows of `phase` only)."""
    dd.require_one_model(rows, path)
    series = dd.require_decode_series(rows, path, phase) + dd.peer_series(rows, path)
    fig, (ax,) = style.figure(style.SINGLE)
    handles = [ax.axhline(1.0, color=style.FLOOR_COLOUR, ls="--", lw=1.4, label="floor (ratio 1)")]
    all_batches: set[float] = set()
    ratios: list[float] = []
    for s in series:
        x = s.batches(path)
        ratio = s.values("latency_over_floor", path)
        floor = s.values("floor_us", path)
        lo = [max(r - p / f, 0.0) for r, p, f in zip(ratio, s.values("latency_us_p10", path), floor)]
        hi = [max(p / f - r, 0.0) for r, p, f in zip(ratio, s.values("latency_us_p90", path), floor)]
        lw = 2.0 if s.variant == "recurrent" else 1.2
        handles.insert(len(handles) - 1, ax.errorbar(x, ratio, yerr=[lo, hi], color=s.colour, marker=s.marker, lw=lw,
                                                     label=s.label, zorder=3))
        all_batches.update(x)
        ratios += ratio
    ax.set_yscale("log")
    ax.set_ylim(min(0.9, min(ratios) * 0.95), max(ratios) * 1.1)
    ax.set_yticks([t for t in (0.9, 1, 1.25, 1.5, 2, 3, 4, 6, 10, 20, 40) if t <= max(ratios) * 1.1])
    style.plain_log_axis(ax.yaxis)
    ax.yaxis.set_minor_formatter(style.NullFormatter())
    ax.set_ylabel("median latency / floor (ratio)")
    style.log2_batch_axis(ax, all_batches)
    ax.set_title(f"GDN decode latency over the bandwidth floor, {phase} buffer phases" + style.state_dtype_title(rows))
    style.legend_outside(ax, handles=handles)
    copy = ", ".join(f"{float(g):.0f}" for g in style.distinct(rows, "copy_gbps"))
    read = ", ".join(f"{float(g):.0f}" for g in style.distinct(rows, "read_gbps"))
    bw = f" (measured copy {copy} GB/s, read {read} GB/s)" if copy and read else ""
    style.footnote(fig, rows, path, extra=f"floor = each point's model bytes at the measured bandwidth{bw}; "
                   "error bars p10..p90")
    return fig


def main(argv=None) -> int:
    """Command line entry: parse arguments, read and check the CSV, write the figure; returns the exit status."""
    return style.run_figure(__doc__, DEFAULT_CSV, NAME, lambda path: style.read_csv(path, REQUIRED_COLUMNS, KIND),
                            build, argv, with_phase=True)


if __name__ == "__main__":
    sys.exit(main())
