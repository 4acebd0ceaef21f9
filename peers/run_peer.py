#!/usr/bin/env python3
"""The peer runner: measures one peer kernel at one sweep point the way kvb measures its own (docs/MEASURING.md,
"Peers"), started by kvb once per point.

Usage:
  python3 peers/run_peer.py list                          variant, package and description of every peer, one a line
  python3 peers/run_peer.py probe [--device N] VARIANT...  "VARIANT<TAB>ok<TAB>versions" or "VARIANT<TAB>skipped<TAB>
                                                           reason", one line per variant
  python3 peers/run_peer.py run REQUEST.json [--out FILE]  checks the peer against kvb's float64 reference, then times
                                                           it; writes result.csv (default: beside REQUEST.json)
  --peer-module FILE (repeatable) adds the peers a Python file defines (PEERS = {variant: class}), e.g. a stand-in.

`run` writes a result for every outcome: status "ok", "failed: <why>" (the check failed, or the peer raised) or
"skipped: <reason>" (the peer cannot run here). Exit status: 0 when a result (or the list, or the probe lines) was
written; 2 on bad input (an unknown variant, a malformed request), with a one-line message and nothing written;
1 on an error of the runner itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from peers.result import err, num, one_line, write_result  # noqa: E402

NUMPY_MISSING = "numpy is not installed (the runner reads kvb's check case with it)"


class UsageError(Exception):
    """Bad input: exit 2 with the message."""


def _peers(extra):
    from peers.registry import load_peers
    try:
        return load_peers(extra)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _peer(peers, variant):
    if variant not in peers:
        raise UsageError(f"variant = '{variant}' is not a peer (allowed: {', '.join(peers)})")
    return peers[variant]()


def cmd_list(args) -> int:
    """`list`: one line per peer, "VARIANT<TAB>PACKAGE<TAB>DESCRIPTION"; returns 0."""
    for variant, cls in _peers(args.peer_module).items():
        print(f"{variant}\t{cls.package}\t{cls.description}")
    return 0


def _versions_text(v) -> str:
    text = f"{v['package']} {v['package_version']}"
    if v.get("torch_version"):
        text += f", torch {v['torch_version']}"
    if v.get("triton_version"):
        text += f", triton {v['triton_version']}"
    return text


def cmd_probe(args) -> int:
    """`probe`: one line per variant asked, "VARIANT<TAB>ok<TAB>VERSIONS" or "VARIANT<TAB>skipped<TAB>REASON";
    returns 0. Raises UsageError for a variant no peer defines."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        for variant in args.variants:
            print(f"{variant}\tskipped\t{NUMPY_MISSING}")
        return 0
    from peers.peer import Unavailable
    peers = _peers(args.peer_module)
    chosen = [_peer(peers, v) for v in args.variants]
    for variant, peer in zip(args.variants, chosen):
        try:
            print(f"{variant}\tok\t{_versions_text(peer.probe(args.device))}")
        except Unavailable as e:
            print(f"{variant}\tskipped\t{one_line(e)}")
        except Exception as e:  # a peer whose probe breaks is skipped with what broke
            print(f"{variant}\tskipped\t{type(e).__name__}: {one_line(e)}")
        sys.stdout.flush()
    return 0


def _raised(what: str, e: BaseException) -> str:
    return f"{what}: {type(e).__name__}: {one_line(e)}"[:400]


def cmd_run(args) -> int:
    """`run`: the check, then the timing, of the point the request describes; writes result.csv and returns 0 for
    every outcome the result holds (ok, failed, skipped). Raises UsageError for a malformed request."""
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(args.request)), "result.csv")
    try:
        import numpy  # noqa: F401
    except ImportError:
        write_result(out, {"status": f"skipped: {NUMPY_MISSING}"})
        return 0
    from peers.check import check_decode, load_decode_case
    from peers.peer import Unavailable
    from peers.protocol import time_model_steps
    from peers.request import RequestError, load_request
    from peers.sm_clock import nvml_sm_clock

    try:
        req = load_request(args.request)
        peer = _peer(_peers(args.peer_module), req.variant)
        case, ref_o, ref_states = load_decode_case(req)
    except RequestError as e:
        raise UsageError(str(e)) from None

    values = {"package": peer.package, "check_rows": str(len(req.check_rows))}
    try:
        values.update(peer.probe(req.device))
    except Unavailable as e:
        values["status"] = f"skipped: {one_line(e)}"
        write_result(out, values)
        return 0
    values["peer_conventions"] = peer.conventions

    # 1. The check: one launch of layer 0 against kvb's float64 reference; a peer that fails is not timed.
    try:
        got = peer.check(case, req)
    except Exception as e:
        values["status"] = "failed: " + _raised("check launch", e)
        write_result(out, values)
        return 0
    result = check_decode(case, got, ref_o, ref_states, req.tol_state, req.tol_output)
    values.update(max_rel_err=err(result.state_err), max_rel_err_o=err(result.o_err))
    if not result.passed():
        values["status"] = f"failed: check failed: {result.detail}"
        write_result(out, values)
        return 0

    # 2. The timing: every layer set of every group once per model step, replayed as kvb replays its own, samples
    # the GPU ran throttled discarded when NVML can be read.
    try:
        model = peer.timed_model(case, req)
        timing = time_model_steps(model.replay_ms, req.cycle, req.groups * req.layers, req.sampling, req.steps,
                                  before_sample=model.flush, on_timing=lambda: req.phase("timing"),
                                  sm_clock=nvml_sm_clock(req.device))
        req.phase("done")
    except Exception as e:
        values["status"] = "failed: " + _raised("timing", e)
        write_result(out, values)
        return 0
    s = timing.stats
    values.update(status="ok", latency_us_median=num(s.median), latency_us_p10=num(s.p10), latency_us_p90=num(s.p90),
                  samples=str(s.samples), noise_pct=num(s.noise_pct), sample_stop=s.stop,
                  steps_per_sample=str(timing.steps_per_sample), device_bytes=num(model.device_bytes()),
                  discarded_samples=str(s.discarded) if s.clock_checked else "")
    write_result(out, values)
    return 0


def main(argv=None) -> int:
    """Command line entry; returns the exit status."""
    p = argparse.ArgumentParser(prog="run_peer.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--peer-module", action="append", default=[], metavar="FILE",
                   help="a Python file defining PEERS = {variant: class} (repeatable)")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the peers this runner knows")
    probe = sub.add_parser("probe", help="whether each variant can run here")
    probe.add_argument("--device", type=int, default=0)
    probe.add_argument("variants", nargs="+")
    run = sub.add_parser("run", help="check and time one point")
    run.add_argument("request")
    run.add_argument("--out", default="")
    args = p.parse_args(argv)
    try:
        return {"list": cmd_list, "probe": cmd_probe, "run": cmd_run}[args.command](args)
    except UsageError as e:
        print(f"run_peer.py: {e}", file=sys.stderr)
        return 2
    except Exception:
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
