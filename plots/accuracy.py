"""Accuracy over a long decode: error against the float64 reference against tokens decoded, per variant and state dtype.

Top panel (log x, log y): the state's error after T tokens (per head, relative to the head's largest element; KVBuffer:
its checkpoint with the buffered entries folded in), one line per variant, buffer size and state dtype (fp32 solid,
bf16 dashed). Bottom panel: the largest output error over the first T tokens, the same lines. Read from the
state_err_at_T and o_err_at_T columns of an accuracy CSV (kvb sweep --config experiments/accuracy.toml).

Usage: python3 plots/accuracy.py [--csv results/accuracy.csv] [--out-dir results/figures]
Writes OUT_DIR/accuracy.png and .pdf. Exit 2 on bad input (a missing column is named).
"""

from __future__ import annotations

import stop_at_start  # first, before the plotting libraries load: a signal meanwhile stops it in one line

NAME = "accuracy"
stop_at_start.guard_figure(NAME, __name__, with_state_dtype=False)

import math  # noqa: E402
import sys  # noqa: E402

import decode_data as dd  # noqa: E402
import style  # noqa: E402

DEFAULT_CSV = "accuracy.csv"
KIND = "accuracy"  # the result CSV kind it reads (result_csv.py)
CHECKPOINTS = (1, 64, 512, 4096, 16384)  # harness/workloads/accuracy_run.h accuracy_checkpoints()
REQUIRED_COLUMNS = (("variant", "buffer_size", "state_dtype", "tokens_run") + dd.FOOTNOTE_COLUMNS
                    + tuple(f"{q}_err_at_{t}" for t in CHECKPOINTS for q in ("state", "o")))
DTYPE_STYLES = {"fp32": "-", "bf16": "--"}
VARIANT_COLOURS = {"recurrent": style.RECURRENT_COLOUR}
KVBUFFER_COLOURS = ("#31688e", "#35b779", "#e8741c", "#9467bd")
# Key columns that no option selects and no label names: rows of one line (a variant, B and dtype) that differ in one
# of them are several runs of that line, each drawn as a line of its own under the same label, so such a line is
# refused (style.require_single), batch and tokens as the tile and seed of dd.require_one_setup.
LINE_COLUMNS = ("batch", "tokens") + dd.SETUP_COLUMNS


def read_rows(path):
    """The ok rows of the accuracy CSV at `path`, every state dtype (kvb's validation first); exits 2 when none."""
    rows = [r for r in style.read_result_rows(path, KIND) if r.get("status", "ok") == "ok"]
    if not rows:
        style.fail(f"CSV {path} has no rows with status ok")
    style.require_columns(rows, REQUIRED_COLUMNS, path)
    return rows


def series(rows, path):
    """[(label, variant, B, dtype, [(T, state_err, o_err)])] in a stable order; exits 2 on an unknown variant or
    dtype, a bad number, or when the rows of one line (a variant, B and dtype) hold several batches, token counts,
    tiles or seeds (LINE_COLUMNS): each would be a line of its own under the same label."""
    out = []
    lines: dict[tuple[str, str, str], list] = {}  # the rows of each line, by (variant, B, dtype)
    for r in rows:
        variant, dtype = r["variant"].strip(), r["state_dtype"].strip()
        if variant not in ("recurrent", "kvbuffer"):
            style.fail(f"CSV {path} column variant: '{variant}' is not recurrent or kvbuffer")
        if dtype not in DTYPE_STYLES:
            style.fail(f"CSV {path} column state_dtype: '{dtype}' is not fp32 or bf16")
        b = "" if variant == "recurrent" else r["buffer_size"].strip()
        lines.setdefault((variant, b, dtype), []).append(r)
        tokens = style.num(r, "tokens", path)
        points = []
        for t in CHECKPOINTS:
            columns = (f"state_err_at_{t}", f"o_err_at_{t}")
            if t > tokens:  # a run of `tokens` tokens records nothing past them
                for c in columns:
                    if not style.is_empty(r, c):
                        style.fail(f"CSV {path} column {c}: '{r[c].strip()}' past the row's {tokens:g} tokens "
                                   "(allowed: empty)")
                continue
            errs = [style.num(r, c, path) for c in columns]
            for c, e in zip(columns, errs):
                if not (math.isfinite(e) and e >= 0):
                    style.fail(f"CSV {path} column {c}: {e} (allowed: a finite error >= 0)")
            points.append((t, *errs))
        label = ("recurrent" if variant == "recurrent" else f"KVBuffer B = {b}") + f", {dtype} states"
        out.append((label, variant, int(b) if b else 0, dtype, points))
    for line in lines.values():
        style.require_single(line, LINE_COLUMNS, path)
    out.sort(key=lambda s: (s[1] != "recurrent", s[2], s[3] != "fp32"))
    return out


def build(rows, path):
    """The figure for accuracy `rows` read from `path`."""
    dd.require_one_model(rows, path, one_state_dtype=False)  # the model's key heads too: the errors depend on them
    lines = series(rows, path)
    fig, (ax, out_ax) = style.figure(style.TALL_WIDE, nrows=2, sharex=True)
    sizes = sorted({b for _, v, b, _, _ in lines if v == "kvbuffer"})
    ticks: set[float] = set()
    for label, variant, b, dtype, points in lines:
        if not points:
            continue
        colour = VARIANT_COLOURS.get(variant) or KVBUFFER_COLOURS[sizes.index(b) % len(KVBUFFER_COLOURS)]
        ts = [p[0] for p in points]
        ticks.update(ts)
        # A zero error (nothing rounded yet) cannot sit on a log axis: drawn at the axis floor.
        ax.plot(ts, [max(p[1], 1e-12) for p in points], color=colour, ls=DTYPE_STYLES[dtype], marker="o", lw=1.6,
                label=label)
        out_ax.plot(ts, [max(p[2], 1e-12) for p in points], color=colour, ls=DTYPE_STYLES[dtype], marker="o", lw=1.6,
                    label=label)
    for a in (ax, out_ax):
        a.set_yscale("log")
        a.grid(True, which="major", alpha=0.3)
    ax.set_ylabel("state error after T tokens\n(of the head's largest element)")
    out_ax.set_ylabel("largest output error\nover the first T tokens")
    ax.set_title("Drift from the float64 reference over a long decode, one layer")
    style.legend_outside(ax)
    style.log2_axis(out_ax, ticks, "tokens decoded T")
    ax.set_xlabel("")
    style.footnote(fig, rows, path, extra="float64 reference with nothing rounded, from the states as stored; fp32 "
                   "outputs; KVBuffer state: checkpoint with the buffered entries folded in")
    return fig


def main(argv=None) -> int:
    """Command line entry: parse arguments, read and check the CSV, write the figure; returns the exit status."""
    return style.run_figure(__doc__, DEFAULT_CSV, NAME, read_rows, build, argv, with_state_dtype=False)


if __name__ == "__main__":
    sys.exit(main())
