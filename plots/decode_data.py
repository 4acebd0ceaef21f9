"""Series of a decode CSV (`kvb sweep`, kind "decode"): one per variant and buffer size, points ordered by batch.

A decode row is one sweep point: `variant` (recurrent, kvbuffer, or a peer: another project's kernel measured by the
peer runner, docs/MEASURING.md "Peers"), `batch` (requests), `buffer_size` (B, tokens; empty for recurrent and the
peers), `phase` (staggered or aligned; empty for recurrent and the peers), the model shape (`heads_v` = HV,
`head_dim_k` = K, `head_dim_v` = V), `state_dtype`, per-layer results, and for a peer its `package` and
`package_version` (docs/EXPERIMENTS.md). The rows of one series share their `tile` and `seed`, which no option of the
figures selects: a CSV measuring a point under several of them is refused (require_one_setup).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import style

# Columns every decode figure needs to group rows into series and write the footnote.
SERIES_COLUMNS = ("variant", "batch", "buffer_size", "phase")
FOOTNOTE_COLUMNS = ("gpu", "git_sha", "timestamp")
SHAPE_COLUMNS = ("heads_v", "head_dim_k", "head_dim_v")
# The model a figure draws, one value each (require_one_model): rows of two models would fall into one series as two
# points at one batch, or be drawn side by side as one model's lines.
MODEL_COLUMNS = ("layers", "heads_qk") + SHAPE_COLUMNS
# Columns that no option of the figures selects: rows of one series that differ in one of them are several
# measurements of the same points (two points at one batch or B of one line), so such a series is refused.
SETUP_COLUMNS = ("tile", "seed")

# Bytes per state element by `state_dtype`.
STATE_DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}

# The peers of the decode kind (harness/kinds/peer_variants.h): variant -> (name, colour, marker).
PEERS = {
    "fla_recurrent": ("fla Triton recurrent", style.ANCHOR_COLOUR, "x"),
    "flashinfer_recurrent": ("FlashInfer recurrent", style.PEER_COLOURS[0], "+"),
    "replayssm_decode": ("ReplaySSM decode", style.PEER_COLOURS[1], "1"),
}


@dataclass
class Series:
    """One line of a decode figure: its legend label, colour, marker, and rows sorted by batch."""

    label: str
    variant: str
    buffer_size: int | None
    colour: object
    marker: str
    rows: list = field(default_factory=list)

    def batches(self, path) -> list[float]:
        """Batch sizes (requests) of the points."""
        return [style.num(r, "batch", path) for r in self.rows]

    def values(self, column: str, path) -> list[float]:
        """`column` of every point as floats, in batch order."""
        return [style.num(r, column, path) for r in self.rows]


def launch_of(row: Mapping[str, str]) -> str:
    """The row's `launch` (plain or pdl); plain for a CSV written before the column existed."""
    return (row.get("launch") or "plain").strip()


def decode_series(rows: Sequence[Mapping[str, str]], path, phase: str = "staggered",
                  launch: str = "plain") -> list[Series]:
    """Recurrent first, then KVBuffer per buffer size (ascending), from the rows whose phase is `phase`.

    Only rows launched as `launch` are kept (`plain`, as the anchors were measured, or `pdl`; see launch_of).
    Recurrent rows have no phase and are kept whatever the phase. When the KVBuffer rows hold several `buffer_form`
    or `row_order` values, each is added to the labels and each (form, order, B) is its own series. Peer rows are
    left to peer_series. Exits 2 on an unknown variant, or when a series' rows hold several values of a SETUP_COLUMNS
    column (require_one_setup).
    """
    recurrent = Series("recurrent", "recurrent", None, style.RECURRENT_COLOUR, "o")
    kv: dict[tuple[str, str, int], Series] = {}
    kv_rows = [r for r in rows if r["variant"] == "kvbuffer"]
    forms = style.distinct(kv_rows, "buffer_form")
    orders = {(r.get("row_order") or "").strip() or "automatic" for r in kv_rows}  # older CSVs: automatic
    for r in rows:
        if launch_of(r) != launch:
            continue
        variant = r["variant"]
        if variant in PEERS:
            continue
        if variant == "recurrent":
            recurrent.rows.append(r)
        elif variant == "kvbuffer":
            if (r.get("phase") or "").strip() != phase:
                continue
            key = kvbuffer_key(r, path)
            form, order, b = key
            if key not in kv:
                notes = ([form] if len(forms) > 1 else []) + ([f"{order} order"] if len(orders) > 1 else [])
                label = f"KVBuffer B = {b}" + (f" ({', '.join(notes)})" if notes else "")
                kv[key] = Series(label, "kvbuffer", b, style.buffer_colour(b), "s")
            kv[key].rows.append(r)
        else:
            style.fail(f"CSV {path} column variant: '{variant}' is not one of recurrent, kvbuffer, {', '.join(PEERS)}")
    out = [recurrent] if recurrent.rows else []
    out += [kv[k] for k in sorted(kv, key=lambda k: (k[2], k[0], k[1]))]
    require_one_setup((s.rows for s in out), path)
    for s in out:
        s.rows.sort(key=lambda r: style.num(r, "batch", path))
    return out


def kvbuffer_key(row: Mapping[str, str], path) -> tuple[str, str, int]:
    """(buffer_form, row_order, B) of a KVBuffer row: the series decode_series puts it in (within a phase and launch).
    An empty row_order (a CSV written before the column) is automatic."""
    return ((row.get("buffer_form") or "").strip(), (row.get("row_order") or "").strip() or "automatic",
            int(style.num(row, "buffer_size", path)))


def require_one_setup(groups, path) -> None:
    """Exit 2 with one line naming the CSV, the column and its values (style.require_single) when the rows of any of
    `groups` (the rows of one series each) hold several values of a SETUP_COLUMNS column (tile, seed)."""
    for rows in groups:
        style.require_single(rows, SETUP_COLUMNS, path)


def require_one_model(rows: Sequence[Mapping[str, str]], path, one_state_dtype: bool = True) -> None:
    """Exit 2 with one line naming the CSV, the column and its values (style.require_single) when `rows` hold several
    values of a MODEL_COLUMNS column (a column a CSV lacks holds none), or of state_dtype when `one_state_dtype` (the
    figures that draw one state dtype at a time)."""
    style.require_single(rows, MODEL_COLUMNS + (("state_dtype",) if one_state_dtype else ()), path)


def require_phase(rows: Sequence[Mapping[str, str]], path, phase: str) -> None:
    """Exit 2 with one line naming the CSV, `phase` and the phases the CSV's plain-launch KVBuffer rows hold when it
    has such rows but none of `phase` (--phase): the figure would draw recurrent and the peers alone under a title
    naming `phase`. The launch is named only when the CSV has a launch column (short_context's has none: every row
    is a plain launch)."""
    held = style.distinct([r for r in rows if r["variant"] == "kvbuffer" and launch_of(r) == "plain"], "phase")
    if held and phase not in held:
        launched = any("launch" in r for r in rows)
        also, whose = (" and launch plain", " with launch plain") if launched else ("", "")
        style.fail(f"CSV {path} has no kvbuffer rows with phase {phase}{also} (allowed: --phase {' or '.join(held)}, "
                   f"the phases of its kvbuffer rows{whose})")


def require_decode_series(rows: Sequence[Mapping[str, str]], path, phase: str = "staggered") -> list[Series]:
    """decode_series(rows, path, phase) (plain launches), exiting 2 when it is empty. The decode figures draw this
    project's recurrent and KVBuffer series and the peers beside them, so a CSV holding only peer or launch = pdl rows
    is refused: a figure of peers alone would compare nothing, and its title names KVBuffer's buffer phases. A CSV
    whose KVBuffer rows are all of other phases than `phase` is refused too (require_phase)."""
    require_phase(rows, path, phase)
    series = decode_series(rows, path, phase)
    if not series:
        style.fail(f"CSV {path} has no recurrent rows with launch plain and no kvbuffer rows with phase {phase} and "
                   "launch plain (the figure's series are plain launches, the peers drawn beside them)")
    return series


def peer_series(rows: Sequence[Mapping[str, str]], path) -> list[Series]:
    """One series per peer variant with rows (in PEERS order), labelled "NAME (measured, PACKAGE VERSION)", points
    ordered by batch. A peer row has no launch (its package launches it). Exits 2 when a peer's rows hold several
    seeds (require_one_setup)."""
    out = []
    for variant, (name, colour, marker) in PEERS.items():
        mine = sorted((r for r in rows if r["variant"] == variant), key=lambda r: style.num(r, "batch", path))
        if not mine:
            continue
        require_one_setup([mine], path)
        versions = ", ".join(style.distinct(
            [{"v": f"{r.get('package') or ''} {r.get('package_version') or ''}".strip()} for r in mine], "v"))
        out.append(Series(f"{name} (measured{', ' + versions if versions else ''})", variant, None, colour, marker,
                          mine))
    return out


def best_kvbuffer_by_batch(rows: Sequence[Mapping[str, str]], path, phase: str, launch: str,
                           max_buffer_size: int = 32) -> dict[float, float]:
    """Fastest KVBuffer median latency (us) per batch over B <= max_buffer_size, from the rows of `phase` launched as
    `launch` (plain when the CSV has no `launch` column); empty when there are none. The minimum is over buffer sizes
    (and forms and row orders), never over tiles or seeds, which no option selects: exits 2 when the rows it takes of
    one series (kvbuffer_key, as decode_series would draw them) hold several of them (require_one_setup)."""
    best: dict[float, float] = {}
    taken: dict[tuple[str, str, int], list] = {}  # the rows taken, by the series they belong to
    for r in rows:
        if r["variant"] != "kvbuffer" or (r.get("phase") or "").strip() != phase or launch_of(r) != launch:
            continue
        if style.num(r, "buffer_size", path) > max_buffer_size:
            continue
        taken.setdefault(kvbuffer_key(r, path), []).append(r)
        b, us = style.num(r, "batch", path), style.num(r, "latency_us_median", path)
        best[b] = min(us, best.get(b, us))
    require_one_setup(taken.values(), path)
    return best


def state_bytes_per_request(row: Mapping[str, str], path) -> float:
    """Bytes of one request's state in one layer: HV * K * V * element size of `state_dtype` (DESIGN.md section 1)."""
    dtype = (row.get("state_dtype") or "").strip()
    if dtype not in STATE_DTYPE_BYTES:
        allowed = ", ".join(STATE_DTYPE_BYTES)
        style.fail(f"CSV {path} column state_dtype: '{dtype}' is not one of {allowed}")
    hv, k, v = (style.num(row, c, path) for c in SHAPE_COLUMNS)
    return hv * k * v * STATE_DTYPE_BYTES[dtype]


def read_state_floor_us(batch: float, state_bytes: float, read_gbps: float) -> float:
    """Time to read every request's state once at the measured read bandwidth, in microseconds.

    floor = batch * state_bytes / (read_gbps * 1e9 B/s) * 1e6 us. This is the least any decode kernel that keeps
    the state in device memory can take: KVBuffer must at least read its checkpoint, the recurrent kernel must also
    write the state back (the anchors' read-only state floor, results/anchors.csv).
    """
    return batch * state_bytes / (read_gbps * 1e3)


def is_qwen3_next_tp1(row: Mapping[str, str], path, state_dtype: str = "fp32") -> bool:
    """True when the row's shape is the one the anchors (results/anchors.csv) measured, Qwen3-Next's at tensor
    parallelism 1: 16 key heads, HV = 32, K = V = 128, with `state_dtype` states (fp32 for most anchors; bf16 for
    FlashInfer's bf16-state verify)."""
    hk, hv, k, v = (style.num(row, c, path) for c in ("heads_qk",) + SHAPE_COLUMNS)
    return (hk, hv, k, v) == (16, 32, 128, 128) and (row.get("state_dtype") or "").strip() == state_dtype
