"""Serving capacity against draft tokens m: recurrent verification and KVBuffer verification per buffer size B.

Top panel: the largest number of concurrent requests a memory budget holds (kvb capacity) for recurrent_verify and
kvbuffer_verify (one series per B), against m. Bottom panel: KVBuffer requests over recurrent requests at the same m,
with the paper's 5x as a horizontal line. Request counts are max_requests_measured (proved by allocation on a GPU)
when every plotted row has one, else max_requests_model; the footnote says which.

One state dtype at a time (the CSV's state_dtype column; a CSV without it holds fp32 states): fp32 by default, bf16
with --state-dtype bf16, each ratio over recurrent verification with states of the same dtype. The title names the
dtype. Rows of status "kernel not available..." are drawn too: their pools were allocated (a bf16 verify row, whose
kernel stores fp32 states only, runs no step), so their counts are proved.

Usage: python3 plots/capacity.py [--csv results/capacity.csv] [--out-dir results/figures] [--state-dtype fp32|bf16]
Writes OUT_DIR/capacity.png and .pdf. Exit 2 on bad input (a missing column is named).
"""

from __future__ import annotations

import stop_at_start  # first, before the plotting libraries load: a signal meanwhile stops it in one line

NAME = "capacity"
stop_at_start.guard_figure(NAME, __name__)

import sys  # noqa: E402

import decode_data as dd  # noqa: E402
import style  # noqa: E402

DEFAULT_CSV = "capacity.csv"
KIND = "capacity"  # the result CSV kind it reads (result_csv.py)
REQUIRED_COLUMNS = ("variant", "buffer_size", "draft_tokens", "budget_bytes", "max_requests_model",
                    "max_requests_measured", "layers", "gpu", "timestamp")
PAPER_RATIO = 5.0  # the paper: 5x the requests with 4 draft tokens


def capacity_rows(path):
    """Rows of the capacity CSV at `path` whose status is ok, "model only (...)" or "kernel not available..." (pools
    allocated, no step run); exits 2 when the file is missing or breaks a rule of kvb's validation
    (style.read_result_rows), a column is missing, or no row is left."""
    rows = style.read_result_rows(path, KIND)
    if rows:
        style.require_columns(rows, REQUIRED_COLUMNS, path)
    rows = [r for r in rows if (r.get("status") or "").strip() == "ok"
            or (r.get("status") or "").strip().startswith(("model only", "kernel not available"))]
    if not rows:
        style.fail(f"CSV {path} has no rows with status ok, model only or kernel not available")
    return rows


def build(rows, path):
    """The figure for capacity `rows` read from `path`, all of one state dtype (a blank or absent state_dtype reads
    fp32)."""
    dd.require_one_model(rows, path)
    style.require_single(rows, ("budget_bytes",), path)
    dtype = (style.distinct(rows, "state_dtype") or ["fp32"])[0]
    verify = [r for r in rows if r["variant"].strip() in ("recurrent_verify", "kvbuffer_verify")]
    if not verify:
        style.fail(f"CSV {path} has no recurrent_verify or kvbuffer_verify rows")
    measured = all(not style.is_empty(r, "max_requests_measured") for r in verify)
    column = "max_requests_measured" if measured else "max_requests_model"

    recurrent = {int(style.num(r, "draft_tokens", path)): style.num(r, column, path)
                 for r in verify if r["variant"].strip() == "recurrent_verify"}
    by_b: dict[int, dict[int, float]] = {}
    for r in verify:
        if r["variant"].strip() == "kvbuffer_verify":
            by_b.setdefault(int(style.num(r, "buffer_size", path)), {})[int(style.num(r, "draft_tokens", path))] = \
                style.num(r, column, path)

    fig, (top, bottom) = style.figure(style.TALL, nrows=2, sharex=True, height_ratios=(3, 2))
    all_m: set[int] = set(recurrent)
    if recurrent:
        ms = sorted(recurrent)
        top.plot(ms, [recurrent[m] for m in ms], color=style.RECURRENT_COLOUR, marker="o", lw=2.0,
                 label="recurrent verify")
    for b in sorted(by_b):
        ms = sorted(by_b[b])
        all_m.update(ms)
        colour = style.buffer_colour(b)
        top.plot(ms, [by_b[b][m] for m in ms], color=colour, marker="s", label=f"KVBuffer verify B = {b}")
        pairs = [(m, by_b[b][m] / recurrent[m]) for m in ms if recurrent.get(m)]
        if pairs:
            bottom.plot(*zip(*pairs), color=colour, marker="s", label=f"B = {b}")
    bottom.axhline(PAPER_RATIO, color=style.ANCHOR_COLOUR, ls="--", lw=1.2, label=f"paper: {PAPER_RATIO:g}x")
    bottom.axhline(1.0, color=style.RECURRENT_COLOUR, lw=1.0)

    budget_gib = style.num(verify[0], "budget_bytes", path) / 2**30
    layers = style.distinct(rows, "layers")
    top.set_ylabel("concurrent requests")
    top.set_ylim(bottom=0)
    top.set_title(f"Serving capacity, {budget_gib:.1f} GiB budget"
                  + (f", {layers[0]} layers" if layers else "") + f", {dtype} states")
    style.legend_outside(top)
    bottom.set_ylabel("KVBuffer / recurrent")
    bottom.set_ylim(bottom=0)
    bottom.set_xticks(sorted(all_m))
    bottom.set_xlabel("draft tokens m")
    style.legend_outside(bottom)
    source = ("max_requests_measured (allocated on the GPU, one step run, one more request failed)" if measured
              else "max_requests_model (byte model only, nothing allocated)")
    style.footnote(fig, rows, path, extra=f"requests: {source}")
    return fig


def main(argv=None) -> int:
    """Command line entry: parse arguments, read and check the CSV, write the figure; returns the exit status."""
    return style.run_figure(__doc__, DEFAULT_CSV, NAME, capacity_rows, build, argv)


if __name__ == "__main__":
    sys.exit(main())
