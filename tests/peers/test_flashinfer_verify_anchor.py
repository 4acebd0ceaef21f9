"""Tests of peers/flashinfer_verify_anchor.py without a GPU: the cursor schedule each mode times (the steady cycle of
every draft accepted, the fifth and verify regimes, serving's commit) and the command line's one-line refusals.

Run: python3 -m pytest -q tests/peers   (no torch, no GPU)
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "peers" / "flashinfer_verify_anchor.py"
sys.path.insert(0, str(REPO_ROOT))

from peers import flashinfer_verify_anchor as fva  # noqa: E402


def run(*args):
    p = subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("m, fmin, cycle", [(4, 13, 4), (8, 9, 2)])
def test_steady_rows_fold_once_a_cycle_and_return_to_their_start(m, fmin, cycle):
    assert fva.flush_min(m) == fmin and fva.cycle_steps(m) == cycle
    rows = 64
    hist = fva.start_cursors("steady", rows, m)
    base = [(7 * r) % fva.RING for r in range(rows)]
    assert hist[:cycle + 1] == [m * (i + 1) for i in range(cycle)] + [m]
    folds = [0] * rows
    start = (list(hist), list(base))
    for _ in range(cycle):
        assert all(1 <= h <= fva.WINDOW for h in hist)
        assert sum(h >= fmin for h in hist) == rows // cycle  # a 1/cycle share folds every step
        folds = [f + (h >= fmin) for f, h in zip(folds, hist)]
        hist, base = fva.commit(hist, base, m)
    assert folds == [1] * rows
    assert hist == start[0]
    # A folded row's window starts past the rows it folded: m drafts + (cycle - 1) m earlier rows a cycle.
    assert base == [(b + cycle * m) % fva.RING for b in start[1]]


def test_frozen_modes_fold_a_fifth_or_nothing():
    for m in (4, 8):
        f = fva.flush_min(m)
        fifth = fva.start_cursors("fifth", 256, m)
        assert sum(h >= f for h in fifth) == 51 and set(fifth) == {f, f - 1}
        assert fva.start_cursors("verify", 256, m) == [f - 1] * 256


@pytest.mark.parametrize("args, flag", [
    (["--draft-tokens", "3"], "--draft-tokens '3'"),
    (["--batch", "0"], "--batch '0'"),
    (["--batch", "64,64"], "--batch '64,64'"),
    (["--modes", "steady,x"], "--modes 'steady,x'"),
    (["--layers", "0"], "--layers '0'"),
    (["--max-seconds", "-1"], "--max-seconds '-1'"),
    (["--max-seconds", "nan"], "--max-seconds 'nan'"),
    (["--device", "-1"], "--device '-1'"),
    (["--device", "\u00b2"], "--device '\u00b2'"),
    (["--batch", "1_000"], "--batch '1_000'"),
    (["--batch", "+64"], "--batch '+64'"),
    (["--batch", "\uff16\uff14"], "--batch '\uff16\uff14'"),
    (["--batch", "65537"], "--batch '65537'"),
    (["--batch", "64", "--batch", "256"], "--batch: given twice"),
    (["--dev", "3"], "unrecognized arguments: --dev 3"),
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--batch", "4,64"], "--batch 4: --modes fifth folds every fifth row"),
    (["--batch", "1", "--modes", "fifth,verify"], "--batch 1: --modes fifth"),
])
def test_a_bad_flag_is_refused_in_one_line_and_nothing_is_written(tmp_path, args, flag):
    out = tmp_path / "fi.json"
    code, stdout, stderr = run("--out", out, *args)
    assert code == 2, stderr
    assert stderr.count("\n") == 1 and flag in stderr and "allowed" in stderr, stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_out_must_be_a_new_file_in_an_existing_folder_or_one_to_resume(tmp_path):
    (tmp_path / "adir").mkdir()
    (tmp_path / "old.json").write_text("{}")
    (tmp_path / "cut.json").write_text('{"anchor": "flashinfer_bf16_verify_flush", "rows": [')
    resume = "(allowed: a new file, one an earlier run of this script wrote, to resume, or --force to replace it)"
    for out, flag in ((tmp_path / "adir", "not a file in an existing folder"),
                      (tmp_path / "nodir" / "fi.json", "not a file in an existing folder"),
                      (tmp_path / "old.json", "not a JSON file this script wrote " + resume),
                      (tmp_path / "cut.json", "not a JSON file this script wrote (")):
        code, _, stderr = run("--out", out)
        assert code == 2 and stderr.count("\n") == 1 and flag in stderr, stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "cut.json", "old.json"]
    assert (tmp_path / "old.json").read_text() == "{}"


ANCHOR_JSON = Path(__file__).resolve().parents[2] / "results" / "flashinfer_bf16_verify.json"


def test_a_resumed_file_keeps_its_measured_rows_and_replaces_failed_ones(tmp_path):
    out = tmp_path / "fi.json"
    out.write_text(ANCHOR_JSON.read_text())
    doc = fva.parse_args(["--out", str(out)]).resume
    done = fva.rows_done(doc, 36)
    assert len(done) == len(doc["rows"]) == 12 and ("steady", 256, 8, 36) in done
    assert ("steady", 256, 8, 12) not in done  # another --layers is another row
    # A row that failed is not done; measuring it again replaces it in place, a new row goes at the end.
    doc["rows"][0] = {"mode": "steady", "batch": 64, "draft_tokens": 4, "status": "failed: RuntimeError: x"}
    assert ("steady", 64, 4, 36) not in fva.rows_done(doc, 36)
    fva.put_row(doc, {**json.loads(ANCHOR_JSON.read_text())["rows"][0]}, 36)
    assert doc["rows"][0]["status"] == "ok" and len(doc["rows"]) == 12
    fva.put_row(doc, {"mode": "verify", "batch": 128, "draft_tokens": 4, "layers": 36, "status": "ok"}, 36)
    assert len(doc["rows"]) == 13 and doc["rows"][-1]["batch"] == 128
    fva.put_check(doc, {"draft_tokens": 8, "ok": True, "max_rel_err_o": 0.001})
    assert [c["draft_tokens"] for c in doc["check"]] == [4, 8] and doc["check"][-1]["max_rel_err_o"] == 0.001


def test_a_file_of_another_gpu_or_version_is_not_resumed():
    old = json.loads(ANCHOR_JSON.read_text())
    assert fva.resume_refusal(old, dict(old), "fi.json") == ""
    for key, value in (("gpu", "NVIDIA H100 80GB HBM3"), ("package_version", "0.7.3")):
        why = fva.resume_refusal(old, {**old, key: value}, "fi.json")
        assert why.startswith(f"--out 'fi.json': {key} = ") and value in why and "--force" in why, why


@pytest.mark.skipif(importlib.util.find_spec("flashinfer") is not None, reason="FlashInfer is installed here")
def test_a_file_to_resume_is_left_as_it_was_without_the_kernel(tmp_path):
    out = tmp_path / "fi.json"
    out.write_text(ANCHOR_JSON.read_text())
    code, _, stderr = run("--out", out)
    assert code == 1 and stderr.count("\n") == 1, stderr
    assert out.read_text() == ANCHOR_JSON.read_text() and sorted(p.name for p in tmp_path.iterdir()) == ["fi.json"]


def test_fewer_than_five_rows_are_allowed_without_the_fifth_mode(tmp_path):
    a = fva.parse_args(["--out", str(tmp_path / "fi.json"), "--batch", "1,4", "--modes", "steady,verify"])
    assert a.batch == [1, 4] and a.modes == ["steady", "verify"]
    assert sum(h >= fva.flush_min(4) for h in fva.start_cursors("fifth", 5, 4)) == 1


def test_out_is_required(tmp_path):
    code, _, stderr = run("--batch", "64")
    assert code == 2 and stderr.startswith("flashinfer_verify_anchor: --out: missing"), stderr


@pytest.mark.skipif(importlib.util.find_spec("flashinfer") is not None, reason="FlashInfer is installed here")
def test_without_the_kernel_nothing_is_written(tmp_path):
    out = tmp_path / "fi.json"
    code, _, stderr = run("--out", out)
    assert code == 1 and stderr.count("\n") == 1 and stderr.startswith("flashinfer_verify_anchor: "), stderr
    assert not out.exists()
