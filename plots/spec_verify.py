"""Speculative verification latency per layer against draft tokens m: recurrent and KVBuffer, one panel per batch.

Each panel (log y): median per-layer latency (us) of verify + accept, error bars p10..p90, for recurrent verify and
KVBuffer verify (one series per buffer size B); accepted = 0.7 solid, accepted = all dashed when the CSV has it; verify
alone as thin dotted lines (accepted = 0.7). SGLang's speculative-verify kernel and ReplaySSM's verify (alone, and
verify + flush + commit with every draft accepted), measured on an H200 (anchors, results/anchors.csv), are drawn as
reference markers when the CSV's shape is the anchors' (HV = 32, K = V = 128, fp32 state). Only rows launched plainly are drawn (as the anchors were measured); a CSV's launch = pdl rows are
left out (the claims table of `kvb reproduce` has them). A CSV whose rows of one line hold several tiles or seeds is
refused.

Usage: python3 plots/spec_verify.py [--csv results/spec_verify.csv] [--out-dir results/figures]
Writes OUT_DIR/spec_verify.png and .pdf. Exit 2 on bad input (a missing column is named).
"""

from __future__ import annotations

import stop_at_start  # first, before the plotting libraries load: a signal meanwhile stops it in one line

NAME = "spec_verify"
stop_at_start.guard_figure(NAME, __name__)

import sys  # noqa: E402

from matplotlib.ticker import FuncFormatter  # noqa: E402

import anchors  # noqa: E402
import decode_data as dd  # noqa: E402
import style  # noqa: E402

DEFAULT_CSV = "spec_verify.csv"
KIND = "spec_verify"  # the result CSV kind it reads (result_csv.py)
REQUIRED_COLUMNS = (
    ("variant", "batch", "draft_tokens", "accepted", "buffer_size")
    + dd.SHAPE_COLUMNS
    + ("state_dtype", "verify_us_median", "verify_accept_us_median", "verify_accept_us_p10", "verify_accept_us_p90")
    + dd.FOOTNOTE_COLUMNS
)
VARIANTS = ("recurrent_verify", "kvbuffer_verify")
# accepted value -> line style of verify + accept; others are not drawn.
ACCEPTED_STYLE = {"0.7": "-", "all": "--"}


def series_key(row, path) -> tuple[str, int]:
    """(variant, B) of a row; B = 0 for recurrent verify. Exits 2 on an unknown variant."""
    v = row["variant"].strip()
    if v not in VARIANTS:
        style.fail(f"CSV {path} column variant: '{v}' is not one of {', '.join(VARIANTS)}")
    return v, 0 if v == "recurrent_verify" else int(style.num(row, "buffer_size", path))


def label_and_colour(key: tuple[str, int]):
    variant, b = key
    if variant == "recurrent_verify":
        return "recurrent verify", style.RECURRENT_COLOUR
    return f"KVBuffer verify B = {b}", style.buffer_colour(b)


def build(rows, path):
    """The figure for spec_verify `rows` read from `path` (its plain-launch rows; exits 2 when it has none)."""
    rows = [r for r in rows if dd.launch_of(r) == "plain"]
    if not rows:
        style.fail(f"CSV {path} column launch: no row with launch = plain")
    dd.require_one_model(rows, path)
    # One KVBuffer verify setup a figure: a CSV of several buffer forms, phases or verify kernels is refused (their
    # points would fall into one series).
    style.require_single(rows, ("buffer_form", "phase", "verify_kernel"), path)
    accepted_values = [a for a in ACCEPTED_STYLE if a in style.distinct(rows, "accepted")]
    if not accepted_values:
        style.fail(f"CSV {path} column accepted holds none of {', '.join(ACCEPTED_STYLE)}")
    # The rows of each line drawn (a batch's variant and B at one accepted value) share their tile and seed, which no
    # option selects: rows differing in them would be two points at one m of the line. Lines under different tiles
    # (recurrent verify under another than KVBuffer verify) are drawn.
    lines: dict[tuple, list] = {}
    for r in rows:
        key = series_key(r, path)
        if r["accepted"].strip() in accepted_values:
            lines.setdefault((int(style.num(r, "batch", path)), key, r["accepted"].strip()), []).append(r)
    dd.require_one_setup(lines.values(), path)
    batches = sorted({int(style.num(r, "batch", path)) for r in rows})
    anchor_shape = dd.is_qwen3_next_tp1(rows[0], path)
    bf16_anchor_shape = dd.is_qwen3_next_tp1(rows[0], path, "bf16")
    fig, axes = style.figure((8.4, 3.6 * len(batches)), nrows=len(batches), sharex=True)
    all_m: set[int] = set()
    for ax, batch in zip(axes, batches):
        at_batch = [r for r in rows if int(style.num(r, "batch", path)) == batch]
        keys = sorted({series_key(r, path) for r in at_batch}, key=lambda k: (k[0] != "recurrent_verify", k[1]))
        for key in keys:
            label, colour = label_and_colour(key)
            for acc in accepted_values:
                pts = sorted((r for r in at_batch if series_key(r, path) == key and r["accepted"].strip() == acc),
                             key=lambda r: style.num(r, "draft_tokens", path))
                if not pts:
                    continue
                m = [style.num(r, "draft_tokens", path) for r in pts]
                all_m.update(int(x) for x in m)
                med = [style.num(r, "verify_accept_us_median", path) for r in pts]
                lo = [max(y - style.num(r, "verify_accept_us_p10", path), 0.0) for y, r in zip(med, pts)]
                hi = [max(style.num(r, "verify_accept_us_p90", path) - y, 0.0) for y, r in zip(med, pts)]
                ax.errorbar(m, med, yerr=[lo, hi], color=colour, ls=ACCEPTED_STYLE[acc],
                            marker="o" if key[0] == "recurrent_verify" else "s",
                            lw=2.0 if key[0] == "recurrent_verify" else 1.4,
                            label=f"{label}, verify + accept ({acc})", zorder=3)
                if acc == accepted_values[0]:
                    ax.plot(m, [style.num(r, "verify_us_median", path) for r in pts], color=colour, ls=":",
                            lw=1.0, label=f"{label}, verify alone", zorder=2)
        anchor_series = []
        if anchor_shape:
            anchor_series = [(anchors.SPEC_VERIFY_US, anchors.SPEC_VERIFY_LABEL, "x"),
                             (anchors.REPLAYSSM_VERIFY_US, anchors.REPLAYSSM_VERIFY_LABEL, "1"),
                             (anchors.REPLAYSSM_VERIFY_COMMIT_US, anchors.REPLAYSSM_VERIFY_COMMIT_LABEL, "D")]
        elif bf16_anchor_shape:
            anchor_series = [(anchors.FLASHINFER_BF16_VERIFY_US, anchors.FLASHINFER_BF16_VERIFY_LABEL, "1"),
                             (anchors.FLASHINFER_BF16_VERIFY_FLUSH_US, anchors.FLASHINFER_BF16_VERIFY_FLUSH_LABEL, "D")]
        if anchor_series:
            for series, label, marker in anchor_series:
                am = sorted(m for m, by_b in series.items() if batch in by_b)
                if am:
                    ax.plot(am, [series[m][batch] for m in am], ls="none", marker=marker, ms=7,
                            mfc="none" if marker == "D" else style.ANCHOR_COLOUR, color=style.ANCHOR_COLOUR,
                            label=label.replace(" (", "\n("), zorder=4)
        ax.set_yscale("log")
        style.plain_log_axis(ax.yaxis)
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_ylabel("latency per layer (us)")
        ax.set_title(f"batch {batch}")
        style.legend_outside(ax)
    last = axes[-1]
    last.set_xticks(sorted(all_m))
    last.set_xlabel("draft tokens m")
    layers = style.distinct(rows, "layers")
    kernels = style.distinct(rows, "kernel")
    kernel_note = (f", KVBuffer verify kernel: {kernels[0]}" if len(kernels) == 1
                   else f", KVBuffer verify kernels: {', '.join(kernels)}" if kernels else "")
    fig.suptitle("GDN speculative verification per layer" + (f", {layers[0]} layers per step" if layers else "")
                 + kernel_note, fontsize=10)
    anchor_note = ("the FlashInfer tri-markers are verify alone" if bf16_anchor_shape
                   else "the SGLang anchor and the ReplaySSM tri-markers are verify alone")
    style.footnote(fig, rows, path, extra="verify + accept: median, error bars p10..p90; accepted 0.7 = each draft "
                   "accepted with probability 0.7 until the first rejection, all = every draft accepted; "
                   f"plain launches; {anchor_note}")
    return fig


def main(argv=None) -> int:
    """Command line entry: parse arguments, read and check the CSV, write the figure; returns the exit status."""
    return style.run_figure(__doc__, DEFAULT_CSV, NAME, lambda path: style.read_csv(path, REQUIRED_COLUMNS, KIND),
                            build, argv)


if __name__ == "__main__":
    sys.exit(main())
