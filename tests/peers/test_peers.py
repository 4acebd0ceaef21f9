"""Tests of the peer runner (peers/) without a GPU: the timing protocol against kvb's sampler cases, the error measure
and verdict of the check, the request contract's one-line errors, the result file, and the command line (list,
probe, run) with the stand-in peers of standin_peer.py. The check against kvb's float64 reference runs end to end in
tests/cpu/test_peers.cpp, where kvb writes the case.

Run: python3 -m pytest -q tests/peers   (needs numpy and pytest; no torch, no GPU)
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNNER = REPO_ROOT / "peers" / "run_peer.py"
STANDIN = Path(__file__).resolve().parent / "standin_peer.py"
sys.path.insert(0, str(REPO_ROOT))

from peers import check, protocol, request, result  # noqa: E402


def run(*args):
    """run_peer.py with `args`; (exit code, stdout, stderr)."""
    p = subprocess.run([sys.executable, str(RUNNER), *map(str, args)], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


# --- the protocol: the same numbers as harness/measure/sampling.h and step_timing.h -----------------------------------

def test_summary_statistics_match_the_shared_cases():
    with open(REPO_ROOT / "tests" / "data" / "peers" / "sampling_cases.csv", newline="") as f:
        cases = list(csv.DictReader(f))
    assert cases
    for c in cases:
        values = [float(x) for x in c["values"].split()]
        s = protocol.summarize(values)
        assert s.median == pytest.approx(float(c["median"]), abs=1e-12)
        assert s.p10 == pytest.approx(float(c["p10"]), abs=1e-12)
        assert s.p90 == pytest.approx(float(c["p90"]), abs=1e-12)
        assert s.noise_pct == pytest.approx(float(c["noise_pct"]), abs=1e-9)
        assert s.samples == len(values)
    assert math.isnan(protocol.percentile([], 0.5))


def test_sampling_stops_on_noise_after_the_minimum_samples():
    calls = []
    s = protocol.sample_until(lambda: calls.append(1) or 5.0, protocol.SamplingRule(min_samples=7))
    assert (s.stop, s.samples, len(calls), s.median) == ("noise", 7, 7, 5.0)


def test_sampling_stops_on_time_or_the_sample_cap_when_noisy():
    values = iter([1.0, 3.0] * 100)
    ticks = iter(range(1000))
    s = protocol.sample_until(lambda: next(values), protocol.SamplingRule(min_samples=4, max_seconds=5.5),
                              clock=lambda: float(next(ticks)))
    assert s.stop == "time"
    assert s.samples == 9  # the clock reads 0 at the start and 1, 2, ... after samples 4, 5, ...: 6 s after the 9th
    s = protocol.sample_until(lambda: next(values), protocol.SamplingRule(min_samples=2, max_samples=6,
                                                                          max_seconds=1e9))
    assert (s.stop, s.samples) == ("time", 6)


def test_warm_up_and_sample_length_follow_the_step_rule():
    steps = []

    def replay_ms(n):
        steps.append(n)
        return 0.25 * n  # 0.25 ms a model step

    seen = []
    t = protocol.time_model_steps(replay_ms, cycle=4, layer_steps=36, rule=protocol.SamplingRule(min_samples=3),
                                  step_rule=protocol.StepRule(warmup_cycles=3, warmup_min_ms=10.0, sample_min_ms=2.0),
                                  before_sample=lambda: seen.append("flush"), on_timing=lambda: seen.append("timing"))
    warm = steps[:10]  # 10 cycles of 4 steps reach 10 ms
    assert warm == [4] * 10
    assert t.steps_per_sample == 8  # ceil(2 ms / (0.25 ms x 4)) cycles of 4 steps
    assert steps[10:] == [8] * t.stats.samples
    assert seen == ["timing"] + ["flush"] * t.stats.samples
    assert t.stats.median == pytest.approx(0.25 * 1e3 / 36)  # microseconds per layer-step
    with pytest.raises(ValueError):
        protocol.time_model_steps(replay_ms, cycle=0, layer_steps=1, rule=protocol.SamplingRule())


# --- the check: kvb's error measure and verdict -----------------------------------------------------------------------

def test_max_rel_err_is_per_head_relative_to_the_heads_largest_magnitude():
    ref = np.array([[1.0, -2.0], [100.0, 50.0]])
    got = np.array([[1.0, -2.2], [100.0, 49.0]])
    assert check.max_rel_err(ref, got, 2) == pytest.approx(0.1)  # head 0: 0.2 / 2; head 1: 1 / 100
    assert check.max_rel_err(np.zeros(4), np.array([0.0, 0.5, 0, 0]), 2) == pytest.approx(0.5)  # all-zero head
    assert check.max_rel_err(ref, np.where(got > 60, np.nan, got), 2) == math.inf
    with pytest.raises(ValueError):
        check.max_rel_err(np.zeros(4), np.zeros(3), 1)
    with pytest.raises(ValueError):
        check.max_rel_err(np.zeros(4), np.zeros(4), 3)


def test_verdict_names_the_first_reason_as_kvb_does():
    assert check.verdict(True, 1e-6, 1e-3, 8e-3, 2e-5) == ""
    assert check.verdict(False, 0, 0, 8e-3, 2e-5) == "some output elements were not written (NaN poison left)"
    assert check.verdict(True, 3e-5, 0, 8e-3, 2e-5) == "state error 3e-05 above 2e-05"
    assert check.verdict(True, 0, 0.0123, 8e-3, 2e-5) == "output error 0.0123 above 0.008"
    assert check.verdict(True, math.nan, 0, 8e-3, 2e-5).startswith("state error nan")


# --- the request contract and the result file -------------------------------------------------------------------------

def good_request():
    """A request of a 3-row point at H = 2, HV = 4, K = 32, V = 16 (its tensors are not written)."""
    n, r = 3, 2
    shapes = {"q": [n, 2, 32], "k": [n, 2, 32], "v": [n, 4, 16], "a": [n, 4], "b": [n, 4], "A_log": [4],
              "dt_bias": [4], "scale": [1], "slots": [n], "check_states": [r, 4, 32, 16], "ref_o": [r, 4, 16],
              "ref_states": [r, 4, 32, 16]}
    return {
        "kvb_peer_request": 1, "kind": "decode", "variant": "standin_recurrent",
        "shape": {"heads_qk": 2, "heads_v": 4, "head_dim_k": 32, "head_dim_v": 16},
        "batch": n, "layers": 2, "groups": 1, "seed": 0, "l2": "cold", "l2_bytes": 1 << 20, "device": 0,
        "sampling": {"min_samples": 3, "max_samples": 1000, "max_seconds": 0.2, "target_noise_pct": 1.0},
        "steps": {"cycle": 1, "warmup_cycles": 3, "warmup_min_ms": 100, "sample_min_ms": 2},
        "tolerance": {"state": 2e-5, "output": 8e-3}, "check_rows": [0, 2],
        "tensors": {k: {"file": f"{k}.bin", "dtype": "int32" if k == "slots" else
                        ("float64" if k.startswith("ref") else "float32"), "shape": v} for k, v in shapes.items()},
    }


def write_request(tmp_path, d):
    path = tmp_path / "request.json"
    path.write_text(json.dumps(d))
    return path


@pytest.mark.parametrize("change, needle", [
    (lambda d: d.pop("batch"), "request batch: missing (allowed: an integer >= 1)"),
    (lambda d: d.update(batch=0), "request batch = 0 is not allowed (allowed: an integer >= 1)"),
    (lambda d: d.update(kind="verify"), "request kind = 'verify' is not allowed (allowed: decode)"),
    (lambda d: d.update(l2="warm"), "request l2 = 'warm' is not allowed (allowed: cold, hot)"),
    (lambda d: d.update(kvb_peer_request=2), "request kvb_peer_request = 2 is not allowed (allowed: 1)"),
    (lambda d: d["shape"].update(heads_v=3), "request shape.heads_v = 3 is not allowed (allowed: a multiple of"),
    (lambda d: d.update(check_rows=[2, 0]), "request check_rows = [2, 0] is not allowed"),
    (lambda d: d["sampling"].update(max_seconds=-1), "request sampling.max_seconds = -1.0 is not allowed"),
    (lambda d: d["tensors"]["q"].update(dtype="bf16"), "request tensors.q = "),
])
def test_a_bad_request_field_is_named(tmp_path, change, needle):
    d = good_request()
    change(d)
    with pytest.raises(request.RequestError, match=None) as e:
        request.load_request(str(write_request(tmp_path, d)))
    assert needle in str(e.value)


def test_a_missing_or_misshapen_tensor_is_named(tmp_path):
    d = good_request()
    d["tensors"]["v"]["shape"] = [3, 4, 15]
    req = request.load_request(str(write_request(tmp_path, d)))
    with pytest.raises(request.RequestError, match=r"tensors.v.shape = \[3, 4, 15\] is not allowed"):
        request.check_tensors(req)
    d["tensors"]["v"]["shape"] = [3, 4, 16]
    del d["tensors"]["ref_o"]
    req = request.load_request(str(write_request(tmp_path, d)))
    with pytest.raises(request.RequestError, match="no 'ref_o'"):
        request.check_tensors(req)


def test_the_runner_refuses_a_bad_request_in_one_line_and_writes_nothing(tmp_path):
    d = good_request()
    d["l2"] = "warm"
    path = write_request(tmp_path, d)
    code, out, err = run("run", path)
    assert code == 2
    assert err.strip().splitlines() == ["run_peer.py: request l2 = 'warm' is not allowed (allowed: cold, hot)"]
    assert not (tmp_path / "result.csv").exists()
    code, _, err = run("run", tmp_path / "absent.json")
    assert code == 2 and "cannot read the request" in err


def test_the_result_file_has_every_column_and_one_line_values(tmp_path):
    path = tmp_path / "result.csv"
    result.write_result(str(path), {"status": "failed: check failed:\nstate error", "max_rel_err": result.err(0.5)})
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == list(result.COLUMNS)
    row = dict(zip(rows[0], rows[1]))
    assert row["status"] == "failed: check failed: state error"
    assert row["max_rel_err"] == "0.5"
    assert result.num(123.4567891) == "123.457"
    with pytest.raises(KeyError):
        result.write_result(str(path), {"latency": "1"})


# --- the command line ------------------------------------------------------------------------------------------------

def test_list_names_the_peers_and_their_packages():
    code, out, _ = run("list")
    assert code == 0
    variants = [line.split("\t")[0] for line in out.splitlines()]
    assert variants == ["fla_recurrent", "flashinfer_recurrent", "replayssm_decode"]
    assert out.splitlines()[0].split("\t")[1] == "fla-core"


def test_probe_gives_one_line_per_variant_with_its_reason():
    code, out, _ = run("--peer-module", STANDIN, "probe", "standin_recurrent", "standin_unavailable",
                       "replayssm_decode")
    assert code == 0
    lines = [line.split("\t") for line in out.splitlines()]
    assert [x[:2] for x in lines] == [["standin_recurrent", "ok"], ["standin_unavailable", "skipped"],
                                      ["replayssm_decode", "skipped"]]
    assert lines[0][2].startswith("numpy ")
    assert lines[1][2] == "the stand-in's package is not installed (a test)"
    assert "ReplaySSM" in lines[2][2]


def test_probe_without_torch_says_so():
    try:
        import torch  # noqa: F401
        pytest.skip("torch is installed here")
    except ImportError:
        pass
    code, out, _ = run("probe", "fla_recurrent", "flashinfer_recurrent")
    assert code == 0
    assert out.splitlines() == ["fla_recurrent\tskipped\ttorch is not installed (the peers run on PyTorch)",
                                "flashinfer_recurrent\tskipped\ttorch is not installed (the peers run on PyTorch)"]


def test_probe_refuses_an_unknown_variant_and_a_missing_module(tmp_path):
    code, out, err = run("probe", "fla_triton")
    assert code == 2 and out == ""
    assert err.strip() == ("run_peer.py: variant = 'fla_triton' is not a peer (allowed: fla_recurrent, "
                           "flashinfer_recurrent, replayssm_decode)")
    code, _, err = run("--peer-module", tmp_path / "none.py", "list")
    assert code == 2 and "--peer-module" in err and "no such file" in err
