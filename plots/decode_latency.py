"""Decode latency per layer against batch: recurrent, KVBuffer per buffer size, the peers, and the read-only floor.

Top panel (log-log): median per-layer latency (us) of each series, error bars p10..p90; the peers measured in the
same run (fla's and FlashInfer's recurrent decode, rows of a peer variant), labelled with their package version; the
read-only state floor, batch * HV*K*V*bytes(state_dtype) / read_gbps, from the CSV's own shape and measured read
bandwidth (the least time any decode kernel that reads its state from device memory can take); and, when the CSV's
shape is the anchors' (HV = 32, K = V = 128, fp32 state), for each recurrent peer the CSV has no rows of, its numbers
recorded on an H200 (results/anchors.csv), labelled as the anchor.
Series are plain launches; when the CSV also has launch = pdl rows, the fastest KVBuffer row with B <= 32 per batch
under programmatic dependent launch is one more line; a CSV without a plain recurrent or KVBuffer series (peer or pdl
rows alone) is refused, the peers being drawn beside them, and so is a --phase none of its plain KVBuffer rows has
(naming the phases they have). Bottom panel (log x): each series' latency over this CSV's
recurrent latency (plain launches) at the same batch.

Usage: python3 plots/decode_latency.py [--csv results/decode_latency.csv] [--out-dir results/figures]
       [--phase staggered|aligned]
Writes OUT_DIR/decode_latency.png and .pdf. Exit 2 on bad input (a missing column is named).
"""

from __future__ import annotations

import stop_at_start  # first, before the plotting libraries load: a signal meanwhile stops it in one line

NAME = "decode_latency"
stop_at_start.guard_figure(NAME, __name__)

import sys  # noqa: E402
from statistics import median  # noqa: E402

import anchors  # noqa: E402
import decode_data as dd  # noqa: E402
import style  # noqa: E402

DEFAULT_CSV = "decode_latency.csv"
KIND = "decode"  # the result CSV kind it reads (result_csv.py)
REQUIRED_COLUMNS = (
    dd.SERIES_COLUMNS
    + dd.SHAPE_COLUMNS
    + ("state_dtype", "latency_us_median", "latency_us_p10", "latency_us_p90", "read_gbps")
    + dd.FOOTNOTE_COLUMNS
)


def read_floor(rows, path) -> tuple[list[float], list[float]]:
    """(batches, read-only state floor in us) over every batch in `rows`; the median read_gbps of a batch's rows."""
    by_batch: dict[float, list] = {}
    for r in rows:
        by_batch.setdefault(style.num(r, "batch", path), []).append(r)
    xs = sorted(by_batch)
    ys = []
    for b in xs:
        group = by_batch[b]
        gbps = median(style.num(r, "read_gbps", path) for r in group)
        ys.append(dd.read_state_floor_us(b, dd.state_bytes_per_request(group[0], path), gbps))
    return xs, ys


def build(rows, path, phase: str = "staggered"):
    """The figure for decode `rows` read from `path` (KVBuffer rows of `phase` only)."""
    dd.require_one_model(rows, path)
    series = dd.require_decode_series(rows, path, phase)
    recurrent = next((s for s in series if s.variant == "recurrent"), None)
    rec_by_batch = (dict(zip(recurrent.batches(path), recurrent.values("latency_us_median", path)))
                    if recurrent else {})

    fig, axes = style.figure(style.TALL_WIDE if rec_by_batch else style.SINGLE, nrows=2 if rec_by_batch else 1,
                             sharex=True, **({"height_ratios": (3, 2)} if rec_by_batch else {}))
    ax = axes[0]
    all_batches: set[float] = set()
    handles = []
    for s in series:
        x = s.batches(path)
        med = s.values("latency_us_median", path)
        lo = [max(m - p, 0.0) for m, p in zip(med, s.values("latency_us_p10", path))]
        hi = [max(p - m, 0.0) for m, p in zip(med, s.values("latency_us_p90", path))]
        lw = 2.0 if s.variant == "recurrent" else 1.2
        handles.append(ax.errorbar(x, med, yerr=[lo, hi], color=s.colour, marker=s.marker, lw=lw, label=s.label,
                                   zorder=3))
        all_batches.update(x)
        if rec_by_batch and s.variant != "recurrent":
            pairs = [(b, m / rec_by_batch[b]) for b, m in zip(x, med) if b in rec_by_batch]
            axes[1].plot(*zip(*pairs), color=s.colour, marker=s.marker, lw=lw)

    # Programmatic dependent launch (launch = pdl rows): the fastest KVBuffer B <= 32 per batch, as one line.
    pdl = dd.best_kvbuffer_by_batch(rows, path, phase, "pdl")
    if pdl:
        px = sorted(pdl)
        handles += ax.plot(px, [pdl[b] for b in px], color=style.RECURRENT_COLOUR, ls="-.", marker="D", ms=4, lw=1.2,
                           label="KVBuffer, best B <= 32,\nPDL launches", zorder=4)
        if rec_by_batch:
            pairs = [(b, pdl[b] / rec_by_batch[b]) for b in px if b in rec_by_batch]
            if pairs:
                axes[1].plot(*zip(*pairs), color=style.RECURRENT_COLOUR, ls="-.", marker="D", ms=4, lw=1.2)

    fx, fy = read_floor(rows, path)
    handles += ax.plot(fx, fy, color=style.FLOOR_COLOUR, ls="--", lw=1.4, label="read-only state floor", zorder=2)
    if rec_by_batch:
        pairs = [(b, f / rec_by_batch[b]) for b, f in zip(fx, fy) if b in rec_by_batch]
        axes[1].plot(*zip(*pairs), color=style.FLOOR_COLOUR, ls="--", lw=1.4)

    # The peers: measured in this run where the CSV has their rows, else (anchors' shape) their recorded numbers.
    measured = dd.peer_series(rows, path)
    for s in measured:
        x, med = s.batches(path), s.values("latency_us_median", path)
        lo = [max(m - p, 0.0) for m, p in zip(med, s.values("latency_us_p10", path))]
        hi = [max(p - m, 0.0) for m, p in zip(med, s.values("latency_us_p90", path))]
        handles.append(ax.errorbar(x, med, yerr=[lo, hi], color=s.colour, marker=s.marker, ms=6, lw=1.2, ls="--",
                                   label=s.label.replace(" (", "\n("), zorder=4))
        all_batches.update(x)
        if rec_by_batch:
            pairs = [(b, m / rec_by_batch[b]) for b, m in zip(x, med) if b in rec_by_batch]
            if pairs:
                axes[1].plot(*zip(*pairs), color=s.colour, marker=s.marker, ms=6, lw=1.2, ls="--")
    if dd.is_qwen3_next_tp1(rows[0], path):
        recorded = (("fla_recurrent", anchors.FLA_RECURRENT_US, anchors.FLA_LABEL),
                    ("flashinfer_recurrent", anchors.FLASHINFER_RECURRENT_US, anchors.FLASHINFER_LABEL))
        for variant, us, label in recorded:
            if any(s.variant == variant for s in measured) or not us:
                continue
            _, colour, marker = dd.PEERS[variant]
            ab = sorted(us)
            ay = [us[b] for b in ab]
            handles += ax.plot(ab, ay, color=colour, ls=":", marker=marker, ms=6, lw=1.2,
                               label=label.replace(" (", "\n("), zorder=4)
            if rec_by_batch:
                pairs = [(b, y / rec_by_batch[b]) for b, y in zip(ab, ay) if b in rec_by_batch]
                if pairs:
                    axes[1].plot(*zip(*pairs), color=colour, ls=":", marker=marker, ms=6, lw=1.2)

    ax.set_yscale("log")
    style.plain_log_axis(ax.yaxis)
    ax.set_ylabel("latency per layer (us), median, p10..p90")
    layers = style.distinct(rows, "layers")
    ax.set_title(f"GDN decode latency per layer, {phase} buffer phases"
                 + (f", {layers[0]} layers per step" if layers else "") + style.state_dtype_title(rows))
    style.legend_outside(ax, handles=handles)
    if rec_by_batch:
        b = axes[1]
        b.axhline(1.0, color=style.RECURRENT_COLOUR, lw=2.0)
        b.set_ylabel("latency / recurrent latency")
        style.log2_batch_axis(b, all_batches | set(fx))
        ax.set_xlabel("")
    else:
        style.log2_batch_axis(ax, all_batches | set(fx))
    gbps = ", ".join(f"{float(g):.0f}" for g in style.distinct(rows, "read_gbps"))
    dtype_bytes = dd.STATE_DTYPE_BYTES[rows[0]["state_dtype"].strip()]
    style.footnote(fig, rows, path, extra=f"read-only state floor = batch x HV*K*V*{dtype_bytes} B (one state read per "
                   f"request) / measured read bandwidth ({gbps} GB/s); error bars p10..p90")
    return fig


def main(argv=None) -> int:
    """Command line entry: parse arguments, read and check the CSV, write the figure; returns the exit status."""
    return style.run_figure(__doc__, DEFAULT_CSV, NAME, lambda path: style.read_csv(path, REQUIRED_COLUMNS, KIND),
                            build, argv, with_phase=True)


if __name__ == "__main__":
    sys.exit(main())
