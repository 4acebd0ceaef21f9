"""Bytes moved per layer step, measured against the byte model: one point per decode sweep point.

Top panel (log-log): measured DRAM bytes (CUPTI dram__bytes_read.sum + dram__bytes_write.sum per layer step, columns
dram_read_bytes + dram_write_bytes) against the byte model's fewest bytes (model_bytes, byte_model/byte_model.h), with
the line measured = model. Bottom panel (log x): measured / model. The points are the plain launches of recurrent and
KVBuffer (every phase); launch = pdl rows and the peers' rows (which have no DRAM counts: a peer runs in the peer
runner's process) are not drawn. Points whose row has no DRAM counts (CUPTI not available, see cupti_status) are left
out and counted in the footnote; the rows the figure does not draw are not counted.

Usage: python3 plots/decode_bytes.py [--csv results/decode_latency.csv] [--out-dir results/figures]
Writes OUT_DIR/decode_bytes.png and .pdf. Exit 2 on bad input (a missing column is named).
"""

from __future__ import annotations

import stop_at_start  # first, before the plotting libraries load: a signal meanwhile stops it in one line

NAME = "decode_bytes"
stop_at_start.guard_figure(NAME, __name__)

import sys  # noqa: E402

import decode_data as dd  # noqa: E402
import style  # noqa: E402

DEFAULT_CSV = "decode_latency.csv"
KIND = "decode"  # the result CSV kind it reads (result_csv.py)
REQUIRED_COLUMNS = (
    dd.SERIES_COLUMNS
    + ("model_bytes", "dram_read_bytes", "dram_write_bytes")
    + dd.FOOTNOTE_COLUMNS
)


def has_dram_counts(row) -> bool:
    """True when the row has both dram_read_bytes and dram_write_bytes (CUPTI measured it)."""
    return not (style.is_empty(row, "dram_read_bytes") or style.is_empty(row, "dram_write_bytes"))


def series_of(rows, path) -> list:
    """The figure's series from `rows`: dd.decode_series (plain launches) for every phase the rows hold, staggered
    first, recurrent once (its rows have no phase), a KVBuffer series of another phase labelled with it."""
    series = []
    for phase in sorted(style.distinct(rows, "phase"), key=lambda ph: ph != "staggered") or ["staggered"]:
        for s in dd.decode_series(rows, path, phase):
            if s.variant == "recurrent" and any(t.variant == "recurrent" for t in series):
                continue
            if phase != "staggered" and s.variant == "kvbuffer":
                s.label += f", {phase}"
                s.marker = "^"
            series.append(s)
    return series


def build(rows, path):
    """The figure for decode `rows` read from `path` (every phase; rows without DRAM counts left out)."""
    dd.require_one_model(rows, path)
    measured = [r for r in rows if has_dram_counts(r)]
    if not measured:
        style.fail(f"CSV {path} has no row with dram_read_bytes and dram_write_bytes (see its cupti_status column)")
    # Counted as left out: the rows that would be points had they DRAM counts, not the pdl or peer rows the figure
    # never draws (a peer row has none at all).
    left_out = sum(not has_dram_counts(r) for s in series_of(rows, path) for r in s.rows)
    series = series_of(measured, path)
    if not series:  # rows with DRAM counts, but none of a series: launch = pdl or a peer's
        style.fail(f"CSV {path} has no recurrent or kvbuffer rows with launch plain and dram_read_bytes and "
                   "dram_write_bytes (the figure draws plain launches with DRAM counts)")

    fig, (top, bottom) = style.figure(style.TALL_WIDE, nrows=2, sharex=True, height_ratios=(3, 2))
    lo, hi = float("inf"), 0.0
    for s in series:
        model = s.values("model_bytes", path)
        dram = [a + b for a, b in zip(s.values("dram_read_bytes", path), s.values("dram_write_bytes", path))]
        rec = s.variant == "recurrent"
        kw = dict(color=s.colour, marker=s.marker, ls="none", ms=7 if rec else 4, zorder=4 if rec else 3,
                  mfc="none" if rec or s.marker == "^" else s.colour)
        top.plot(model, dram, label=s.label, **kw)
        bottom.plot(model, [d / m for d, m in zip(dram, model)], **kw)
        lo, hi = min(lo, *model, *dram), max(hi, *model, *dram)
    top.plot([lo / 1.5, hi * 1.5], [lo / 1.5, hi * 1.5], color=style.IDEAL_COLOUR, ls="--", lw=1.2, zorder=1,
             label="measured = model")
    top.set_xscale("log")
    top.set_yscale("log")
    top.set_ylabel("measured DRAM bytes per layer step (B)")
    top.set_title("GDN decode bytes moved: measured (CUPTI) against the byte model")
    style.legend_outside(top)
    bottom.axhline(1.0, color=style.IDEAL_COLOUR, ls="--", lw=1.2)
    bottom.set_ylabel("measured / model (ratio)")
    bottom.set_xlabel("model bytes per layer step (B)")
    ratios = [line.get_ydata() for line in bottom.get_lines()[:-1]]
    flat = [float(v) for r in ratios for v in r]
    spread = max(abs(v - 1.0) for v in flat)
    pad = max(spread * 1.3, 0.01)
    bottom.set_ylim(1.0 - pad, 1.0 + pad)
    extra = "measured = CUPTI dram__bytes_read.sum + dram__bytes_write.sum per layer step; model = fewest bytes " \
            "(byte_model/byte_model.h)"
    if left_out:
        extra += f"; {left_out} point(s) without DRAM counts left out"
    style.footnote(fig, rows, path, extra=extra)
    return fig


def main(argv=None) -> int:
    """Command line entry: parse arguments, read and check the CSV, write the figure; returns the exit status."""
    return style.run_figure(__doc__, DEFAULT_CSV, NAME, lambda path: style.read_csv(path, REQUIRED_COLUMNS, KIND),
                            build, argv)


if __name__ == "__main__":
    sys.exit(main())
