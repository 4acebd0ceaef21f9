#!/usr/bin/env python3
"""Per-block stamps of the KVBuffer verify kernel (exploration build): stage durations by kind of block, layer spans,
SM residency. Usage: an_verify_timeline.py dump.csv [more.csv ...]"""
import csv, sys, collections

STAGES = ["start", "wait", "drafts", "coef", "share", "pass0", "pass", "out", "end"]

def q(xs, f):
    if not xs: return float("nan")
    xs = sorted(xs); return xs[min(len(xs) - 1, int(f * len(xs)))]

for path in sys.argv[1:]:
    rows = [r for r in csv.DictReader(open(path))]
    for r in rows:
        for k in STAGES + ["set", "block", "smid", "flags"]: r[k] = int(r[k])
    rows = [r for r in rows if r["end"] > 0]
    t0 = min(r["start"] for r in rows)
    print(f"== {path}: {len(rows)} blocks")
    sets = collections.defaultdict(list)
    for r in rows: sets[r["set"]].append(r)
    order = sorted(sets, key=lambda s: min(r["start"] for r in sets[s]))
    spans, firsts, lasts = [], [], []
    for s in order:
        b = sets[s]; st = min(r["start"] for r in b); en = max(r["end"] for r in b)
        spans.append(en - st); firsts.append(st); lasts.append(en)
    total = max(lasts) - min(firsts)
    print(f"layers {len(order)}; whole step {total/1e3:.1f} us = {total/1e3/len(order):.2f} us a layer; layer span median {q(spans,.5)/1e3:.2f} us")
    # from one layer's last block end to the next layer's: per-layer period
    per = [(lasts[i + 1] - lasts[i]) / 1e3 for i in range(len(lasts) - 1)]
    print(f"period (last end to next last end) median {q(per,.5):.2f} p10 {q(per,.1):.2f} p90 {q(per,.9):.2f} us")
    kinds = collections.defaultdict(list)
    for r in rows:
        kinds[("early" if r["flags"] & 1 else "late") + ("/due" if r["flags"] & 2 else "/notdue")].append(r)
    print("stage durations (us), median [p10, p90]; columns: " + " ".join(f"{a}->{b}" for a, b in zip(STAGES, STAGES[1:])) + " | life")
    for k in sorted(kinds):
        b = kinds[k]
        cols = []
        for a, c in zip(STAGES, STAGES[1:]):
            d = [(r[c] - r[a]) / 1e3 for r in b]
            cols.append(f"{q(d,.5):5.2f}[{q(d,.1):.2f},{q(d,.9):.2f}]")
        life = [(r["end"] - r["start"]) / 1e3 for r in b]
        print(f"  {k:13s} n={len(b):6d} " + " ".join(cols) + f" | {q(life,.5):.2f}[{q(life,.1):.2f},{q(life,.9):.2f}]")
    if "f_end" in rows[0]:
        fs = ["out", "f_freed", "f_staged", "f_round0", "f_end", "end"]
        for k in sorted(kinds):
            b = [r for r in kinds[k] if int(r["f_end"]) > 0]
            if not b: continue
            cols = []
            for a, c in zip(fs, fs[1:]):
                d = [(int(r[c]) - int(r[a])) / 1e3 for r in b]
                cols.append(f"{a}->{c} {q(d,.5):.2f}[{q(d,.1):.2f},{q(d,.9):.2f}]")
            print(f"  fold {k:13s} n={len(b):6d} " + " ".join(cols))
    # residency: per SM, time-average of resident blocks over the busy window (middle layers only)
    mid = order[2:-2] if len(order) > 6 else order
    lo = min(min(r["start"] for r in sets[s]) for s in mid); hi = max(max(r["end"] for r in sets[s]) for s in mid)
    occ = collections.defaultdict(float)
    for r in rows:
        a, e = max(r["start"], lo), min(r["end"], hi)
        if e > a: occ[r["smid"]] += e - a
    res = [v / (hi - lo) for v in occ.values()]
    print(f"resident blocks per SM over layers {len(mid)} (time average): median {q(res,.5):.2f} min {min(res):.2f} max {max(res):.2f}")
    # refill gap on an SM: a block's start minus the latest earlier end on that SM when it started with a free slot
    bysm = collections.defaultdict(list)
    for r in rows: bysm[r["smid"]].append(r)
    gaps = []
    for sm, b in bysm.items():
        ends = sorted(r["end"] for r in b)
        import bisect
        for r in b:
            i = bisect.bisect_left(ends, r["start"])
            if i > 0: gaps.append((r["start"] - ends[i - 1]) / 1e3)
    print(f"start after the SM's latest earlier block end: median {q(gaps,.5):.2f} p90 {q(gaps,.9):.2f} us")
    print()
