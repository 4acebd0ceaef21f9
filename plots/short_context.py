"""Short contexts: decode latency per layer and memory per request against context length L, recurrent and KVBuffer.

Top panel (log2 x, log y): median per-layer decode latency (us), error bars p10..p90, of KVBuffer per buffer size B
and batch (line style per batch); points where the request holds no state (`stateless` = true, L < B: the step reads
only the L buffered entries) are filled circles, stateful points (L >= B) open squares. Recurrent decode does not
depend on L (its rows have an empty context_len): one horizontal line per batch, with a thin line at 0.5x of it, the
stateless target. A thin vertical line per B marks L = B, the first context that holds a state.
Bottom panel (log2 x, log y): memory per request over all layers, state_bytes_per_request + buffer_bytes_per_request,
in MiB (2^20 bytes); recurrent as a horizontal line.

Usage: python3 plots/short_context.py [--csv results/short_context.csv] [--out-dir results/figures]
       [--phase staggered|aligned]
Writes OUT_DIR/short_context.png and .pdf. Exit 2 on bad input (a missing column is named).
"""

from __future__ import annotations

import stop_at_start  # first, before the plotting libraries load: a signal meanwhile stops it in one line

NAME = "short_context"
stop_at_start.guard_figure(NAME, __name__)

import sys  # noqa: E402

from matplotlib.lines import Line2D  # noqa: E402

import decode_data as dd  # noqa: E402
import style  # noqa: E402

DEFAULT_CSV = "short_context.csv"
KIND = "short_context"  # the result CSV kind it reads (result_csv.py)
REQUIRED_COLUMNS = (
    ("variant", "context_len", "batch", "buffer_size", "stateless", "state_bytes_per_request",
     "buffer_bytes_per_request", "latency_us_median", "latency_us_p10", "latency_us_p90")
    + dd.FOOTNOTE_COLUMNS
)
VARIANTS = ("recurrent", "kvbuffer")
# Line style of the n-th batch (ascending).
BATCH_STYLES = ("-", "--", ":", "-.")
STATELESS_TARGET = 0.5  # stateless decode at most this fraction of recurrent latency (batch >= 64)
MIB = float(2**20)


def batch_style(index: int) -> str:
    return BATCH_STYLES[index % len(BATCH_STYLES)]


def is_stateless(row, path) -> bool:
    """The row's `stateless` column as a bool; exits 2 when it is not true or false (as kvb writes them, and as kvb's
    claims read them: `True` or ` true` are refused alike)."""
    v = row.get("stateless") or ""
    if v not in ("true", "false"):
        style.fail(f"CSV {path} column stateless: '{row.get('stateless', '')}' is not true or false")
    return v == "true"


def memory_mib(row, path) -> float:
    """Memory per request over all layers, state + buffer, in MiB."""
    return (style.num(row, "state_bytes_per_request", path) + style.num(row, "buffer_bytes_per_request", path)) / MIB


def split_rows(rows, path, phase: str):
    """(recurrent rows by batch, KVBuffer rows by (B, batch) sorted by context_len) for KVBuffer rows of `phase`
    (rows without a phase are kept). Exits 2 on an unknown variant, no KVBuffer row of `phase` (naming the phases the
    CSV's KVBuffer rows hold, dd.require_phase), or when the rows of one line (recurrent's at a batch, KVBuffer's at a
    B and batch) hold several seeds (dd.require_one_setup)."""
    recurrent: dict[int, list] = {}
    kv: dict[tuple[int, int], list] = {}
    for r in rows:
        variant = r["variant"].strip()
        if variant not in VARIANTS:
            style.fail(f"CSV {path} column variant: '{variant}' is not one of {', '.join(VARIANTS)}")
        batch = int(style.num(r, "batch", path))
        if variant == "recurrent":
            recurrent.setdefault(batch, []).append(r)
            continue
        if not style.is_empty(r, "phase") and r["phase"].strip() != phase:
            continue
        is_stateless(r, path)
        style.num(r, "context_len", path)
        kv.setdefault((int(style.num(r, "buffer_size", path)), batch), []).append(r)
    dd.require_phase(rows, path, phase)
    if not kv:
        style.fail(f"CSV {path} has no kvbuffer rows with phase {phase}")
    dd.require_one_setup(list(recurrent.values()) + list(kv.values()), path)
    for pts in kv.values():
        pts.sort(key=lambda r: style.num(r, "context_len", path))
    return recurrent, kv


def draw_points(ax, xs, ys, stateless, colour, zorder=4) -> None:
    """Markers: filled circles where stateless, open squares where stateful."""
    for flag, marker, face in ((True, "o", colour), (False, "s", "white")):
        px = [x for x, s in zip(xs, stateless) if s == flag]
        py = [y for y, s in zip(ys, stateless) if s == flag]
        if px:
            ax.plot(px, py, ls="none", color=colour, marker=marker, ms=4.5, mfc=face, mec=colour, mew=1.0,
                    zorder=zorder)


def build(rows, path, phase: str = "staggered"):
    """The figure for short_context `rows` read from `path` (KVBuffer rows of `phase` only)."""
    dd.require_one_model(rows, path)
    recurrent, kv = split_rows(rows, path, phase)
    batches = sorted(set(recurrent) | {b for _, b in kv})
    ls_of = {b: batch_style(i) for i, b in enumerate(batches)}
    buffer_sizes = sorted({bs for bs, _ in kv})

    fig, (ax, mem) = style.figure(style.TALL_WIDE, nrows=2, sharex=True, height_ratios=(3, 2))
    handles = []
    all_l: set[float] = set()

    # Top: latency.
    for batch in batches:
        if batch in recurrent:
            us = sorted(style.num(r, "latency_us_median", path) for r in recurrent[batch])
            y = us[len(us) // 2]
            handles.append(ax.axhline(y, color=style.RECURRENT_COLOUR, ls=ls_of[batch], lw=2.0,
                                      label=f"recurrent, batch {batch}", zorder=2))
            handles.append(ax.axhline(STATELESS_TARGET * y, color=style.IDEAL_COLOUR, ls=ls_of[batch], lw=0.9,
                                      label=f"{STATELESS_TARGET:g} x recurrent, batch {batch}", zorder=1))
    for bs in buffer_sizes:
        colour = style.buffer_colour(bs)
        for batch in batches:
            pts = kv.get((bs, batch))
            if not pts:
                continue
            x = [style.num(r, "context_len", path) for r in pts]
            med = [style.num(r, "latency_us_median", path) for r in pts]
            lo = [max(m - style.num(r, "latency_us_p10", path), 0.0) for m, r in zip(med, pts)]
            hi = [max(style.num(r, "latency_us_p90", path) - m, 0.0) for m, r in zip(med, pts)]
            all_l.update(x)
            handles.append(ax.errorbar(x, med, yerr=[lo, hi], color=colour, ls=ls_of[batch], lw=1.3,
                                       label=f"KVBuffer B = {bs}, batch {batch}", zorder=3))
            draw_points(ax, x, med, [is_stateless(r, path) for r in pts], colour)
    for bs in buffer_sizes:
        for a in (ax, mem):
            a.axvline(bs, color=style.buffer_colour(bs), ls=(0, (1, 2)), lw=0.9, zorder=1)
    handles += [
        Line2D([], [], ls="none", marker="o", ms=4.5, mfc="#555555", mec="#555555", label="stateless (L < B)"),
        Line2D([], [], ls="none", marker="s", ms=4.5, mfc="white", mec="#555555", label="stateful (L >= B)"),
        Line2D([], [], color="#555555", ls=(0, (1, 2)), lw=0.9, label="L = B"),
    ]
    ax.set_yscale("log")
    style.log_axis_125(ax.yaxis)
    ax.set_ylabel("latency per layer (us), median, p10..p90")
    layers = style.distinct(rows, "layers")
    ax.set_title(f"GDN decode per layer against context length, {phase} buffer phases"
                 + (f", {layers[0]} layers per step" if layers else ""))
    style.legend_outside(ax, handles=handles)

    # Bottom: memory per request (does not depend on the batch; one line per B unless the batches disagree).
    mem_handles = []
    values = []
    if recurrent:
        rec_mib = memory_mib(next(iter(recurrent.values()))[0], path)
        values.append(rec_mib)
        mem_handles.append(mem.axhline(rec_mib, color=style.RECURRENT_COLOUR, lw=2.0, label="recurrent"))
    for bs in buffer_sizes:
        colour = style.buffer_colour(bs)
        curves = {}
        for batch in batches:
            pts = kv.get((bs, batch))
            if pts:
                curves[batch] = [(style.num(r, "context_len", path), memory_mib(r, path), is_stateless(r, path))
                                 for r in pts]
        same = len({tuple(c) for c in curves.values()}) == 1
        for batch, curve in (list(curves.items())[:1] if same else curves.items()):
            x, y, flags = zip(*curve)
            values += y
            mem_handles += mem.plot(x, y, color=colour, ls="-" if same else ls_of[batch], lw=1.3,
                                    label=f"KVBuffer B = {bs}" + ("" if same else f", batch {batch}"), zorder=3)
            draw_points(mem, x, y, flags, colour)
    if values and min(values) > 0:
        mem.set_yscale("log")
        style.log_axis_125(mem.yaxis)
    mem.set_ylabel("memory per request (MiB), all layers")
    style.legend_outside(mem, handles=mem_handles)
    style.log2_axis(mem, all_l | set(buffer_sizes), "context length L (tokens)")
    ax.set_xlabel("")

    style.footnote(fig, rows, path, extra="KVBuffer: filled circles stateless (L < B: no state, the step reads only the "
                   "L buffered entries), open squares stateful;\nrecurrent decode does not depend on L; "
                   "memory = state_bytes_per_request + buffer_bytes_per_request; error bars p10..p90")
    return fig


def main(argv=None) -> int:
    """Command line entry: parse arguments, read and check the CSV, write the figure; returns the exit status."""
    return style.run_figure(__doc__, DEFAULT_CSV, NAME, lambda path: style.read_csv(path, REQUIRED_COLUMNS, KIND),
                            build, argv, with_phase=True)


if __name__ == "__main__":
    sys.exit(main())
