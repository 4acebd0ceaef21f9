"""KVBuffer buffer forms: raw against delta decode latency per layer, against buffer size B, per batch.

Top panel (log2 x, log y): median per-layer decode latency (us), error bars p10..p90, of the delta form (bf16 keys,
fp32 corrected deltas and log-decays per entry) and the raw form (bf16 k, v, a, b per entry; the deltas rebuilt from
the checkpoint on every step), one line style per batch; recurrent decode as a horizontal line per batch when the CSV
has recurrent rows. Bottom panel (log2 x): raw latency over delta latency at the same batch and B, with a reference
line at 1.25x. Only plain launches are drawn (launch = plain; a CSV without the launch column holds only those,
decode_data.launch_of): launch = pdl rows are left out, so that no batch has two points at one B and the recurrent
line is a plain launch's. A CSV whose rows of one line hold several tiles or seeds is refused for the same reason.

Usage: python3 plots/buffer_form.py [--csv results/buffer_form.csv] [--out-dir results/figures]
       [--phase staggered|aligned]
Writes OUT_DIR/buffer_form.png and .pdf. Exit 2 on bad input (a missing column is named).
"""

from __future__ import annotations

import stop_at_start  # first, before the plotting libraries load: a signal meanwhile stops it in one line

NAME = "buffer_form"
stop_at_start.guard_figure(NAME, __name__)

import sys  # noqa: E402

import decode_data as dd  # noqa: E402
import style  # noqa: E402

DEFAULT_CSV = "buffer_form.csv"
KIND = "decode"  # the result CSV kind it reads (result_csv.py)
REQUIRED_COLUMNS = (
    ("variant", "batch", "buffer_size", "buffer_form", "phase", "latency_us_median", "latency_us_p10",
     "latency_us_p90")
    + dd.FOOTNOTE_COLUMNS
)
FORMS = ("delta", "raw")
FORM_COLOURS = {"delta": "#31688e", "raw": "#e8741c"}
BATCH_STYLES = ("-", "--", ":", "-.")
BATCH_MARKERS = ("o", "s", "^", "D")
REFERENCE_RATIO = 1.25  # raw / delta reference line


def split_rows(rows, path, phase: str):
    """(recurrent latency by batch, {(form, batch): [(B, median, p10, p90)] sorted by B}) for the plain-launch rows
    (dd.launch_of), KVBuffer ones of `phase`. Exits 2 on an unknown variant or form, when the plain KVBuffer rows
    are all of other phases (dd.require_phase), when either form has no such row, or when the rows of one line (the
    recurrent one of a batch, a form's at a batch) hold several tiles or seeds (dd.require_one_setup)."""
    recurrent: dict[int, float] = {}
    kv: dict[tuple[str, int], list] = {}
    lines: dict[tuple[str, int], list] = {}  # the rows of each line: ("recurrent", batch) or (form, batch)
    for r in rows:
        variant = r["variant"].strip()
        if variant not in ("recurrent", "kvbuffer"):
            style.fail(f"CSV {path} column variant: '{variant}' is not one of recurrent, kvbuffer")
        # A pdl row is a point of its own: kept, it would draw a second point at its B (or set the recurrent line).
        if dd.launch_of(r) != "plain":
            continue
        batch = int(style.num(r, "batch", path))
        if variant == "recurrent":
            recurrent[batch] = style.num(r, "latency_us_median", path)
            lines.setdefault((variant, batch), []).append(r)
            continue
        if r["phase"].strip() != phase:
            continue
        form = r["buffer_form"].strip()
        if form not in FORMS:
            style.fail(f"CSV {path} column buffer_form: '{form}' is not one of {', '.join(FORMS)}")
        kv.setdefault((form, batch), []).append(
            (style.num(r, "buffer_size", path), style.num(r, "latency_us_median", path),
             style.num(r, "latency_us_p10", path), style.num(r, "latency_us_p90", path)))
        lines.setdefault((form, batch), []).append(r)
    dd.require_one_setup(lines.values(), path)
    dd.require_phase(rows, path, phase)
    for form in FORMS:
        if not any(f == form for f, _ in kv):
            style.fail(f"CSV {path} has no kvbuffer rows with buffer_form {form}, phase {phase} and launch plain (the "
                       "figure draws plain launches)")
    for pts in kv.values():
        pts.sort()
    return recurrent, kv


def raw_over_delta(kv, batch: int) -> list[tuple[float, float]]:
    """(B, raw median / delta median) at every B both forms have at `batch`."""
    delta = {b: m for b, m, _, _ in kv.get(("delta", batch), [])}
    return [(b, m / delta[b]) for b, m, _, _ in kv.get(("raw", batch), []) if b in delta and delta[b] > 0]


def build(rows, path, phase: str = "staggered"):
    """The figure for buffer_form `rows` read from `path` (KVBuffer rows of `phase` only)."""
    dd.require_one_model(rows, path)
    recurrent, kv = split_rows(rows, path, phase)
    batches = sorted({b for _, b in kv})
    fig, (ax, ratio) = style.figure(style.TALL_WIDE, nrows=2, sharex=True, height_ratios=(3, 2))
    all_b: set[float] = set()
    for i, batch in enumerate(batches):
        ls, marker = BATCH_STYLES[i % len(BATCH_STYLES)], BATCH_MARKERS[i % len(BATCH_MARKERS)]
        if batch in recurrent:
            ax.axhline(recurrent[batch], color=style.RECURRENT_COLOUR, ls=ls, lw=2.0, label=f"recurrent, batch {batch}",
                       zorder=2)
        for form in FORMS:
            pts = kv.get((form, batch))
            if not pts:
                continue
            b, med, p10, p90 = zip(*pts)
            all_b.update(b)
            lo = [max(m - p, 0.0) for m, p in zip(med, p10)]
            hi = [max(p - m, 0.0) for m, p in zip(med, p90)]
            ax.errorbar(b, med, yerr=[lo, hi], color=FORM_COLOURS[form], ls=ls, marker=marker, lw=1.4,
                        label=f"{form} form, batch {batch}", zorder=3)
        pairs = raw_over_delta(kv, batch)
        if pairs:
            ratio.plot(*zip(*pairs), color="#444444", ls=ls, marker=marker, lw=1.4, label=f"batch {batch}", zorder=3)
    ratio.axhline(REFERENCE_RATIO, color=style.ANCHOR_COLOUR, ls="--", lw=1.2, label=f"{REFERENCE_RATIO:g}x",
                  zorder=2)
    ratio.axhline(1.0, color=style.IDEAL_COLOUR, lw=1.0, label="equal", zorder=1)
    lo, hi = ratio.get_ylim()
    ratio.set_ylim(min(lo, 0.9), max(hi, REFERENCE_RATIO * 1.08))

    ax.set_yscale("log")
    style.log_axis_125(ax.yaxis)
    ax.set_ylabel("latency per layer (us), median, p10..p90")
    layers = style.distinct(rows, "layers")
    ax.set_title(f"KVBuffer decode per layer, raw vs delta buffer form, {phase} buffer phases"
                 + (f", {layers[0]} layers per step" if layers else ""))
    style.legend_outside(ax)
    ratio.set_ylabel("raw / delta latency (ratio)")
    style.legend_outside(ratio)
    style.log2_axis(ratio, all_b, "buffer size B (tokens)")
    ax.set_xlabel("")
    style.footnote(fig, rows, path, extra="delta: bf16 keys, fp32 corrected deltas and log-decays per entry; raw: bf16 "
                   "k, v, a, b per entry, deltas rebuilt from the checkpoint every step; plain launches; error bars "
                   "p10..p90")
    return fig


def main(argv=None) -> int:
    """Command line entry: parse arguments, read and check the CSV, write the figure; returns the exit status."""
    return style.run_figure(__doc__, DEFAULT_CSV, NAME, lambda path: style.read_csv(path, REQUIRED_COLUMNS, KIND),
                            build, argv, with_phase=True)


if __name__ == "__main__":
    sys.exit(main())
