#!/usr/bin/env python3
"""FlashInfer's bf16-state speculative verify + flush, timed as kvb times its own verify points: an anchor measured
beside `kvb sweep` spec_verify rows with bf16 checkpoints, in the same device call (docs/MEASURING.md, "Anchors").

The kernel: `gated_delta_rule_mtp_ucache_flush` of flashinfer.gdn_kernels.gdn_decode_bf16_wy_ucache_flush (pip
package flashinfer-python; CuTe DSL, SM90 and newer; m = 4 or 8 drafts, K = V = 128). Per slot and value head: a bf16
checkpoint [slots, HV, V, K] and a ring of 32 entries (L2-normalised key, bf16 correction u, fp32 cumulative
log-decay) whose live window holds at most 16 rows; a row whose window holds flush_min = 17 - m rows or more folds it
into its checkpoint in the same launch (the package's default, lazy flush) and its drafts' entries go past the window.
The caller commits the cursors once a model step for every layer (serving's per-step commit): a folded row's window
then starts past the folded rows and holds the m accepted drafts; any other row's grows by m.

One model step is `--layers` launches, each layer with its own checkpoint pool, rings and inputs (Qwen3-Next at
tensor parallelism 1: 16 key heads, 32 value heads), captured as one CUDA graph, L2 flushed before each sample, timed
with peers/protocol.py (kvb's warm-up, samples of whole cycles, stopping rule; samples after which the SM clock reads
throttled are dropped): microseconds per layer-step. Modes:
  steady  every draft accepted: the rows' windows staggered over the cycle m, 2m, ..., up to the first at or above
          flush_min, and advanced by the commit every step (kvb's spec_verify rows with accepted = all, staggered);
  fifth   windows frozen (no commit): every fifth row (r mod 5 = 4) at flush_min, folding every step, the others one
          row below (about a fifth of the rows folding a call, the regime of results/anchors.csv's
          flashinfer_bf16_wy_verify_flush; it refuses batches below 5 rows, where no row would fold);
  verify  windows frozen one row below flush_min: no row folds.
Before the timing of a draft count, a check: 4 rows, 8 calls of fresh drafts, every draft accepted (folds included),
against a sequential fp32 recurrence from the same checkpoint; max_rel_err_o is the largest output error over the
largest output. Above 0.05 the draft count's rows fail unmeasured.

Usage: python3 peers/flashinfer_verify_anchor.py --out FILE.json [--force] [--batch 64,256] [--draft-tokens 4,8]
           [--modes steady,fifth,verify] [--layers 36] [--max-seconds 0.8] [--device 0]
FILE.json (new, or replaced with --force) is written through a temporary file after every row. An existing FILE.json
that this script wrote resumes: the same command again measures only the rows it lacks or holds as failed (and the
check of their draft counts), on the GPU and package version it names (another GPU or version: refused, exit 2).
Exit status: 0 when it was written (a failed row keeps its status); 2 on a bad flag or an --out this run cannot
resume (one line naming it, nothing written); 1 when torch, a CUDA device or the kernel is missing (one line,
nothing written).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import traceback
from typing import Dict, List, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from peers.result import one_line, write_text_atomic  # noqa: E402

ANCHOR = "flashinfer_bf16_verify_flush"  # the document's "anchor" field: a file this script wrote
MODULE = "flashinfer.gdn_kernels.gdn_decode_bf16_wy_ucache_flush"
FUNCTION = "gated_delta_rule_mtp_ucache_flush"
DISTS = ("flashinfer-python", "flashinfer")
HEADS_QK, HEADS_V, HEAD_DIM = 16, 32, 128
WINDOW = 16          # the ring's live window (rows), the kernel's W_RING
RING = 32            # ring entries a slot and head, the kernel's RING_SLOTS
MODES = ("steady", "fifth", "verify")
FLAGS = ("--out", "--force", "--batch", "--draft-tokens", "--modes", "--layers", "--max-seconds", "--device")
DRAFTS = (4, 8)      # the kernel's draft counts
CHECK_ROWS, CHECK_CALLS, CHECK_BAR = 4, 8, 0.05


class UsageError(Exception):
    """A bad flag: exit 2 with the message."""


# --- the cursor schedule (plain Python: tests/peers/test_flashinfer_verify_anchor.py) ---------------------------------

def flush_min(m: int) -> int:
    """Rows in a window from which a call folds it: the kernel's lazy default, WINDOW - m + 1."""
    return WINDOW - m + 1


def cycle_steps(m: int) -> int:
    """Steps of one steady cycle: a window grows m rows a step from m until it reaches flush_min, then folds."""
    return -(-flush_min(m) // m)


def start_cursors(mode: str, rows: int, m: int) -> List[int]:
    """Window lengths (hist_len) of `rows` rows at the start of `mode`: steady staggers row r to m (1 + r mod cycle),
    fifth puts every fifth row (r mod 5 = 4) at flush_min and the others one below, verify all one below."""
    f = flush_min(m)
    if mode == "steady":
        return [m * (1 + r % cycle_steps(m)) for r in range(rows)]
    if mode == "fifth":
        return [f if r % 5 == 4 else f - 1 for r in range(rows)]
    return [f - 1] * rows


def commit(hist: Sequence[int], base: Sequence[int], m: int) -> Tuple[List[int], List[int]]:
    """Serving's per-step commit with every draft accepted: a row that folded (hist >= flush_min) starts its window
    past the folded rows ((base + hist) mod RING) holding the m drafts; another row's window grows by m."""
    f = flush_min(m)
    new_hist = [m if h >= f else h + m for h in hist]
    new_base = [(b + h) % RING if h >= f else b for h, b in zip(hist, base)]
    return new_hist, new_base


def parse_list(text: str, flag: str, allowed: Sequence, most: int = 0) -> List:
    """A comma-separated list of distinct values: of `allowed` (strings; ints where its first is an int), or where
    `allowed` is empty whole numbers from 1 to `most` written in ASCII digits."""
    out = []
    ints = not allowed or isinstance(allowed[0], int)
    what = ", ".join(map(str, allowed)) if allowed else f"whole numbers from 1 to {most}"
    for part in text.split(","):
        v = int(part) if ints and re.fullmatch("[0-9]{1,9}", part) else (part if not ints else None)
        if v is None or (v not in allowed if allowed else not 1 <= v <= most):
            raise UsageError(f"{flag} '{text[:40]}': '{part[:20]}' is not allowed (allowed: {what}, each once)")
        if v in out:
            raise UsageError(f"{flag} '{text[:40]}': {v} is listed twice (allowed: {what}, each once)")
        out.append(v)
    return out


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The flags, checked; raises UsageError naming the flag."""
    p = argparse.ArgumentParser(prog="flashinfer_verify_anchor.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("--out", default=None, help="the JSON file to write (required; an existing one of this script "
                                                 "resumes)")
    p.add_argument("--force", action="store_true", help="replace an existing --out instead of resuming it")
    p.add_argument("--batch", default="64,256")
    p.add_argument("--draft-tokens", default="4,8")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--layers", default="36")
    p.add_argument("--max-seconds", default="0.8")
    p.add_argument("--device", default="0")

    def fail(message):
        raise UsageError(f"{message} (allowed: {', '.join(FLAGS)})")

    p.error = fail  # argparse's own errors (an unknown flag, a missing value) as one line, exit 2
    for flag in FLAGS:
        if sum(x == flag or x.startswith(flag + "=") for x in argv) > 1:
            raise UsageError(f"{flag}: given twice (allowed: once)")
    a = p.parse_args(list(argv))
    if not a.out:
        raise UsageError("--out: missing (allowed: the JSON file to write)")
    parent = os.path.dirname(os.path.abspath(a.out))
    if os.path.isdir(a.out) or not os.path.isdir(parent):
        raise UsageError(f"--out '{a.out}': not a file in an existing folder (allowed: a JSON file to write)")
    a.resume = read_resume(a.out) if os.path.exists(a.out) and not a.force else None
    a.batch = parse_list(a.batch, "--batch", (), most=65536)
    a.draft_tokens = parse_list(a.draft_tokens, "--draft-tokens", DRAFTS)
    a.modes = parse_list(a.modes, "--modes", MODES)
    if "fifth" in a.modes and min(a.batch) < 5:  # rows r mod 5 = 4 fold: fewer than five rows fold none
        raise UsageError(f"--batch {min(a.batch)}: --modes fifth folds every fifth row and needs at least 5 rows "
                         "(allowed: batches of 5 or more, or --modes without fifth)")
    if not re.fullmatch("[0-9]{1,5}", a.layers) or not 1 <= int(a.layers) <= 10000:
        raise UsageError(f"--layers '{a.layers[:20]}': not allowed (allowed: a whole number from 1 to 10000)")
    a.layers = int(a.layers)
    text = a.max_seconds
    a.max_seconds = float(text) if re.fullmatch(r"[0-9]*\.?[0-9]+", text) else math.nan
    if not 0 < a.max_seconds <= 3600:
        raise UsageError(f"--max-seconds '{text[:20]}': not allowed (allowed: seconds, more than 0 and up to 3600)")
    if not re.fullmatch("[0-9]{1,3}", a.device):
        raise UsageError(f"--device '{a.device[:20]}': not allowed (allowed: a CUDA device number from 0 to 999)")
    a.device = int(a.device)
    return a


def read_resume(path: str) -> Dict:
    """The document an earlier run wrote at `path`, to resume; raises UsageError naming --out when it is not one
    (not JSON, another file, rows without their keys)."""
    why = "not a JSON file this script wrote"
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        doc, why = None, f"{why} ({one_line(e)[:80]})"
    keys = ("mode", "batch", "draft_tokens", "status")
    if not (isinstance(doc, dict) and doc.get("anchor") == ANCHOR and isinstance(doc.get("rows"), list)
            and isinstance(doc.get("check"), list)
            and all(isinstance(r, dict) and all(k in r for k in keys) for r in doc["rows"])
            and all(isinstance(c, dict) and "draft_tokens" in c for c in doc["check"])):
        raise UsageError(f"--out '{path}': {why} (allowed: a new file, one an earlier run of this script wrote, to "
                         "resume, or --force to replace it)")
    return doc


def row_key(row: Dict, layers: int) -> Tuple:
    """What names a row: mode, batch, draft tokens, layers (a failed row may lack `layers`: the run's)."""
    return row["mode"], row["batch"], row["draft_tokens"], row.get("layers", layers)


def rows_done(doc: Dict, layers: int) -> set:
    """The keys (row_key) of the rows `doc` holds as measured (status ok)."""
    return {row_key(r, layers) for r in doc["rows"] if r["status"] == "ok"}


def put_row(doc: Dict, row: Dict, layers: int) -> None:
    """Adds `row` to doc's rows, in place of a row of the same key (a failed one, resumed)."""
    key = row_key(row, layers)
    for i, r in enumerate(doc["rows"]):
        if row_key(r, layers) == key:
            doc["rows"][i] = row
            return
    doc["rows"].append(row)


def put_check(doc: Dict, check: Dict) -> None:
    """Adds a draft count's check to doc, in place of an earlier one of the same draft count."""
    doc["check"] = [c for c in doc["check"] if c["draft_tokens"] != check["draft_tokens"]] + [check]


def resume_refusal(old: Dict, new: Dict, path: str) -> str:
    """Why `old` (an earlier run's document) cannot take this run's rows (`new`: this run's header), or ""."""
    for key in ("gpu", "package", "package_version", "shape"):
        if old.get(key) != new.get(key):
            return (f"--out '{path}': {key} = {json.dumps(old.get(key))[:80]}, this run's is "
                    f"{json.dumps(new.get(key))[:80]} (allowed: a file of this GPU and version to resume, a new file, "
                    "or --force to replace it)")
    return ""


def write_json(path: str, doc: Dict) -> None:
    """Writes `doc` at `path` through a temporary file and a rename (write_text_atomic)."""
    write_text_atomic(path, json.dumps(doc, indent=1) + "\n")


# --- on the GPU ------------------------------------------------------------------------------------------------------

class Bench:
    """The kernel, its layer sets and the check, on one CUDA device."""

    def __init__(self, device: int):
        import peers.torch_support as ts
        self.ts = ts
        self.torch = ts.require_torch_gpu(device, triton_needed=False)
        self.fn = ts.import_function(MODULE, FUNCTION, DISTS)
        self.module = sys.modules[MODULE]
        window, ring = getattr(self.module, "W_RING", WINDOW), getattr(self.module, "RING_SLOTS", RING)
        if (window, ring) != (WINDOW, RING):
            raise ts.Unavailable(f"{MODULE}: a window of {window} rows in a ring of {ring} (this script takes "
                                 f"{WINDOW} in {RING})")
        self.device = self.torch.device("cuda", device)
        self.index = device
        self.gen = self.torch.Generator(device=self.device).manual_seed(2026)

    def _randn(self, *shape, scale=1.0, dtype=None):
        t = self.torch.randn(*shape, device=self.device, generator=self.gen) * scale
        return t.to(dtype or self.torch.bfloat16)

    def layer_set(self, rows: int, m: int) -> Dict:
        """One layer's inputs (m drafts a row), gates, bf16 checkpoint pool N(0, K^-1/2) and rings (unit keys, u
        N(0, 0.1), log-decays cumulating by -0.05 a row)."""
        torch, bf16 = self.torch, self.torch.bfloat16
        K = V = HEAD_DIM
        k_ring = self._randn(rows, HEADS_QK, RING, K, dtype=torch.float32)
        g = -0.05 * torch.arange(1, RING + 1, device=self.device, dtype=torch.float32)
        return dict(
            A_log=torch.log(torch.empty(HEADS_V, device=self.device).uniform_(1, 16, generator=self.gen)).to(bf16),
            dt_bias=self._randn(HEADS_V, scale=0.5), q=self._randn(rows, m, HEADS_QK, K),
            k=self._randn(rows, m, HEADS_QK, K), v=self._randn(rows, m, HEADS_V, V), a=self._randn(rows, m, HEADS_V),
            b=self._randn(rows, m, HEADS_V), state=self._randn(rows, HEADS_V, V, K, scale=K ** -0.5),
            k_cache=(k_ring / k_ring.norm(dim=-1, keepdim=True)).to(bf16),
            u_cache=self._randn(rows, HEADS_V, RING, V, scale=0.1),
            g_cache=g.expand(rows, HEADS_V, RING).contiguous())

    def call(self, s: Dict, hist, base, m: int):
        """One launch on layer set `s` with cursors (hist_len, cache_base); the cursors are committed by the caller."""
        return self.fn(A_log=s["A_log"], a=s["a"], dt_bias=s["dt_bias"], q=s["q"], k=s["k"], v=s["v"], b=s["b"],
                       initial_state_source=s["state"], scale=HEAD_DIM ** -0.5, k_cache=s["k_cache"],
                       u_cache=s["u_cache"], g_cache=s["g_cache"], hist_len=hist, cache_base=base,
                       flush_min=flush_min(m), restart_hist_on_flush=False)

    def commit(self, hist, base, m: int) -> None:
        """commit() on the device, in place (capturable)."""
        torch = self.torch
        folded = hist >= flush_min(m)
        base.copy_((base + hist * folded) % RING)
        hist.copy_(torch.where(folded, torch.full_like(hist, m), hist + m))

    def check(self, m: int) -> Dict:
        """CHECK_CALLS calls of fresh drafts on CHECK_ROWS rows with empty rings, every draft accepted, against a
        sequential fp32 recurrence (state [HV, V, K]): the largest output error over the largest output."""
        torch = self.torch
        F = torch.nn.functional
        s = self.layer_set(CHECK_ROWS, m)
        for key in ("k_cache", "u_cache", "g_cache"):
            s[key].zero_()
        ref = [s["state"][r].float().clone() for r in range(CHECK_ROWS)]
        hist = torch.zeros(CHECK_ROWS, device=self.device, dtype=torch.int32)
        base = torch.zeros(CHECK_ROWS, device=self.device, dtype=torch.int32)
        worst, folds, rep = 0.0, 0, HEADS_V // HEADS_QK

        def unit(x):
            return x / torch.sqrt((x * x).sum(-1, keepdim=True) + 1e-6)

        for _ in range(CHECK_CALLS):
            for key in ("q", "k", "v", "a", "b"):
                s[key].copy_(self._randn(*s[key].shape))
            folds += int((hist >= flush_min(m)).sum().item())
            o = self.call(s, hist, base, m).float()
            for r in range(CHECK_ROWS):
                q = unit(s["q"][r].float()).repeat_interleave(rep, 1) * HEAD_DIM ** -0.5
                k = unit(s["k"][r].float()).repeat_interleave(rep, 1)
                gate = -s["A_log"].float().exp() * F.softplus(s["a"][r].float() + s["dt_bias"].float())
                beta = torch.sigmoid(s["b"][r].float())
                S, outs = ref[r], []
                for t in range(m):
                    S = S * gate[t].exp()[:, None, None]
                    u = beta[t][:, None] * (s["v"][r, t].float() - torch.einsum("hvk,hk->hv", S, k[t]))
                    S = S + u[:, :, None] * k[t][:, None, :]
                    outs.append(torch.einsum("hvk,hk->hv", S, q[t]))
                ref[r] = S
                expect = torch.stack(outs)
                e = ((o[r] - expect).abs().max() / expect.abs().max()).item()
                worst = max(worst, e if math.isfinite(e) else math.inf)  # a NaN output fails the check
            self.commit(hist, base, m)
        return {"draft_tokens": m, "rows": CHECK_ROWS, "calls": CHECK_CALLS, "folds": folds,
                "max_rel_err_o": worst, "ok": worst <= CHECK_BAR}

    def time(self, mode: str, rows: int, m: int, layers: int, max_seconds: float) -> Dict:
        """The mode's model step (`layers` layer sets) timed by peers/protocol.py: the row of the JSON."""
        from peers.protocol import SamplingRule, StepRule, time_model_steps
        from peers.sm_clock import nvml_sm_clock
        torch = self.torch
        sets = [self.layer_set(rows, m) for _ in range(layers)]
        start = start_cursors(mode, rows, m)
        hist = torch.tensor(start, device=self.device, dtype=torch.int32)
        base = torch.randint(0, RING, (rows,), device=self.device, dtype=torch.int32, generator=self.gen)
        folding = sum(h >= flush_min(m) for h in start) / rows

        def step():
            outs = [self.call(s, hist, base, m) for s in sets]
            if mode == "steady":
                self.commit(hist, base, m)
            return outs

        l2 = int(torch.cuda.get_device_properties(self.device).L2_cache_size)
        model = self.ts.GraphModel(torch, self.device, step, True, l2)
        cycle = cycle_steps(m) if mode == "steady" else 1
        rule = SamplingRule(min_samples=10, max_seconds=max_seconds, target_noise_pct=1.0)
        t = time_model_steps(model.replay_ms, cycle, layers, rule, StepRule(), before_sample=model.flush,
                             sm_clock=nvml_sm_clock(self.index))
        row = {"mode": mode, "batch": rows, "draft_tokens": m, "flush_min": flush_min(m), "cycle_steps": cycle,
               "rows_folding_per_call": 1 / cycle if mode == "steady" else folding, "layers": layers,
               "latency_us_median": t.stats.median, "latency_us_p10": t.stats.p10, "latency_us_p90": t.stats.p90,
               "samples": t.stats.samples, "noise_pct": t.stats.noise_pct, "sample_stop": t.stats.stop,
               "steps_per_sample": t.steps_per_sample,
               "discarded_samples": t.stats.discarded if t.stats.clock_checked else None,
               "device_bytes": model.device_bytes(), "status": "ok"}
        del model, sets
        torch.cuda.synchronize(self.device)
        torch.cuda.empty_cache()
        return row


def main(argv: Sequence[str]) -> int:
    try:
        args = parse_args(argv)
    except UsageError as e:
        print(f"flashinfer_verify_anchor: {one_line(e)}", file=sys.stderr)
        return 2
    from peers.peer import Unavailable
    try:
        bench = Bench(args.device)
    except Unavailable as e:
        print(f"flashinfer_verify_anchor: {one_line(e)}", file=sys.stderr)
        return 1
    torch = bench.torch
    versions = bench.ts.versions(torch, DISTS, sys.modules.get("flashinfer"))
    doc = {"anchor": ANCHOR, "kernel": f"{MODULE}.{FUNCTION}", **versions,
           "gpu": torch.cuda.get_device_name(bench.device),
           "shape": {"heads_qk": HEADS_QK, "heads_v": HEADS_V, "head_dim_k": HEAD_DIM, "head_dim_v": HEAD_DIM,
                     "state_dtype": "bf16", "ring": RING, "window": WINDOW},
           "timing": "one CUDA graph a model step of `layers` layer sets, L2 flushed before each sample, "
                     "peers/protocol.py time_model_steps; microseconds per layer-step",
           "check": [], "rows": []}
    if args.resume is not None:
        why = resume_refusal(args.resume, doc, args.out)
        if why:
            print(f"flashinfer_verify_anchor: {one_line(why)}", file=sys.stderr)
            return 2
        doc = args.resume
    done = rows_done(doc, args.layers)
    for m in args.draft_tokens:
        todo = [(rows, mode) for rows in args.batch for mode in args.modes
                if row_key({"mode": mode, "batch": rows, "draft_tokens": m}, args.layers) not in done]
        if not todo:
            continue
        try:
            c = bench.check(m)
        except Exception as e:  # the kernel raised: its rows fail
            c = {"draft_tokens": m, "ok": False, "error": one_line(f"{type(e).__name__}: {e}")}
        put_check(doc, c)
        for rows, mode in todo:
            if not c["ok"]:
                why = c.get("error") or f"max_rel_err_o = {c['max_rel_err_o']:.3g} > {CHECK_BAR}"
                row = {"mode": mode, "batch": rows, "draft_tokens": m, "status": f"failed: check failed: {why}"}
            else:
                try:
                    row = bench.time(mode, rows, m, args.layers, args.max_seconds)
                except Exception as e:
                    traceback.print_exc()
                    row = {"mode": mode, "batch": rows, "draft_tokens": m,
                           "status": one_line(f"failed: {type(e).__name__}: {e}")}
                    torch.cuda.empty_cache()
            put_row(doc, row, args.layers)
            print(json.dumps(row), flush=True)
            write_json(args.out, doc)  # every row: an interrupted run keeps what it measured
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
