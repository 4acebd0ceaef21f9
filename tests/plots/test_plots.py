"""Tests of the figure scripts in plots/: headless runs on the committed CSVs and on a synthetic CSV, the error for a
missing column, make_all's registry and skip list, and the numbers the figures derive (floor, footnote).

Run: python3 -m pytest -q tests/plots   (needs plots/requirements.txt and pytest; no GPU)
"""

from __future__ import annotations

import contextlib
import csv
import errno
import importlib
import inspect
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PLOTS_DIR = REPO_ROOT / "plots"
RESULTS_DIR = REPO_ROOT / "results"
sys.path.insert(0, str(PLOTS_DIR))

import anchors  # noqa: E402
import decode_data  # noqa: E402
import make_all  # noqa: E402
import result_csv  # noqa: E402
import style  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# Header of a decode CSV as `kvb sweep` writes it (docs/EXPERIMENTS.md).
DECODE_HEADER = (
    "experiment,variant,batch,buffer_size,buffer_form,phase,layers,heads_qk,heads_v,head_dim_k,head_dim_v,seed,"
    "state_dtype,output_dtype,latency_us_median,latency_us_p10,latency_us_p90,samples,noise_pct,sample_stop,"
    "steps_per_sample,model_bytes,model_read_bytes,model_write_bytes,floor_us,latency_over_floor,max_rel_err,"
    "max_rel_err_o,l2,l2_rotation,copy_gbps,read_gbps,device_bytes,dram_read_bytes,dram_write_bytes,"
    "measured_over_model,cupti_status,sm_clock_mhz,throttled,status,gpu,driver,cuda,git_sha,timestamp"
).split(",")


def synthetic_decode_rows() -> list[dict[str, str]]:
    """A small decode sweep on a made-up GPU: HV = 4, K = 32, V = 16 fp32 states, batches 1, 4, 16, recurrent and
    KVBuffer B = 2, 8 (staggered, plus one aligned point), one failed point. Bytes follow the recurrent and KVBuffer
    byte-model shapes loosely (state read + write; checkpoint read + 1/B of a write); latency = floor * 1.3 + 2 us."""
    hv, k, v = 4, 32, 16
    state = hv * k * v * 4
    copy_gbps, read_gbps = 1000.0, 1200.0
    rows = []

    def add(variant, batch, b, phase, read, write, status="ok"):
        model = read + write
        floor = model / (copy_gbps * 1e3)
        lat = floor * 1.3 + 2.0
        row = dict.fromkeys(DECODE_HEADER, "")
        row.update(
            experiment="synthetic", variant=variant, batch=str(batch), buffer_size=b, phase=phase, layers="4",
            heads_qk="2", heads_v=str(hv), head_dim_k=str(k), head_dim_v=str(v), seed="0", state_dtype="fp32",
            buffer_form="delta" if variant == "kvbuffer" else "", output_dtype="bf16",
            latency_us_median=f"{lat:.4f}", latency_us_p10=f"{lat * 0.97:.4f}", latency_us_p90=f"{lat * 1.05:.4f}",
            samples="10", model_bytes=f"{model:.6g}", model_read_bytes=f"{read:.6g}", model_write_bytes=f"{write:.6g}",
            floor_us=f"{floor:.6g}", latency_over_floor=f"{lat / floor:.6g}", copy_gbps=str(copy_gbps),
            read_gbps=str(read_gbps), dram_read_bytes=f"{read * 1.01:.6g}", dram_write_bytes=f"{write * 0.99:.6g}",
            cupti_status="ok", status=status, gpu="Synthetic GPU X1", driver="1.0", cuda="12.9",
            git_sha="0123456789ab", timestamp=f"2026-01-0{1 + batch % 2}T00:00:00Z",
        )
        rows.append(row)

    for batch in (1, 4, 16):
        add("recurrent", batch, "", "", batch * state, batch * state)
        for b in (2, 8):
            add("kvbuffer", batch, str(b), "staggered", batch * state * 1.1, batch * state / b)
    add("kvbuffer", 4, "8", "aligned", 4 * state * 1.1, 4 * state / 8)
    add("kvbuffer", 32, "2", "staggered", 1.0, 1.0, status="failed: synthetic")
    return rows


# Header of a spec_verify CSV as `kvb sweep` writes it (docs/EXPERIMENTS.md, spec_verify).
SPEC_VERIFY_HEADER = (
    "experiment,variant,batch,draft_tokens,accepted,buffer_size,buffer_form,phase,layers,heads_qk,heads_v,head_dim_k,"
    "head_dim_v,seed,state_dtype,output_dtype,capacity,mean_accepted,verify_us_median,verify_us_p10,verify_us_p90,"
    "verify_samples,verify_noise_pct,verify_sample_stop,verify_steps_per_sample,verify_accept_us_median,"
    "verify_accept_us_p10,verify_accept_us_p90,verify_accept_samples,verify_accept_noise_pct,"
    "verify_accept_sample_stop,verify_accept_steps_per_sample,verify_model_bytes,verify_model_read_bytes,"
    "verify_model_write_bytes,verify_floor_us,verify_over_floor,verify_accept_model_bytes,"
    "verify_accept_model_read_bytes,verify_accept_model_write_bytes,verify_accept_floor_us,verify_accept_over_floor,"
    "max_rel_err,max_rel_err_o,l2,l2_rotation,scratch_sets,copy_gbps,read_gbps,device_bytes,dram_read_bytes,"
    "dram_write_bytes,measured_over_model,cupti_status,sm_clock_mhz,throttled,status,gpu,driver,cuda,git_sha,timestamp"
).split(",")


def synthetic_spec_verify_rows() -> list[dict[str, str]]:
    """A small spec_verify sweep on a made-up GPU: HV = 4, K = 32, V = 16, batches 8 and 32, m = 1, 2, 4, accepted 0.7,
    all and none, recurrent verify and KVBuffer B = 2, 4, one failed point. Recurrent verify costs one state per draft
    (3 us + 1.5 us per draft per 8 requests); KVBuffer one state plus 0.4 us per draft; accept adds 30%."""
    rows = []

    def add(variant, batch, m, acc, b, status="ok"):
        per8 = (1.5 * m + 1.0) if variant == "recurrent_verify" else (1.0 + 0.4 * m + 0.1 * int(b or 0))
        verify = 3.0 + per8 * batch / 8
        accept = verify * (1.3 if acc != "none" else 1.05)
        row = dict.fromkeys(SPEC_VERIFY_HEADER, "")
        row.update(
            experiment="synthetic", variant=variant, batch=str(batch), draft_tokens=str(m), accepted=acc,
            buffer_size=b, buffer_form="delta" if b else "", phase="staggered" if b else "", layers="4", heads_qk="2", heads_v="4", head_dim_k="32",
            head_dim_v="16", seed="0", state_dtype="fp32", output_dtype="bf16",
            verify_us_median=f"{verify:.4f}", verify_us_p10=f"{verify * 0.98:.4f}", verify_us_p90=f"{verify * 1.03:.4f}",
            verify_accept_us_median=f"{accept:.4f}", verify_accept_us_p10=f"{accept * 0.97:.4f}",
            verify_accept_us_p90=f"{accept * 1.04:.4f}", status=status, gpu="Synthetic GPU X1", driver="1.0",
            cuda="12.9", git_sha="0123456789ab", timestamp="2026-01-01T00:00:00Z",
        )
        rows.append(row)

    for batch in (8, 32):
        for m in (1, 2, 4):
            for acc in ("0.7", "all", "none"):
                add("recurrent_verify", batch, m, acc, "")
                for b in ("2", "4"):
                    add("kvbuffer_verify", batch, m, acc, b)
    add("kvbuffer_verify", 128, 4, "0.7", "2", status="failed: synthetic")
    return rows


CAPACITY_HEADER = (
    "variant,buffer_size,draft_tokens,state_dtype,budget_bytes,bytes_per_request,max_requests_model,"
    "max_requests_measured,status,layers,state_bytes,intermediate_state_bytes,buffer_bytes,draft_bytes,"
    "conv_state_bytes,ratio_to_recurrent,buffer_entries,io_bytes_per_request,fixed_bytes,conv_state_counted,heads_qk,"
    "heads_v,head_dim_k,head_dim_v,gpu,timestamp"
).split(",")


CAPACITY_STATE_BYTES = {"fp32": 1000, "bf16": 500}  # the synthetic state per layer, by state dtype


def synthetic_capacity_rows(measured: bool = True, dtypes=("fp32",)) -> list[dict[str, str]]:
    """A capacity table for a 10 MiB budget and a made-up 4-layer model (state 1000 bytes per layer in fp32, 500 in
    bf16; entry 50 bytes), one block of rows per state dtype of `dtypes`: recurrent verify holds (1 + m) states,
    KVBuffer verify one state plus max(B - 1, 1) + m entries. Measured counts one less than the model when
    `measured` (bf16 verify rows with status "kernel not available: ...", as kvb writes them: no verify kernel stores
    bf16 states), else blank with status "model only (no GPU)"."""
    budget, layers, entry = 10 * 2**20, 4, 50
    rows = []

    def add(variant, b, m, per_layer, dtype):
        per_request = per_layer * layers
        model = budget // per_request
        status = "model only (no GPU)"
        if measured:
            status = ("kernel not available: " + variant + " takes fp32 states only (allocation proved, no step run)"
                      if dtype == "bf16" and m else "ok")
        row = dict.fromkeys(CAPACITY_HEADER, "")
        row.update(
            variant=variant, buffer_size=str(b) if b else "", draft_tokens=str(m) if m else "", state_dtype=dtype,
            budget_bytes=str(budget), bytes_per_request=str(per_request), max_requests_model=str(model),
            max_requests_measured=str(model - 1) if measured else "", status=status, layers=str(layers),
            heads_qk="2", heads_v="4", head_dim_k="16", head_dim_v="16", gpu="Synthetic GPU X1" if measured else "",
            timestamp="2026-01-01T00:00:00Z",
        )
        rows.append(row)

    for dtype in dtypes:
        state = CAPACITY_STATE_BYTES[dtype]
        add("recurrent_decode", None, None, state, dtype)
        for m in (1, 2, 4):
            add("recurrent_verify", None, m, (1 + m) * state, dtype)
        for b in (2, 4):
            add("kvbuffer_decode", b, None, state + max(b - 1, 1) * entry, dtype)
            for m in (1, 2, 4):
                add("kvbuffer_verify", b, m, state + (max(b - 1, 1) + m) * entry, dtype)
    return rows


# Header of a short_context CSV as `kvb sweep` writes it (docs/EXPERIMENTS.md, short_context): the decode columns
# without buffer_form, context_len after variant, and three memory columns after the decode results.
SHORT_CONTEXT_HEADER = (
    "experiment,variant,context_len,batch,buffer_size,phase,layers,heads_qk,heads_v,head_dim_k,head_dim_v,seed,"
    "state_dtype,output_dtype,latency_us_median,latency_us_p10,latency_us_p90,samples,noise_pct,sample_stop,"
    "steps_per_sample,model_bytes,model_read_bytes,model_write_bytes,floor_us,latency_over_floor,max_rel_err,"
    "max_rel_err_o,l2,l2_rotation,copy_gbps,read_gbps,device_bytes,dram_read_bytes,dram_write_bytes,"
    "measured_over_model,cupti_status,sm_clock_mhz,throttled,stateless,state_bytes_per_request,"
    "buffer_bytes_per_request,status,gpu,driver,cuda,git_sha,timestamp"
).split(",")

# The synthetic short_context model: HV = 4, H = 2, K = V = 16, 4 layers, fp32 states.
SC_LAYERS = 4
SC_STATE_BYTES = SC_LAYERS * 4 * 16 * 16 * 4  # per request, all layers
SC_ENTRY_BYTES = 2 * 16 * 2 + 4 * 16 * 4 + 4 * 4  # bf16 keys, fp32 deltas, fp32 log-decays


def sc_recurrent_us(batch: int) -> float:
    return 2.0 + 0.05 * batch


def sc_kvbuffer_us(batch: int, b: int, context_len: int) -> float:
    """Stateless: grows with the L buffered entries read; stateful: 0.7x recurrent plus a little per B."""
    if context_len < b:
        return 1.0 + 0.002 * batch * (context_len + 1)
    return 0.7 * sc_recurrent_us(batch) + 0.01 * b


def synthetic_short_context_rows() -> list[dict[str, str]]:
    """A small short_context sweep on a made-up GPU: batches 64 and 256, KVBuffer B = 4 and 16 over L = 1 .. 64
    (stateless while L < B), one recurrent row per batch with an empty context_len, one failed point."""
    rows = []

    def add(variant, batch, b, context_len, lat, status="ok"):
        stateless = variant == "kvbuffer" and context_len < b
        row = dict.fromkeys(SHORT_CONTEXT_HEADER, "")
        row.update(
            experiment="synthetic", variant=variant, context_len=str(context_len) if variant == "kvbuffer" else "",
            batch=str(batch), buffer_size=str(b) if b else "", phase="staggered" if b else "",
            layers=str(SC_LAYERS), heads_qk="2", heads_v="4", head_dim_k="32", head_dim_v="16", seed="0",
            state_dtype="fp32", output_dtype="bf16", latency_us_median=f"{lat:.4f}",
            latency_us_p10=f"{lat * 0.97:.4f}", latency_us_p90=f"{lat * 1.04:.4f}", samples="10",
            stateless="true" if stateless else "false",
            state_bytes_per_request="0" if stateless else str(SC_STATE_BYTES),
            buffer_bytes_per_request=str(SC_LAYERS * max(b - 1, 1) * SC_ENTRY_BYTES) if b else "0",
            status=status, gpu="Synthetic GPU X1", driver="1.0", cuda="12.9", git_sha="0123456789ab",
            timestamp="2026-01-01T00:00:00Z",
        )
        rows.append(row)

    for batch in (64, 256):
        add("recurrent", batch, 0, 0, sc_recurrent_us(batch))
        for b in (4, 16):
            for context_len in (1, 2, 4, 8, 16, 32, 64):
                add("kvbuffer", batch, b, context_len, sc_kvbuffer_us(batch, b, context_len))
    add("kvbuffer", 256, 16, 128, 0.5, status="failed: synthetic")
    return rows


def synthetic_buffer_form_rows() -> list[dict[str, str]]:
    """A small buffer_form sweep (decode kind, KVBuffer only) on a made-up GPU: batches 64 and 256, B = 2, 4, 8, 16,
    delta and raw forms; raw = delta * (1.1 + 0.02 B); one failed point."""
    rows = []

    def add(batch, b, form, lat, status="ok"):
        row = dict.fromkeys(DECODE_HEADER, "")
        row.update(
            experiment="synthetic", variant="kvbuffer", batch=str(batch), buffer_size=str(b), buffer_form=form,
            phase="staggered", layers="4", heads_qk="2", heads_v="4", head_dim_k="32", head_dim_v="16", seed="0",
            state_dtype="fp32", output_dtype="bf16", latency_us_median=f"{lat:.4f}",
            latency_us_p10=f"{lat * 0.97:.4f}", latency_us_p90=f"{lat * 1.05:.4f}", samples="10", status=status,
            gpu="Synthetic GPU X1", driver="1.0", cuda="12.9", git_sha="0123456789ab",
            timestamp="2026-01-01T00:00:00Z",
        )
        rows.append(row)

    for batch in (64, 256):
        for b in (2, 4, 8, 16):
            delta = 3.0 + 0.2 * batch * (1 + 0.05 * b)
            add(batch, b, "delta", delta)
            add(batch, b, "raw", delta * (1.1 + 0.02 * b))
    add(512, 16, "raw", 1.0, status="failed: synthetic")
    return rows


ACCURACY_CHECKPOINTS = (1, 64, 512, 4096, 16384)
ACCURACY_HEADER = (
    ("experiment", "variant", "batch", "buffer_size", "tokens", "heads_qk", "heads_v", "head_dim_k", "head_dim_v",
     "seed", "state_dtype", "output_dtype")
    + tuple(f"{q}_err_at_{t}" for t in ACCURACY_CHECKPOINTS for q in ("state", "o"))
    + ("tokens_run", "state_err_last", "o_err_last", "status", "gpu", "driver", "cuda", "git_sha", "timestamp")
)


def synthetic_accuracy_rows() -> list[dict[str, str]]:
    """A small accuracy sweep on a made-up GPU: recurrent and KVBuffer (B = 16) with fp32 and bf16 states over 4096
    tokens; bf16 errors growing as the square root of the tokens, recurrent's 4x KVBuffer's; one failed point."""
    rows = []

    def add(variant, b, dtype, scale, status="ok"):
        row = dict.fromkeys(ACCURACY_HEADER, "")
        row.update(experiment="synthetic", variant=variant, batch="2", buffer_size=b, tokens="4096", heads_qk="2",
                   heads_v="4", head_dim_k="32", head_dim_v="16", seed="0", state_dtype=dtype, output_dtype="fp32",
                   tokens_run="4096", status=status, gpu="Synthetic GPU X1", driver="1.0", cuda="12.9",
                   git_sha="0123456789ab", timestamp="2026-01-01T00:00:00Z")
        for t in ACCURACY_CHECKPOINTS[:4]:
            row[f"state_err_at_{t}"] = f"{scale * t ** 0.5:.3g}"
            row[f"o_err_at_{t}"] = f"{0.5 * scale * t ** 0.5:.3g}"
        row["state_err_last"], row["o_err_last"] = row["state_err_at_4096"], row["o_err_at_4096"]
        rows.append(row)

    add("recurrent", "", "fp32", 1e-8)
    add("recurrent", "", "bf16", 4e-4)
    add("kvbuffer", "16", "fp32", 1e-8)
    add("kvbuffer", "16", "bf16", 1e-4)
    add("kvbuffer", "64", "bf16", 1e-4, status="failed: synthetic")
    return rows


SYNTHETIC = {
    "accuracy.csv": synthetic_accuracy_rows,
    "decode_latency.csv": synthetic_decode_rows,
    "spec_verify.csv": synthetic_spec_verify_rows,
    "capacity.csv": synthetic_capacity_rows,
    "short_context.csv": synthetic_short_context_rows,
    "buffer_form.csv": synthetic_buffer_form_rows,
}


def write_csv(path: Path, rows, drop: str | None = None) -> Path:
    header = [c for c in rows[0] if c != drop]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return path


def run_script(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PLOTS_DIR / f"{script}.py"), *args], capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=120)


def assert_figure(out_dir: Path, name: str) -> None:
    png, pdf = out_dir / f"{name}.png", out_dir / f"{name}.pdf"
    data = png.read_bytes()
    assert data.startswith(PNG_MAGIC), f"{png} is not a PNG"
    assert len(data) > 20_000, f"{png} is only {len(data)} bytes"
    assert pdf.read_bytes().startswith(b"%PDF"), f"{pdf} is not a PDF"


FIGURE_IDS = [f.script for f in make_all.FIGURES]


def test_every_figure_script_is_registered():
    scripts = {p.stem for p in PLOTS_DIR.glob("*.py")} - make_all.HELPER_MODULES
    assert scripts == set(FIGURE_IDS)
    assert set(f.csv for f in make_all.FIGURES) <= set(SYNTHETIC), "every CSV kind needs a synthetic generator here"


@pytest.mark.parametrize("fig", make_all.FIGURES, ids=FIGURE_IDS)
def test_script_on_committed_csv(fig, tmp_path):
    csv_path = RESULTS_DIR / fig.csv
    if not csv_path.is_file():
        pytest.skip(f"results/{fig.csv} is not committed yet")
    r = run_script(fig.script, "--csv", str(csv_path), "--out-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert_figure(tmp_path, fig.script)


@pytest.mark.parametrize("fig", make_all.FIGURES, ids=FIGURE_IDS)
def test_script_on_synthetic_csv(fig, tmp_path):
    csv_path = write_csv(tmp_path / fig.csv, SYNTHETIC[fig.csv]())
    out = tmp_path / "figures"
    r = run_script(fig.script, "--csv", str(csv_path), "--out-dir", str(out))
    assert r.returncode == 0, r.stderr
    assert_figure(out, fig.script)


def _missing_column_cases():
    for fig in make_all.FIGURES:
        module = importlib.import_module(fig.script)
        for column in module.REQUIRED_COLUMNS:
            yield pytest.param(fig, column, id=f"{fig.script}-{column}")


@pytest.mark.parametrize("fig,column", list(_missing_column_cases()))
def test_missing_column_is_named(fig, column, tmp_path, capsys):
    module = importlib.import_module(fig.script)
    csv_path = write_csv(tmp_path / fig.csv, SYNTHETIC[fig.csv](), drop=column)
    out = tmp_path / "figures"
    with pytest.raises(SystemExit) as e:
        module.main(["--csv", str(csv_path), "--out-dir", str(out)])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    want = f"{csv_path}:1: no column '{column}' (the header of a {module.KIND} CSV: "
    assert err.startswith(result_csv.one_line(want)), err
    assert "\n" not in err
    assert not out.exists(), "nothing may be written on bad input"


@pytest.mark.parametrize("fig", make_all.FIGURES, ids=FIGURE_IDS)
def test_missing_column_from_command_line(fig, tmp_path):
    required = importlib.import_module(fig.script).REQUIRED_COLUMNS
    column = required[len(required) // 2]
    csv_path = write_csv(tmp_path / fig.csv, SYNTHETIC[fig.csv](), drop=column)
    r = run_script(fig.script, "--csv", str(csv_path), "--out-dir", str(tmp_path / "figures"))
    assert r.returncode == 2
    assert result_csv.one_line(f"{csv_path}:1: no column '{column}'") in r.stderr
    assert not (tmp_path / "figures").exists()


def test_missing_file_and_no_ok_rows(tmp_path, capsys):
    with pytest.raises(SystemExit):
        style.read_csv(tmp_path / "absent.csv", ["batch"], "decode")
    assert "absent.csv: no such file" in capsys.readouterr().err
    rows = [r for r in synthetic_decode_rows() if r["status"] != "ok"]
    path = write_csv(tmp_path / "failed.csv", rows)
    with pytest.raises(SystemExit):
        style.read_csv(path, ["batch"], "decode")
    assert "no rows with status ok" in capsys.readouterr().err


def test_require_columns_accepts_header_rows_and_reader(tmp_path, capsys):
    rows = synthetic_decode_rows()
    style.require_columns(rows, ["batch", "gpu"], "x.csv")
    style.require_columns(list(rows[0]), ["batch"], "x.csv")
    path = write_csv(tmp_path / "x.csv", rows)
    with path.open() as f:
        style.require_columns(csv.DictReader(f), ["timestamp"], path)
    with pytest.raises(SystemExit) as e:
        style.require_columns(rows, ["batch", "nope", "neither"], "x.csv")
    assert e.value.code == 2
    assert capsys.readouterr().err.strip() == "CSV x.csv lacks columns nope, neither"


def test_bad_number_is_named(tmp_path, capsys):
    rows = synthetic_decode_rows()
    rows[3]["latency_us_median"] = "fast"
    path = write_csv(tmp_path / "bad.csv", rows)
    module = importlib.import_module("decode_latency")
    with pytest.raises(SystemExit):
        module.main(["--csv", str(path), "--out-dir", str(tmp_path / "figures")])
    assert f"{path}:5: latency_us_median = 'fast' (allowed: a finite number of microseconds > 0)" in \
        capsys.readouterr().err


def test_read_state_floor_reproduces_anchors_column():
    # the anchors' read-only state floor (results/anchors.csv, state_read_floor), rounded to 0.1 us there.
    state = decode_data.state_bytes_per_request(
        {"heads_v": "32", "head_dim_k": "128", "head_dim_v": "128", "state_dtype": "fp32"}, "anchors")
    assert state == 32 * 128 * 128 * 4
    for batch, expected in anchors.READ_STATE_FLOOR_US.items():
        got = decode_data.read_state_floor_us(batch, state, anchors.READ_GBPS)
        assert got == pytest.approx(expected, abs=0.051), batch


def test_decode_series_groups_and_orders():
    rows = [r for r in synthetic_decode_rows() if r["status"] == "ok"]
    series = decode_data.decode_series(rows, "synthetic")
    assert [s.label for s in series] == ["recurrent", "KVBuffer B = 2", "KVBuffer B = 8"]
    for s in series:
        assert s.batches("synthetic") == [1.0, 4.0, 16.0]
    aligned = decode_data.decode_series(rows, "synthetic", phase="aligned")
    assert [(s.label, s.batches("synthetic")) for s in aligned] == [
        ("recurrent", [1.0, 4.0, 16.0]), ("KVBuffer B = 8", [4.0])]


def test_decode_series_separates_row_orders():
    rows = [r for r in synthetic_decode_rows() if r["status"] == "ok"]
    kv = [r for r in rows if r["variant"] == "kvbuffer" and r["phase"] == "staggered"]
    mixed = rows + [dict(r, row_order="spread", latency_us_median=str(float(r["latency_us_median"]) / 2)) for r in kv]
    series = decode_data.decode_series(mixed, "synthetic")
    assert [s.label for s in series] == [
        "recurrent", "KVBuffer B = 2 (automatic order)", "KVBuffer B = 2 (spread order)",
        "KVBuffer B = 8 (automatic order)", "KVBuffer B = 8 (spread order)"]
    for s in series:
        assert s.batches("synthetic") == [1.0, 4.0, 16.0]
    # One order in the file: the labels stay as they were.
    assert [s.label for s in decode_data.decode_series([dict(r, row_order="spread") for r in kv], "synthetic")] == [
        "KVBuffer B = 2", "KVBuffer B = 8"]


def test_decode_series_keeps_plain_launches_and_best_pdl_per_batch():
    rows = [r for r in synthetic_decode_rows() if r["status"] == "ok"]
    pdl = [dict(r, launch="pdl", latency_us_median=str(float(r["latency_us_median"]) / 2)) for r in rows]
    plain = [dict(r, launch="plain") for r in rows]
    series = decode_data.decode_series(plain + pdl, "synthetic")
    # The same series as without a launch column: PDL rows never join the plain lines.
    assert [(s.label, s.batches("synthetic")) for s in series] == [
        (s.label, s.batches("synthetic")) for s in decode_data.decode_series(rows, "synthetic")]
    best = decode_data.best_kvbuffer_by_batch(plain + pdl, "synthetic", "staggered", "pdl")
    for batch, us in best.items():
        expected = min(float(r["latency_us_median"]) for r in pdl if r["variant"] == "kvbuffer"
                       and r["phase"] == "staggered" and float(r["batch"]) == batch)
        assert us == expected
    assert best and decode_data.best_kvbuffer_by_batch(rows, "synthetic", "staggered", "pdl") == {}


def _expect_csv_refused(script, path, message, tmp_path, *args):
    """`script` on the CSV at `path` (and `args`): exit 2, the one line "CSV PATH MESSAGE" on stderr, no figure folder
    made."""
    out = tmp_path / "figures"
    r = run_script(script, "--csv", str(path), "--out-dir", str(out), *args)
    assert r.returncode == 2, r.stderr
    assert r.stderr == result_csv.one_line(f"CSV {path} {message}") + "\n"
    assert not out.exists()


# decode_latency's and decode_efficiency's refusal of a CSV without a plain-launch series (dd.require_decode_series).
NO_PLAIN_SERIES = ("has no recurrent rows with launch plain and no kvbuffer rows with phase staggered and launch plain "
                   "(the figure's series are plain launches, the peers drawn beside them)")


@pytest.mark.parametrize("script,message", [
    ("decode_latency", NO_PLAIN_SERIES),
    ("decode_efficiency", NO_PLAIN_SERIES),
    ("decode_bytes", "has no recurrent or kvbuffer rows with launch plain and dram_read_bytes and dram_write_bytes "
                     "(the figure draws plain launches with DRAM counts)"),
])
def test_decode_figures_refuse_a_csv_of_pdl_launches_only(script, message, tmp_path):
    """A decode CSV whose rows are all launch = pdl holds none of the plain-launch series the figures draw: exit 2 with
    one line saying so, nothing written (decode_bytes ended in a traceback)."""
    header = DECODE_HEADER[:DECODE_HEADER.index("phase") + 1] + ["launch"] + DECODE_HEADER[
        DECODE_HEADER.index("phase") + 1:]
    rows = [{c: r.get(c, "pdl") for c in header} for r in synthetic_decode_rows()]
    _expect_csv_refused(script, write_csv(tmp_path / "pdl.csv", rows), message, tmp_path)


@pytest.mark.parametrize("script", ["decode_latency", "decode_efficiency"])
def test_decode_figures_refuse_a_csv_of_peer_rows_only(script, tmp_path):
    """A decode CSV holding only a peer's rows (fla_recurrent) has none of the recurrent and KVBuffer series the peers
    are drawn beside: decode_latency and decode_efficiency alike refuse it in one line, exit 2, nothing written (the
    efficiency figure drew the peer alone under a title naming KVBuffer's buffer phases)."""
    with (RESULTS_DIR / "decode_latency.csv").open(newline="") as f:
        peers = [r for r in csv.DictReader(f) if r["variant"] == "fla_recurrent"]
    assert peers, "results/decode_latency.csv holds fla_recurrent rows"
    _expect_csv_refused(script, write_csv(tmp_path / "fla.csv", peers), NO_PLAIN_SERIES, tmp_path)


@pytest.mark.parametrize("script", ["decode_latency", "decode_efficiency", "buffer_form"])
def test_a_phase_the_csv_has_no_kvbuffer_rows_of_is_refused(script, tmp_path):
    """--phase aligned on a decode CSV whose plain-launch KVBuffer rows are all staggered (its aligned ones, if any,
    pdl launches): exit 2 in one line naming the CSV, the phase and the phases it holds, nothing written, where the
    decode figures drew recurrent and the peers alone under a title naming aligned buffer phases."""
    make = synthetic_buffer_form_rows if script == "buffer_form" else synthetic_decode_rows
    rows = _with_launch([r for r in make() if r["phase"] != "aligned"], "plain")
    aligned_pdl = [dict(r, phase="aligned", launch="pdl") for r in rows if r["variant"] == "kvbuffer"]
    path = write_csv(tmp_path / "staggered.csv", rows + aligned_pdl)
    _expect_csv_refused(script, path, "has no kvbuffer rows with phase aligned and launch plain (allowed: --phase "
                                      "staggered, the phases of its kvbuffer rows with launch plain)", tmp_path,
                        "--phase", "aligned")


@pytest.mark.parametrize("script", ["short_context", "decode_latency"])
def test_a_phase_a_csv_without_launches_has_no_kvbuffer_rows_of_is_refused_naming_its_phases(script, tmp_path):
    """--phase aligned on a CSV without a launch column (short_context's never has one) whose KVBuffer rows are all
    staggered: exit 2 in one line naming the CSV, the phase and the phases it holds, and no launch, nothing written,
    where short_context named the phase alone."""
    make = synthetic_short_context_rows if script == "short_context" else synthetic_decode_rows
    path = write_csv(tmp_path / "staggered.csv", [r for r in make() if r["phase"] != "aligned"])
    _expect_csv_refused(script, path, "has no kvbuffer rows with phase aligned (allowed: --phase staggered, the phases "
                                      "of its kvbuffer rows)", tmp_path, "--phase", "aligned")


def test_a_phase_the_csv_holds_is_drawn():
    """--phase aligned on a CSV with aligned KVBuffer rows draws them beside recurrent, as before."""
    import decode_latency

    fig = decode_latency.build([r for r in synthetic_decode_rows() if r["status"] == "ok"], "synthetic", "aligned")
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "recurrent" in labels and "KVBuffer B = 8" in labels and "KVBuffer B = 2" not in labels
    assert "aligned buffer phases" in fig.axes[0].get_title()
    style.plt.close(fig)


def test_footnote_names_gpu_dates_and_revision():
    rows = synthetic_decode_rows()
    text = style.footnote_text(rows, REPO_ROOT / "results" / "x.csv")
    assert text.startswith("Synthetic GPU X1 | driver 1.0 | CUDA 12.9 | ")
    assert "measured 2026-01-01 to 2026-01-02 UTC" in text
    assert "git 0123456789ab" in text
    assert "data results/x.csv" in text
    bf16 = [dict(r, state_dtype="bf16") for r in rows]
    assert style.footnote_text(bf16, "x.csv").startswith("Synthetic GPU X1 | bf16 states | driver 1.0")


def test_make_all_runs_present_and_lists_skipped(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    out = tmp_path / "figures"
    r = run_script("make_all", "--results-dir", str(results), "--out-dir", str(out))
    assert r.returncode == 0, r.stderr
    assert "made 0 figure(s)" in r.stdout
    assert f"skipped {len(make_all.FIGURES) + len(make_all.STATE_DTYPE_FIGURES)}:" in r.stdout
    for name in FIGURE_IDS + [f.name for f in make_all.STATE_DTYPE_FIGURES]:
        assert name in r.stdout

    for name, make in SYNTHETIC.items():
        write_csv(results / name, make())
    r = run_script("make_all", "--results-dir", str(results), "--out-dir", str(out))
    assert r.returncode == 0, r.stderr
    assert f"made {len(make_all.FIGURES)} figure(s)" in r.stdout
    for name in FIGURE_IDS:
        assert_figure(out, name)


def _savefig_lines() -> list[int]:
    """The lines of plots/style.py where save calls savefig for the PNG and the PDF: where matplotlib's warnings while
    a figure is saved point."""
    source, first = inspect.getsourcelines(style.save)
    return [first + i for i, text in enumerate(source) if "fig.savefig(" in text]


def test_make_all_shows_each_figures_warnings_in_one_line_each(tmp_path):
    """A warning raised while a figure is made (matplotlib's, when a peer's legend label of 300 characters leaves the
    axes no room) is one line on stderr naming the figure, "FIGURE: CATEGORY: MESSAGE (FILE:LINE)", where Python wrote
    two (the message, then the source line, which FILE:LINE names); and each figure shows its own, where make_all's one
    process showed a warning from one line only for the first figure that raised it (decode_efficiency's were lost)."""
    results = tmp_path / "results"
    results.mkdir()
    with (RESULTS_DIR / "decode_latency.csv").open(newline="") as f:
        rows = [dict(r, package_version="0.6.0+" + "x" * 300) if r["variant"] == "fla_recurrent" else r
                for r in csv.DictReader(f)]
    write_csv(results / "decode_latency.csv", rows)
    r = run_script("make_all", "--results-dir", str(results), "--out-dir", str(tmp_path / "figures"))
    assert r.returncode == 0, r.stderr
    message = ("UserWarning: constrained_layout not applied because axes sizes collapsed to zero.  Try making figure "
               "larger or Axes decorations smaller.")
    assert len(_savefig_lines()) == 2
    assert r.stderr == "".join(f"{name}: {message} (plots/style.py:{line})\n"
                               for name in ("decode_latency", "decode_efficiency") for line in _savefig_lines())
    assert "made 3 figure(s): decode_latency, decode_efficiency, decode_bytes" in r.stdout


def test_a_warning_while_a_figure_is_made_is_one_line(capsys):
    """style.show_warning, as run_figure installs it: a message holding line breaks written \\n (result_csv.one_line),
    the place relative to the repository, or to the sys.path folder holding it (matplotlib/...), so that one_line
    keeps it whole, and no figure named outside one."""
    mpl = Path(importlib.import_module("matplotlib").__file__).parent / "figure.py"
    with style.warnings_named("capacity_bf16"):
        warnings.warn_explicit("first\nsecond", UserWarning, str(PLOTS_DIR / "capacity.py"), 7)
        warnings.warn_explicit("deep", RuntimeWarning, str(mpl), 3409)
    style.show_warning(UserWarning("alone"), UserWarning, str(PLOTS_DIR / "style.py"), 9)
    assert capsys.readouterr().err == ("capacity_bf16: UserWarning: first\\nsecond (plots/capacity.py:7)\n"
                                       "capacity_bf16: RuntimeWarning: deep (matplotlib/figure.py:3409)\n"
                                       "UserWarning: alone (plots/style.py:9)\n")


def test_capacity_uses_model_counts_without_measured_ones(tmp_path):
    path = write_csv(tmp_path / "capacity.csv", synthetic_capacity_rows(measured=False))
    r = run_script("capacity", "--csv", str(path), "--out-dir", str(tmp_path / "figures"))
    assert r.returncode == 0, r.stderr
    assert_figure(tmp_path / "figures", "capacity")
    module = importlib.import_module("capacity")
    rows = module.capacity_rows(path)
    fig = module.build(rows, path)
    texts = [t.get_text() for t in fig.texts]
    assert any("requests: max_requests_model" in t for t in texts), texts
    ratios = fig.axes[1].lines
    # B = 2, m = 4: (1000 + 5 * 50) * 4 bytes per request against (1 + 4) * 1000 * 4.
    budget = 10 * 2**20
    expected = (budget // ((1000 + 5 * 50) * 4)) / (budget // (5 * 1000 * 4))
    b2 = next(line for line in ratios if line.get_label() == "B = 2")
    assert list(b2.get_xdata()) == [1, 2, 4]
    assert b2.get_ydata()[-1] == pytest.approx(expected)
    paper = next(line for line in ratios if line.get_label().startswith("paper"))
    assert list(paper.get_ydata()) == [5.0, 5.0]


def test_capacity_prefers_measured_counts(tmp_path):
    path = write_csv(tmp_path / "capacity.csv", synthetic_capacity_rows(measured=True))
    module = importlib.import_module("capacity")
    fig = module.build(module.capacity_rows(path), path)
    assert any("requests: max_requests_measured" in t.get_text() for t in fig.texts)
    budget = 10 * 2**20
    rec = next(line for line in fig.axes[0].lines if line.get_label() == "recurrent verify")
    assert list(rec.get_ydata()) == [budget // ((1 + m) * 4000) - 1 for m in (1, 2, 4)]


def test_capacity_draws_one_state_dtype_at_a_time(tmp_path):
    """A capacity CSV with fp32 and bf16 rows (kvb capacity's default): the figure draws the fp32 rows by default and
    the bf16 ones with --state-dtype bf16, each against recurrent verification of its own dtype (bf16 verify rows of
    status "kernel not available: ..." count: their pools were allocated); both at once are refused, and a CSV
    without the state_dtype column reads fp32."""
    path = write_csv(tmp_path / "capacity.csv", synthetic_capacity_rows(dtypes=("fp32", "bf16")))
    module = importlib.import_module("capacity")
    budget = 10 * 2**20
    for dtype, state in CAPACITY_STATE_BYTES.items():
        out = tmp_path / dtype
        r = run_script("capacity", "--csv", str(path), "--out-dir", str(out), "--state-dtype", dtype)
        assert r.returncode == 0, r.stderr
        assert_figure(out, "capacity" if dtype == "fp32" else f"capacity_{dtype}")
        fig = module.build(style.rows_of_state_dtype(module.capacity_rows(path), dtype, path), path)
        assert fig.axes[0].get_title().endswith(f", {dtype} states")
        rec = next(line for line in fig.axes[0].lines if line.get_label() == "recurrent verify")
        assert list(rec.get_ydata()) == [budget // ((1 + m) * state * 4) - 1 for m in (1, 2, 4)]
        b2 = next(line for line in fig.axes[1].lines if line.get_label() == "B = 2")
        kv = budget // ((state + 5 * 50) * 4) - 1  # B = 2, m = 4: one state and 1 + 4 entries a layer
        assert b2.get_ydata()[-1] == pytest.approx(kv / (budget // (5 * state * 4) - 1))
    r = run_script("capacity", "--csv", str(path), "--out-dir", str(tmp_path / "default"))
    assert r.returncode == 0, r.stderr
    with pytest.raises(SystemExit) as e:
        module.build(module.capacity_rows(path), path)
    assert e.value.code == 2
    old = write_csv(tmp_path / "old.csv", synthetic_capacity_rows(), drop="state_dtype")
    assert module.build(module.capacity_rows(old), old).axes[0].get_title().endswith(", fp32 states")
    r = run_script("capacity", "--csv", str(old), "--out-dir", str(tmp_path / "old"), "--state-dtype", "bf16")
    assert r.returncode == 2  # a CSV without the column holds fp32 rows only
    assert "state_dtype bf16" in r.stderr


def test_spec_verify_draws_anchor_markers_only_for_the_anchor_shape(tmp_path):
    module = importlib.import_module("spec_verify")
    rows = [r for r in synthetic_spec_verify_rows() if r["status"] == "ok"]
    fig = module.build(rows, "synthetic")
    labels = [line.get_label() for ax in fig.axes for line in ax.lines]
    assert not any("SGLang" in label for label in labels)
    for r in rows:
        r.update(heads_qk="16", heads_v="32", head_dim_k="128", head_dim_v="128")
    rows = [r for r in rows if r["batch"] == "8"]
    for r in rows:
        r["batch"] = "64"
    fig = module.build(rows, "synthetic")
    anchor = [line for line in fig.axes[0].lines if "SGLang" in line.get_label()]
    assert len(anchor) == 1
    assert list(anchor[0].get_xdata()) == sorted(anchors.SPEC_VERIFY_US)
    assert list(anchor[0].get_ydata()) == [anchors.SPEC_VERIFY_US[m][64] for m in sorted(anchors.SPEC_VERIFY_US)]


def test_spec_verify_draws_replayssm_anchors_and_refuses_mixed_verify_kernels():
    module = importlib.import_module("spec_verify")
    rows = [dict(r, heads_qk="16", heads_v="32", head_dim_k="128", head_dim_v="128", batch="64")
            for r in synthetic_spec_verify_rows() if r["status"] == "ok" and r["batch"] == "8"]
    fig = module.build(rows, "synthetic")
    for series, name in ((anchors.REPLAYSSM_VERIFY_US, "ReplaySSM verify alone"),
                         (anchors.REPLAYSSM_VERIFY_COMMIT_US, "ReplaySSM verify + flush + commit")):
        drawn = [line for line in fig.axes[0].lines if line.get_label().startswith(name)]
        assert len(drawn) == 1
        assert list(drawn[0].get_ydata()) == [series[m][64] for m in sorted(series)]
    mixed = [dict(r, verify_kernel="tensor_cores" if i % 2 else "cuda_cores") for i, r in enumerate(rows)]
    with pytest.raises(SystemExit) as e:
        module.build(mixed, "synthetic")
    assert e.value.code == 2
    one = module.build([dict(r, verify_kernel="tensor_cores", kernel="tensor_cores") for r in rows], "synthetic")
    assert "tensor_cores" in one._suptitle.get_text()


def test_spec_verify_draws_flashinfers_bf16_anchors_on_bf16_figures_only():
    """bf16-state rows at the anchors' shape get FlashInfer's bf16-state verify (alone, and + flush) as reference
    markers and no fp32 anchor; fp32 rows get the fp32 anchors and not FlashInfer's bf16 ones."""
    module = importlib.import_module("spec_verify")
    rows = [dict(r, heads_qk="16", heads_v="32", head_dim_k="128", head_dim_v="128", batch="64")
            for r in synthetic_spec_verify_rows() if r["status"] == "ok" and r["batch"] == "8"]
    bf16 = [dict(r, state_dtype="bf16") for r in rows if r["variant"] == "kvbuffer_verify"]
    fig = module.build(bf16, "synthetic")
    labels = [line.get_label() for line in fig.axes[0].lines]
    for series, name in ((anchors.FLASHINFER_BF16_VERIFY_US, "FlashInfer bf16-state verify alone"),
                         (anchors.FLASHINFER_BF16_VERIFY_FLUSH_US, "FlashInfer bf16-state verify + flush")):
        drawn = [line for line in fig.axes[0].lines if line.get_label().startswith(name)]
        assert len(drawn) == 1
        assert list(drawn[0].get_ydata()) == [series[m][64] for m in sorted(series)]
    assert not any("SGLang" in label or "ReplaySSM" in label for label in labels)
    fp32 = module.build(rows, "synthetic")
    assert not any("FlashInfer" in line.get_label() for line in fp32.axes[0].lines)


def test_spec_verify_draws_plain_launches_only():
    module = importlib.import_module("spec_verify")
    rows = [r for r in synthetic_spec_verify_rows() if r["status"] == "ok"]
    plain = [dict(r, launch="plain") for r in rows]
    pdl = [dict(r, launch="pdl", verify_accept_us_median="1") for r in rows]
    drawn = module.build(plain + pdl, "synthetic")
    alone = module.build(rows, "synthetic")  # no launch column: read as plain
    for got, want in zip(drawn.axes, alone.axes):
        assert [list(line.get_ydata()) for line in got.lines] == [list(line.get_ydata()) for line in want.lines]
    with pytest.raises(SystemExit) as e:
        module.build(pdl, "synthetic")
    assert e.value.code == 2


def test_short_context_lines_and_memory(tmp_path):
    module = importlib.import_module("short_context")
    rows = [r for r in synthetic_short_context_rows() if r["status"] == "ok"]
    fig = module.build(rows, "synthetic")
    top, mem = fig.axes[0], fig.axes[1]
    assert top.get_xscale() == "log" and mem.get_xscale() == "log"
    assert "(us)" in top.get_ylabel() and "(MiB)" in mem.get_ylabel() and "(tokens)" in mem.get_xlabel()
    lines = {line.get_label(): line for line in top.lines}
    for batch in (64, 256):
        rec = lines[f"recurrent, batch {batch}"]
        assert list(rec.get_ydata()) == [pytest.approx(sc_recurrent_us(batch))] * 2
        target = lines[f"0.5 x recurrent, batch {batch}"]
        assert list(target.get_ydata()) == [pytest.approx(0.5 * sc_recurrent_us(batch))] * 2
    for b in (4, 16):
        kv = next(c for c in top.containers if c.get_label() == f"KVBuffer B = {b}, batch 64")
        xs = list(kv.lines[0].get_xdata())
        assert xs == [1, 2, 4, 8, 16, 32, 64]
        assert list(kv.lines[0].get_ydata()) == [pytest.approx(sc_kvbuffer_us(64, b, x), abs=1e-4) for x in xs]
    # Stateless points are filled circles, stateful ones open squares: B = 16 has L = 1, 2, 4, 8 stateless and
    # L = 16, 32, 64 stateful at each batch.
    colour = style.buffer_colour(16)
    markers = [line for line in top.lines
               if line.get_linestyle() == "None" and line.get_marker() in ("o", "s") and line.get_color() == colour]
    circles = [m for m in markers if m.get_marker() == "o"]
    squares = [m for m in markers if m.get_marker() == "s"]
    assert sorted(len(m.get_xdata()) for m in circles) == [4, 4]
    assert sorted(len(m.get_xdata()) for m in squares) == [3, 3]
    assert all(m.get_markerfacecolor() == "white" for m in squares)

    # Memory does not depend on the batch: one line per B, plus recurrent.
    mem_lines = {line.get_label(): line for line in mem.lines if not line.get_label().startswith("_")}
    assert set(mem_lines) == {"recurrent", "KVBuffer B = 4", "KVBuffer B = 16"}
    assert list(mem_lines["recurrent"].get_ydata()) == [pytest.approx(SC_STATE_BYTES / 2**20)] * 2
    b4 = mem_lines["KVBuffer B = 4"]
    buffer = SC_LAYERS * 3 * SC_ENTRY_BYTES
    expected = [(buffer + (0 if x < 4 else SC_STATE_BYTES)) / 2**20 for x in b4.get_xdata()]
    assert list(b4.get_ydata()) == pytest.approx(expected)


@pytest.mark.parametrize("value", ["maybe", "True", " true"])
def test_short_context_rejects_a_bad_stateless_value(tmp_path, capsys, value):
    # As kvb's validation does (the shared rule of plots/result_csv.py): only true and false as kvb writes them.
    rows = synthetic_short_context_rows()
    rows[3]["stateless"] = value
    path = write_csv(tmp_path / "short_context.csv", rows)
    module = importlib.import_module("short_context")
    with pytest.raises(SystemExit) as e:
        module.main(["--csv", str(path), "--out-dir", str(tmp_path / "figures")])
    assert e.value.code == 2
    assert f": stateless = '{value}' (allowed: true or false; empty where the point failed)" in capsys.readouterr().err
    assert not (tmp_path / "figures").exists()


def test_buffer_form_ratio_and_reference_line():
    module = importlib.import_module("buffer_form")
    rows = [r for r in synthetic_buffer_form_rows() if r["status"] == "ok"]
    fig = module.build(rows, "synthetic")
    top, ratio = fig.axes[0], fig.axes[1]
    assert top.get_xscale() == "log" and "(us)" in top.get_ylabel() and "(tokens)" in ratio.get_xlabel()
    assert {c.get_label() for c in top.containers} == {
        f"{form} form, batch {b}" for form in ("delta", "raw") for b in (64, 256)}
    lines = {line.get_label(): line for line in ratio.lines}
    for batch in (64, 256):
        line = lines[f"batch {batch}"]
        assert list(line.get_xdata()) == [2, 4, 8, 16]
        expected = [1.1 + 0.02 * b for b in (2, 4, 8, 16)]
        assert list(line.get_ydata()) == [pytest.approx(e, rel=1e-4) for e in expected]
    assert list(lines["1.25x"].get_ydata()) == [1.25, 1.25]
    assert ratio.get_ylim()[1] > 1.25


def test_buffer_form_needs_both_forms(tmp_path, capsys):
    rows = [r for r in synthetic_buffer_form_rows() if r["buffer_form"] == "delta"]
    path = write_csv(tmp_path / "buffer_form.csv", rows)
    module = importlib.import_module("buffer_form")
    with pytest.raises(SystemExit) as e:
        module.main(["--csv", str(path), "--out-dir", str(tmp_path / "figures")])
    assert e.value.code == 2
    assert "no kvbuffer rows with buffer_form raw" in capsys.readouterr().err


def _with_launch(rows, launch: str) -> list[dict[str, str]]:
    """`rows` with a launch column after phase holding `launch` (empty on a peer row, which has no launch)."""
    header = list(rows[0])
    header.insert(header.index("phase") + 1, "launch")
    return [{c: r.get(c, "" if r["variant"] in decode_data.PEERS else launch) for c in header} for r in rows]


def test_buffer_form_draws_plain_launches_only(tmp_path):
    """A buffer_form CSV holding launch = pdl rows beside the plain ones: the figure draws the plain rows alone, as
    from a CSV of those only (one point per form, batch and B; the recurrent line a plain launch's), not two points at
    one B and the recurrent latency of whichever row came last."""
    module = importlib.import_module("buffer_form")
    ok = [r for r in synthetic_buffer_form_rows() if r["status"] == "ok"]
    recurrent = [dict(ok[0], variant="recurrent", batch=batch, buffer_size="", buffer_form="", phase="",
                      latency_us_median=f"{us}", latency_us_p10=f"{us * 0.97}", latency_us_p90=f"{us * 1.05}")
                 for batch, us in (("64", 40.0), ("256", 150.0))]
    plain = _with_launch(ok + recurrent, "plain")
    pdl = [dict(r, latency_us_median=f"{float(r['latency_us_median']) * 0.5:.4f}",
                latency_us_p10=f"{float(r['latency_us_p10']) * 0.5:.4f}",
                latency_us_p90=f"{float(r['latency_us_p90']) * 0.5:.4f}") for r in _with_launch(ok + recurrent, "pdl")]
    path = write_csv(tmp_path / "buffer_form.csv", plain + pdl)
    rows = style.read_csv(path, module.REQUIRED_COLUMNS, module.KIND)
    got = module.split_rows(rows, path, "staggered")
    assert got == module.split_rows([r for r in rows if r["launch"] == "plain"], path, "staggered")
    assert got[0] == {64: 40.0, 256: 150.0}
    assert all(len({b for b, *_ in pts}) == len(pts) == 4 for pts in got[1].values())
    fig = module.build(rows, path)
    assert [line.get_ydata()[0] for line in fig.axes[0].lines if line.get_label().startswith("recurrent")] == [40.0,
                                                                                                               150.0]
    assert "plain launches" in fig.texts[0].get_text()
    style.plt.close(fig)

    only_pdl = write_csv(tmp_path / "pdl.csv", pdl)
    out = tmp_path / "figures"
    r = run_script("buffer_form", "--csv", str(only_pdl), "--out-dir", str(out))
    assert r.returncode == 2, r.stderr
    assert r.stderr == result_csv.one_line(f"CSV {only_pdl} has no kvbuffer rows with buffer_form delta, phase "
                                           "staggered and launch plain (the figure draws plain launches)") + "\n"
    assert not out.exists()


def _with_tile(rows, tile: str) -> list[dict[str, str]]:
    """`rows` with a tile column after phase holding `tile` (empty on a peer row, which has no tile)."""
    header = list(rows[0])
    header.insert(header.index("phase") + 1, "tile")
    return [{c: r.get(c, "" if r["variant"] in decode_data.PEERS else tile) for c in header} for r in rows]


@pytest.mark.parametrize("column,values", [("tile", ("auto", "64x128")), ("seed", ("0", "7"))])
@pytest.mark.parametrize("script", ["decode_latency", "decode_efficiency", "decode_bytes", "buffer_form"])
def test_a_point_measured_under_several_tiles_or_seeds_is_refused(script, column, values, tmp_path):
    """A decode CSV holding each KVBuffer point twice, under two tiles (or seeds), which no option of the figures
    selects: exit 2 with one line naming the CSV, the column and its values, nothing written, where both rows fell
    into one series (two points at one batch, or at one B, of one line)."""
    make = synthetic_buffer_form_rows if script == "buffer_form" else synthetic_decode_rows
    rows = _with_tile([r for r in make() if r["status"] == "ok"], values[0] if column == "tile" else "auto")
    twice = rows + [dict(r, **{column: values[1]}) for r in rows if r["variant"] == "kvbuffer"]
    path = write_csv(tmp_path / "twice.csv", twice)
    _expect_csv_refused(script, path, f"column {column} holds several values ({', '.join(values)}); plot one at a "
                                      "time", tmp_path)


def test_series_of_one_tile_and_seed_each_are_drawn():
    """The check is per series: recurrent and KVBuffer measured under different tiles (or a peer under another seed)
    are different lines and are drawn; a peer measured under two seeds is refused as the KVBuffer series are."""
    import decode_latency

    rows = anchor_shape_rows(True)
    mixed = [dict(r, tile="auto") if r["variant"] == "recurrent" else dict(r, seed="7") if r["variant"] in
             decode_data.PEERS else r for r in _with_tile(rows, "64x128")]
    fig = decode_latency.build(mixed, "synthetic")
    assert "KVBuffer B = 2" in fig.axes[0].get_legend_handles_labels()[1]
    style.plt.close(fig)
    fla = [r for r in rows if r["variant"] == "fla_recurrent"]
    with pytest.raises(SystemExit) as e:
        decode_data.peer_series(fla + [dict(r, seed="7") for r in fla], "synthetic")
    assert e.value.code == 2


@pytest.mark.parametrize("column,values", [("tile", ("auto", "64x128")), ("seed", ("0", "7"))])
def test_the_best_pdl_line_over_several_tiles_or_seeds_is_refused(column, values, tmp_path):
    """decode_latency's PDL line (the fastest KVBuffer B <= 32 per batch of the launch = pdl rows) on a CSV holding
    each pdl point twice, under two tiles (or seeds): exit 2 with one line naming the CSV, the column and its values,
    nothing written, where its minimum was taken over both; pdl rows of one tile and seed, other than the plain
    rows', are drawn."""
    import decode_latency

    rows = _with_launch(_with_tile([r for r in synthetic_decode_rows() if r["status"] == "ok"],
                                   values[0] if column == "tile" else "auto"), "plain")
    pdl = [dict(r, launch="pdl") for r in rows if r["variant"] == "kvbuffer"]
    other = [dict(r, **{column: values[1]}) for r in pdl]
    path = write_csv(tmp_path / "twice.csv", rows + pdl + other)
    _expect_csv_refused("decode_latency", path, f"column {column} holds several values ({', '.join(values)}); plot "
                                                "one at a time", tmp_path)
    fig = decode_latency.build(rows + other, "synthetic")
    assert "KVBuffer, best B <= 32,\nPDL launches" in fig.axes[0].get_legend_handles_labels()[1]
    style.plt.close(fig)


@pytest.mark.parametrize("script,column,values", [
    ("spec_verify", "tile", ("auto", "64x128")), ("spec_verify", "seed", ("0", "7")),
    ("short_context", "seed", ("0", "7")), ("accuracy", "seed", ("0", "7"))])
def test_a_line_of_several_tiles_or_seeds_is_refused_by_the_other_figures(script, column, values, tmp_path):
    """A spec_verify, short_context or accuracy CSV holding each KVBuffer point twice, under two tiles (spec_verify's
    CSV has the column) or seeds: exit 2 with one line naming the CSV, the column and its values, nothing written,
    where both rows fell into one line (two points at one m or one L, or two lines under one label)."""
    rows = [r for r in SYNTHETIC[f"{script}.csv"]() if r["status"] == "ok"]
    if script == "spec_verify":
        rows = _with_tile(rows, "auto")
    twice = rows + [dict(r, **{column: values[1]}) for r in rows if r["variant"].startswith("kvbuffer")]
    path = write_csv(tmp_path / "twice.csv", twice)
    _expect_csv_refused(script, path, f"column {column} holds several values ({', '.join(values)}); plot one at a "
                                      "time", tmp_path)


@pytest.mark.parametrize("script", ["spec_verify", "short_context", "accuracy"])
def test_lines_of_one_tile_and_seed_each_are_drawn_by_the_other_figures(script):
    """The check is per line: recurrent measured under another tile (spec_verify) or seed than KVBuffer is drawn, as
    the decode figures draw it."""
    module = importlib.import_module(script)
    rows = [r for r in SYNTHETIC[f"{script}.csv"]() if r["status"] == "ok"]
    if script == "spec_verify":
        rows = [dict(r, tile="auto") if r["variant"] == "recurrent_verify" else r for r in _with_tile(rows, "64x128")]
    fig = module.build([dict(r, seed="7") if r["variant"].startswith("recurrent") else r for r in rows], "synthetic")
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert any(label.startswith("recurrent") for label in labels), labels
    assert any(label.startswith("KVBuffer") for label in labels), labels
    style.plt.close(fig)


def _shorter_run(row: dict[str, str], tokens: int) -> dict[str, str]:
    """`row` as a run of `tokens` tokens: its errors past them empty, as the harness leaves them."""
    row = dict(row, tokens=str(tokens), tokens_run=str(tokens))
    for t in ACCURACY_CHECKPOINTS:
        if t > tokens:
            row[f"state_err_at_{t}"] = row[f"o_err_at_{t}"] = ""
    row["state_err_last"], row["o_err_last"] = row[f"state_err_at_{tokens}"], row[f"o_err_at_{tokens}"]
    return row


@pytest.mark.parametrize("column,values", [("batch", ("2", "8")), ("tokens", ("4096", "512"))])
def test_accuracy_refuses_a_line_of_several_batches_or_token_counts(column, values, tmp_path):
    """An accuracy CSV holding each KVBuffer line twice, at two batches or two token counts (key columns no option
    selects): exit 2 with one line naming the CSV, the column and its values, nothing written, where both rows were
    drawn as two lines under one label."""
    rows = [r for r in synthetic_accuracy_rows() if r["status"] == "ok"]
    other = [dict(r, batch=values[1]) if column == "batch" else _shorter_run(r, int(values[1]))
             for r in rows if r["variant"] == "kvbuffer"]
    path = write_csv(tmp_path / "twice.csv", rows + other)
    _expect_csv_refused("accuracy", path, f"column {column} holds several values ({', '.join(values)}); plot one at "
                                          "a time", tmp_path)


def test_accuracy_refuses_rows_of_several_key_head_counts(tmp_path):
    """An accuracy CSV whose KVBuffer rows ran with other key heads than recurrent's (one model shape a figure):
    exit 2 with one line naming the CSV, heads_qk and its values, nothing written, where both were drawn as one
    model's lines."""
    rows = [r for r in synthetic_accuracy_rows() if r["status"] == "ok"]
    rows = [dict(r, heads_qk="4") if r["variant"] == "kvbuffer" else r for r in rows]
    path = write_csv(tmp_path / "two_models.csv", rows)
    _expect_csv_refused("accuracy", path, "column heads_qk holds several values (2, 4); plot one at a time", tmp_path)


@pytest.mark.parametrize("column,value", [("heads_qk", "8"), ("heads_v", "8"), ("layers", "2")])
@pytest.mark.parametrize("script", ["decode_latency", "decode_efficiency", "decode_bytes", "buffer_form", "spec_verify",
                                    "short_context", "capacity"])
def test_rows_of_several_models_are_refused(script, column, value, tmp_path):
    """A CSV whose KVBuffer rows ran another model (key heads, value heads or layers) than its other rows: exit 2 with
    one line naming the CSV, the column and its values, nothing written, where the two models' rows were drawn as one
    model's (decode_efficiency and decode_bytes put both into one series: two points at one batch)."""
    make = {"decode_efficiency": synthetic_decode_rows, "decode_bytes": synthetic_decode_rows,
            "buffer_form": synthetic_buffer_form_rows}.get(script) or SYNTHETIC[f"{script}.csv"]
    rows = [r for r in make() if r["status"] == "ok"]
    if script == "buffer_form":  # KVBuffer rows only: the second model is the raw form's
        other = [dict(r, **{column: value}) if r["buffer_form"] == "raw" else r for r in rows]
    else:
        other = [dict(r, **{column: value}) if r["variant"].startswith("kvbuffer") else r for r in rows]
    first = rows[0][column]
    path = write_csv(tmp_path / "two_models.csv", other)
    _expect_csv_refused(script, path, f"column {column} holds several values ({first}, {value}); plot one at a time",
                        tmp_path)


def test_only_the_anchors_model_gets_the_anchors():
    """The anchors were measured on Qwen3-Next's shape at tensor parallelism 1, its 16 key heads included: rows of
    that shape with other key heads are not that model (their keys' bytes differ) and get no anchor."""
    row = {"heads_qk": "16", "heads_v": "32", "head_dim_k": "128", "head_dim_v": "128", "state_dtype": "fp32"}
    assert decode_data.is_qwen3_next_tp1(row, "synthetic")
    assert not decode_data.is_qwen3_next_tp1(dict(row, heads_qk="32"), "synthetic")
    assert not decode_data.is_qwen3_next_tp1(dict(row, heads_v="16"), "synthetic")
    assert not decode_data.is_qwen3_next_tp1(row, "synthetic", "bf16")


def test_accuracy_lines_of_one_batch_and_token_count_each_are_drawn():
    """The check is per line: recurrent run at another batch and over fewer tokens than KVBuffer is drawn."""
    module = importlib.import_module("accuracy")
    rows = [r for r in synthetic_accuracy_rows() if r["status"] == "ok"]
    rows = [_shorter_run(dict(r, batch="8"), 512) if r["variant"] == "recurrent" else r for r in rows]
    fig = module.build(rows, "synthetic")
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert sorted(labels) == sorted(["recurrent, fp32 states", "recurrent, bf16 states",
                                     "KVBuffer B = 16, fp32 states", "KVBuffer B = 16, bf16 states"]), labels
    style.plt.close(fig)


def test_make_all_skip_names_the_command(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    for name in ("decode_latency.csv", "spec_verify.csv", "capacity.csv"):
        write_csv(results / name, SYNTHETIC[name]())
    r = run_script("make_all", "--results-dir", str(results), "--out-dir", str(tmp_path / "figures"))
    assert r.returncode == 0, r.stderr
    assert f"skipped {3 + len(make_all.STATE_DTYPE_FIGURES)}:" in r.stdout
    assert "short_context.csv not found; kvb sweep --config experiments/short_context.toml writes it" in r.stdout
    assert ("decode_state_dtype.csv not found; kvb sweep --config experiments/decode_state_dtype.toml writes it"
            in r.stdout)
    assert "accuracy.csv not found; kvb sweep --config experiments/accuracy.toml writes it" in r.stdout
    assert "buffer_form.csv not found; kvb sweep --config experiments/buffer_form.toml writes it" in r.stdout


def anchor_shape_rows(with_fla: bool) -> list[dict[str, str]]:
    """The ok rows of synthetic_decode_rows at the anchors' shape (HV = 32, K = V = 128), plus, with_fla, rows of the
    fla_recurrent peer at every batch, as the peer runner's rows read (no buffer size, phase, launch or DRAM bytes)."""
    rows = [dict(r, heads_qk="16", heads_v="32", head_dim_k="128", head_dim_v="128")
            for r in synthetic_decode_rows() if r["status"] == "ok"]
    if with_fla:
        for r in [r for r in rows if r["variant"] == "recurrent"]:
            us = float(r["latency_us_median"]) * 1.3
            rows.append(dict(r, variant="fla_recurrent", latency_us_median=f"{us:.4f}",
                             latency_us_p10=f"{us * 0.98:.4f}", latency_us_p90=f"{us * 1.03:.4f}",
                             latency_over_floor=f"{us / float(r['floor_us']):.6g}", dram_read_bytes="",
                             dram_write_bytes="", measured_over_model="", package="fla-core", package_version="0.6.0"))
    return rows


def test_peer_series_labels_each_measured_peer_with_its_version():
    series = decode_data.peer_series(anchor_shape_rows(True), "synthetic")
    assert [(s.variant, s.label) for s in series] == [("fla_recurrent", "fla Triton recurrent (measured, fla-core "
                                                                        "0.6.0)")]
    assert series[0].batches("synthetic") == [1.0, 4.0, 16.0]
    assert decode_data.peer_series(anchor_shape_rows(False), "synthetic") == []
    # This project's series leave the peers out.
    assert [s.label for s in decode_data.decode_series(anchor_shape_rows(True), "synthetic")] == [
        "recurrent", "KVBuffer B = 2", "KVBuffer B = 8"]


def test_decode_latency_draws_measured_peers_and_the_anchors_of_the_others():
    import decode_latency

    def labels(rows):
        fig = decode_latency.build(rows, "synthetic")
        return fig.axes[0].get_legend_handles_labels()[1]

    live = labels(anchor_shape_rows(True))
    assert "fla Triton recurrent\n(measured, fla-core 0.6.0)" in live
    assert anchors.FLA_LABEL.replace(" (", "\n(") not in live
    assert anchors.FLASHINFER_LABEL.replace(" (", "\n(") in live  # FlashInfer not measured: its anchor
    recorded = labels(anchor_shape_rows(False))
    assert anchors.FLA_LABEL.replace(" (", "\n(") in recorded
    assert anchors.FLASHINFER_LABEL.replace(" (", "\n(") in recorded
    assert not any("measured" in label for label in recorded)


def test_decode_figures_take_peer_rows(tmp_path):
    csv_path = write_csv(tmp_path / "decode_latency.csv", anchor_shape_rows(True))
    for script in ("decode_latency", "decode_efficiency", "decode_bytes"):
        r = run_script(script, "--csv", str(csv_path), "--out-dir", str(tmp_path / "figures"))
        assert r.returncode == 0, r.stderr
        assert_figure(tmp_path / "figures", script)


def test_decode_bytes_counts_only_the_points_it_would_draw_as_left_out():
    """decode_bytes' footnote counts the rows left out for want of DRAM counts among the points it draws (plain
    recurrent and KVBuffer launches, every phase), not the peer rows (which never have DRAM counts) or the pdl ones,
    which it would not draw anyway."""
    import decode_bytes

    rows = _with_launch(anchor_shape_rows(True), "plain")
    plain = [r for r in rows if r["launch"] == "plain"]
    peers = [r for r in rows if r["variant"] in decode_data.PEERS]
    assert peers and all(not r["dram_read_bytes"] for r in peers)
    pdl = [dict(r, launch="pdl", dram_read_bytes="", dram_write_bytes="") for r in plain]
    # The first recurrent row and the aligned KVBuffer row (the last) without DRAM counts.
    unmeasured = [dict(r, dram_read_bytes="", dram_write_bytes="") for r in (plain[0], plain[-1])]
    measured = plain[1:-1]

    def footnote_and_points(rows):
        fig = decode_bytes.build(rows, "synthetic")
        note = fig.texts[0].get_text().split("\n")[0]
        points = sum(len(line.get_xdata()) for line in fig.axes[0].lines[:-1])
        style.plt.close(fig)
        return note, points

    note, points = footnote_and_points(measured + unmeasured + peers + pdl)
    assert note.endswith("; 2 point(s) without DRAM counts left out")
    assert points == len(measured)
    assert footnote_and_points(measured + peers + pdl) == (note.removesuffix("; 2 point(s) without DRAM counts left "
                                                                             "out"), points)


def test_decode_figures_draw_one_state_dtype_at_a_time(tmp_path):
    """A decode CSV with fp32 and bf16 rows (the state_dtype axis): the figures draw the fp32 rows by default and the
    bf16 ones with --state-dtype bf16; a dtype the CSV lacks exits 2 naming it."""
    rows = SYNTHETIC["decode_latency.csv"]()
    bf16 = [dict(r, state_dtype="bf16") for r in rows if r["status"] == "ok"]
    csv_path = write_csv(tmp_path / "decode_latency.csv", rows + bf16)
    for script in ("decode_latency", "decode_efficiency", "decode_bytes"):
        for dtype in ("fp32", "bf16"):
            out = tmp_path / dtype
            r = run_script(script, "--csv", str(csv_path), "--out-dir", str(out), "--state-dtype", dtype)
            assert r.returncode == 0, r.stderr
            assert_figure(out, script if dtype == "fp32" else f"{script}_{dtype}")  # never over the fp32 figure
    only_fp32 = write_csv(tmp_path / "fp32_only.csv", rows)
    r = run_script("decode_latency", "--csv", str(only_fp32), "--out-dir", str(tmp_path / "x"), "--state-dtype",
                   "bf16")
    assert r.returncode == 2
    assert "state_dtype bf16" in r.stderr


def test_spec_verify_figure_draws_one_state_dtype_at_a_time(tmp_path):
    """A spec_verify CSV with fp32 and bf16 rows (the state_dtype axis; bf16 for kvbuffer_verify only): the figure
    draws the fp32 rows by default, the same figure as from the fp32 rows alone, and the bf16 ones with --state-dtype
    bf16; both dtypes at once are refused rather than drawn as one series."""
    rows = synthetic_spec_verify_rows()
    bf16 = [dict(r, state_dtype="bf16") for r in rows if r["status"] == "ok" and r["variant"] == "kvbuffer_verify"]
    mixed = write_csv(tmp_path / "spec_verify.csv", rows + bf16)
    for dtype in ("fp32", "bf16"):
        out = tmp_path / dtype
        r = run_script("spec_verify", "--csv", str(mixed), "--out-dir", str(out), "--state-dtype", dtype)
        assert r.returncode == 0, r.stderr
        assert_figure(out, "spec_verify" if dtype == "fp32" else f"spec_verify_{dtype}")
    module = importlib.import_module("spec_verify")
    ok = [r for r in rows + bf16 if r["status"] == "ok"]
    with pytest.raises(SystemExit) as e:  # both dtypes at once: refused, never drawn as one series
        module.build(ok, mixed)
    assert e.value.code == 2
    drawn = module.build(style.rows_of_state_dtype(ok, "fp32", mixed), mixed)
    alone = module.build([r for r in rows if r["status"] == "ok"], mixed)
    for got, want in zip(drawn.axes, alone.axes):
        assert [list(line.get_ydata()) for line in got.lines] == [list(line.get_ydata()) for line in want.lines]


# ------------------------------------------------------------------------------------- kvb's rules, atomic figures

CASES_DIR = REPO_ROOT / "tests" / "data" / "csv"


def _cases():
    with (CASES_DIR / "cases.csv").open(newline="") as f:
        return [pytest.param(r["file"], r["expect"], id=r["file"]) for r in csv.DictReader(f)]


@pytest.mark.parametrize("name,expect", _cases())
def test_shared_csv_cases_as_kvb_judges_them(name, expect):
    # The same files and expected messages as kvb's CsvValidation.SharedCasesAreAcceptedOrRefusedNamingFileLineAndColumn.
    path = CASES_DIR / "cases" / name
    if expect == "valid":
        assert result_csv.read(path)
        return
    with pytest.raises(result_csv.CsvError) as e:
        result_csv.read(path)
    assert f"{path}{expect}" in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("text,expect", [
    # A line of only "" is a blank line (kvb cannot tell it from one), wherever it is after the header.
    ('a,b\n1,2\n""\n3,4\n', [["1", "2"], ["3", "4"]]),
    ('a,b\n1,2\n""\r\n', [["1", "2"]]),
    ('""\na,b\n1,2\n', ":2: malformed CSV: 2 fields, the header has 1"),
    # A carriage return without a line feed after it is refused outside quotes; inside them it is the field's.
    ("a,b\n1,2\r3,4\n", ":2: malformed CSV: a carriage return without a line feed"),
    ("a,b\r1,2\r", ":1: malformed CSV: a carriage return without a line feed"),
    ("a,b\n1,x\ry\n", ":2: malformed CSV: a carriage return without a line feed"),
    ('a,b\n1,"580"\rx\n', ":2: malformed CSV: a carriage return without a line feed"),
    ('a,b\n1,"x\ry"\n', [["1", "x\ry"]]),
    ("a,b\r\n1,2\r\n", [["1", "2"]]),
    # A quote opens a field or closes it; inside an unquoted field it is refused.
    ('a,b\n1,2\n3,x"y\n', ":3: malformed CSV: quote inside an unquoted field"),
    ('a,b\n1,x"\n', ":2: malformed CSV: quote inside an unquoted field"),
    ('a,b\n1, "x"\n', ":2: malformed CSV: quote inside an unquoted field"),
    ('a,b\n1,"x"y\n', ":2: malformed CSV: text after a closing quote"),
    ('a,b\n1,"x\ny"",z"\n', [["1", 'x\ny",z']]),
    ('a,b\n1,"x\ny\n2,3\n', ":2: malformed CSV: unterminated quoted field"),
    ('a,b\n1,2\n"', ":3: malformed CSV: unterminated quoted field"),
], ids=["quoted_empty_line", "quoted_empty_last_line", "quoted_empty_first_line", "bare_cr_line_end",
        "bare_cr_only", "bare_cr_in_field", "bare_cr_after_closing_quote", "cr_in_quoted_field", "crlf", "quote_in_field", "quote_ending_field", "quote_after_space",
        "text_after_closing_quote", "quoted_line_break_and_quote", "unterminated", "lone_quote_at_end"])
def test_parse_judges_as_kvbs_parse_csv(text, expect):
    """result_csv.parse accepts and refuses what kvb's parse_csv (harness/sweep/csv.cpp) does, at the same line: a
    line of only "" is blank, a bare carriage return outside quotes is refused, a quote inside an unquoted field is
    refused."""
    if isinstance(expect, list):
        header, rows, _ = result_csv.parse(text, "t.csv")
        assert header == ["a", "b"]
        assert rows == expect
        return
    with pytest.raises(result_csv.CsvError) as e:
        result_csv.parse(text, "t.csv")
    assert str(e.value) == f"t.csv{expect}"


def test_every_case_file_is_listed():
    listed = {p.values[0] for p in _cases()}
    assert listed == {p.name for p in (CASES_DIR / "cases").glob("*.csv")}


def test_committed_results_pass_the_rules():
    for path in RESULTS_DIR.glob("*.csv"):
        if path.name != "anchors.csv":
            assert result_csv.read(path), path


def test_entry_dtypes_follow_delta_dtype_and_a_bad_one_is_named(tmp_path):
    assert result_csv.entry_dtypes_of("kvbuffer_verify", "delta", "bf16") == "k=bf16 u=bf16 g=fp32"
    assert result_csv.entry_dtypes_of("kvbuffer_verify", "delta", "") == "k=bf16 u=fp32 g=fp32"
    assert result_csv.entry_dtypes_of("kvbuffer_verify", "raw", "bf16") == "k=bf16 v=bf16 a=bf16 b=bf16"
    text = (RESULTS_DIR / "spec_verify_bf16_deltas_h100.csv").read_text()
    at = text.index(",bf16,bf16,k=bf16 u=bf16 g=fp32,")  # delta_dtype, output_dtype, entry_dtypes of a bf16 row
    bad = tmp_path / "deltas.csv"
    bad.write_text(text[:at + 1] + "fp16" + text[at + 5:])
    with pytest.raises(result_csv.CsvError) as e:
        result_csv.read(bad)
    assert "delta_dtype" in str(e.value) and "entry_dtypes =" not in str(e.value)


def _cut(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 30])


def _set(column: str, value: str):
    def change(path: Path) -> None:
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
        next(r for r in rows if r["status"] == "ok")[column] = value
        write_csv(path, rows)
    return change


@pytest.mark.parametrize("fig", make_all.FIGURES, ids=FIGURE_IDS)
@pytest.mark.parametrize("spoil,needle", [
    (_cut, "malformed CSV: the last record has no line end"),
    (_set("gpu", "Another GPU"), "(allowed: one GPU per file)"),
], ids=["cut_mid_line", "two_gpus"])
def test_scripts_refuse_what_kvb_refuses(fig, spoil, needle, tmp_path):
    csv_path = write_csv(tmp_path / fig.csv, SYNTHETIC[fig.csv]())
    spoil(csv_path)
    r = run_script(fig.script, "--csv", str(csv_path), "--out-dir", str(tmp_path / "figures"))
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr
    assert not (tmp_path / "figures").exists()


@pytest.mark.parametrize("value", ["nan", "-300", "0", "inf"])
def test_latency_scripts_refuse_impossible_latencies(value, tmp_path):
    for fig in make_all.FIGURES:
        if fig.csv in ("capacity.csv", "accuracy.csv"):  # no latency columns
            continue
        csv_path = write_csv(tmp_path / fig.csv, SYNTHETIC[fig.csv]())
        column = "verify_accept_us_median" if fig.csv == "spec_verify.csv" else "latency_us_median"
        _set(column, value)(csv_path)
        r = run_script(fig.script, "--csv", str(csv_path), "--out-dir", str(tmp_path / "figures"))
        assert r.returncode == 2, (fig.script, r.stderr)
        assert f"{column} = '{value}'" in r.stderr
        assert not (tmp_path / "figures").exists()


@pytest.mark.parametrize("timestamp,valid", [
    ("2026-01-01T00:00:00Z", True), ("2026-12-31T23:59:59Z", True), ("0000-01-01T00:00:00Z", True),
    ("2024-02-29T12:00:00Z", True), ("2000-02-29T12:00:00Z", True), ("2026-04-30T00:00:00Z", True),
    ("2026-00-10T00:00:00Z", False), ("2026-13-01T00:00:00Z", False), ("2026-99-01T00:00:00Z", False),
    ("2026-01-00T00:00:00Z", False), ("2026-01-32T00:00:00Z", False), ("2026-04-31T00:00:00Z", False),
    ("2026-06-31T00:00:00Z", False), ("2026-09-31T00:00:00Z", False), ("2026-11-31T00:00:00Z", False),
    ("2026-02-29T00:00:00Z", False), ("1900-02-29T00:00:00Z", False), ("2024-02-30T00:00:00Z", False),
    ("2026-01-01T24:00:00Z", False), ("2026-01-01T25:00:00Z", False), ("2026-01-01T00:60:00Z", False),
    ("2026-01-01T00:00:60Z", False), ("2026-01-01T00:00:99Z", False),
])
def test_timestamps_are_times_that_exist(timestamp, valid, tmp_path):
    """A timestamp of the right form is refused when its month, day (for its month and year), hour, minute or second
    is out of range, with the message of a timestamp of the wrong form."""
    rows = synthetic_decode_rows()
    rows[1]["timestamp"] = timestamp
    path = write_csv(tmp_path / "decode_latency.csv", rows)
    if valid:
        assert result_csv.read(path)
        return
    with pytest.raises(result_csv.CsvError) as e:
        result_csv.read(path)
    assert str(e.value) == (f"{path}:3: timestamp = '{timestamp}' (allowed: a UTC time as YYYY-MM-DDTHH:MM:SSZ, or "
                            "empty)")


def test_every_error_is_one_line_with_its_line_breaks_escaped(tmp_path):
    """A line break in a quoted cell, a column name or a path is written \\n (a carriage return \\r) in the error, as
    kvb writes it, so that every error stays one line: the CSV reader's, a figure script's own (style.fail) and the
    command line's."""
    rows = synthetic_decode_rows()
    rows[2]["gpu"] = "Synthetic\nGPU X2"
    path = write_csv(tmp_path / "decode_latency.csv", rows)
    r = run_script("decode_latency", "--csv", str(path), "--out-dir", str(tmp_path / "figures"))
    assert r.returncode == 2, r.stderr
    assert r.stderr == result_csv.one_line(f"{path}:4: gpu 'Synthetic\\nGPU X2' differs from 'Synthetic GPU X1' on "
                                           "line 2 (allowed: one GPU per file)") + "\n"
    assert not (tmp_path / "figures").exists()

    rows = synthetic_decode_rows()
    rows[2]["gpu"] = "Synthetic\u2028GPU\x0bX2\u0085\x1c\x1b"
    path = write_csv(tmp_path / "separators.csv", rows)
    r = run_script("decode_latency", "--csv", str(path), "--out-dir", str(tmp_path / "figures"))
    assert r.returncode == 2, r.stderr
    assert "gpu 'Synthetic\\u2028GPU\\x0bX2\\u0085\\x1c\\x1b' differs" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.endswith("\n"), r.stderr

    rows = synthetic_decode_rows()
    rows[0]["state_dtype"] = "fp\r\n32"
    path = write_csv(tmp_path / "dtype.csv", rows)
    with pytest.raises(result_csv.CsvError) as e:
        result_csv.read(path)
    assert str(e.value) == f"{path}:2: state_dtype = 'fp\\r\\n32' (allowed: fp32, bf16, or empty for fp32)"

    path = write_csv(tmp_path / "header.csv", [dict(r, **{"fla\nvour": "x"}) for r in synthetic_decode_rows()])
    with pytest.raises(result_csv.CsvError) as e:
        result_csv.read(path)
    assert "\n" not in str(e.value) and f"{path}:1: unknown column 'fla\\nvour'" in str(e.value)

    with pytest.raises(result_csv.CsvError) as e:
        result_csv.read(tmp_path / "two\nlines.csv")
    assert str(e.value) == f"{tmp_path}/two\\nlines.csv: no such file (allowed: a result CSV of kvb)"

    rows = synthetic_short_context_rows()
    rows[3]["stateless"] = "maybe\nnot"
    path = write_csv(tmp_path / "short_context.csv", rows)
    r = run_script("short_context", "--csv", str(path), "--out-dir", str(tmp_path / "figures"))
    assert r.returncode == 2, r.stderr
    assert r.stderr == result_csv.one_line(
        f"{path}:5: stateless = 'maybe\\nnot' (allowed: true or false; empty where the point failed)") + "\n"

    r = run_script("decode_latency", "--csv", str(path), "--no-such\nflag")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "--no-such\\nflag" in r.stderr, r.stderr


@pytest.mark.parametrize("digits", ["٦٤", "６４", "6٤", "۶۴"], ids=["arabic_indic", "full_width", "mixed", "persian"])
def test_digits_other_than_ascii_are_refused_as_kvb_refuses_them(digits, tmp_path, capsys):
    """A size, a latency or a count written in another script's digits (which Python's int() and float() would read
    as 64) is refused with the one-line message of any bad value, naming file, line and column; a figure's own
    number reading (style.num) refuses them too, and a script given such a file exits 2 writing nothing."""
    for column, allowed in (("batch", "a whole number >= 1"),
                            ("latency_us_median", "a finite number of microseconds > 0")):
        rows = synthetic_decode_rows()
        rows[0][column] = digits
        path = write_csv(tmp_path / f"{column}.csv", rows)
        with pytest.raises(result_csv.CsvError) as e:
            result_csv.read(path)
        assert str(e.value) == f"{path}:2: {column} = '{digits}' (allowed: {allowed})"
    rows = synthetic_capacity_rows()
    rows[0]["max_requests_model"] = digits
    path = write_csv(tmp_path / "capacity.csv", rows)
    with pytest.raises(result_csv.CsvError) as e:
        result_csv.read(path)
    assert str(e.value) == f"{path}:2: max_requests_model = '{digits}' (allowed: a whole number >= 0)"

    with pytest.raises(SystemExit) as e:
        style.num({"context_len": digits}, "context_len", "x.csv")
    assert e.value.code == 2
    assert capsys.readouterr().err.strip() == f"CSV x.csv column context_len: '{digits}' is not a number"
    assert style.num({"context_len": "64"}, "context_len", "x.csv") == 64.0

    rows = synthetic_decode_rows()
    rows[2]["batch"] = digits
    path = write_csv(tmp_path / "decode_latency.csv", rows)
    r = run_script("decode_latency", "--csv", str(path), "--out-dir", str(tmp_path / "figures"))
    assert r.returncode == 2, r.stderr
    assert r.stderr == result_csv.one_line(f"{path}:4: batch = '{digits}' (allowed: a whole number >= 1)") + "\n"
    assert not (tmp_path / "figures").exists()


def test_make_all_draws_the_bf16_figures_from_the_state_dtype_csvs(tmp_path):
    """The CSVs that hold both state dtypes give NAME_bf16 figures from their bf16 rows; fp32 rows alone are refused by
    the script, and make_all reports that figure failed while drawing the others."""
    results, out = tmp_path / "results", tmp_path / "figures"
    results.mkdir()
    synthetic = {"decode_state_dtype.csv": synthetic_decode_rows, "spec_verify_state_dtype.csv":
                 synthetic_spec_verify_rows}
    assert {f.csv for f in make_all.STATE_DTYPE_FIGURES} == set(synthetic)
    for name, make in synthetic.items():
        rows = make()
        write_csv(results / name, rows + [dict(r, state_dtype="bf16") for r in rows])
    r = run_script("make_all", "--results-dir", str(results), "--out-dir", str(out))
    assert r.returncode == 0, r.stderr
    assert f"made {len(make_all.STATE_DTYPE_FIGURES)} figure(s)" in r.stdout
    for fig in make_all.STATE_DTYPE_FIGURES:
        assert fig.name.endswith("_bf16")
        assert_figure(out, fig.name)
        assert not (out / f"{fig.script}.png").exists(), "an fp32 figure from a state-dtype CSV"

    write_csv(results / "spec_verify_state_dtype.csv", synthetic_spec_verify_rows())  # fp32 rows only
    r = run_script("make_all", "--results-dir", str(results), "--out-dir", str(out))
    assert r.returncode == 1
    assert "failed 1: spec_verify_bf16" in r.stderr
    assert "state_dtype bf16" in r.stderr


def test_make_all_takes_paths_that_begin_with_a_dash(tmp_path):
    """A --results-dir or --out-dir that begins with '-' (given as --out-dir=-figs) reaches the figure scripts as the
    path it is: every figure failed on "expected one argument", the path read as a flag."""
    (tmp_path / "-results").mkdir()
    write_csv(tmp_path / "-results" / "capacity.csv", synthetic_capacity_rows())
    r = subprocess.run([sys.executable, str(PLOTS_DIR / "make_all.py"), "--results-dir=-results", "--out-dir=-figs"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "made 1 figure(s): capacity" in r.stdout and r.stderr == ""
    assert_figure(tmp_path / "-figs", "capacity")


def test_make_all_names_the_figure_in_each_error_line(tmp_path):
    """The error lines of the figures make_all draws begin "FIGURE: ", as their warnings do: two bf16 figures refusing
    the one CSV they both read (no bf16 rows) wrote the same line twice, naming neither, above "failed 2: ..."."""
    results, out = tmp_path / "results", tmp_path / "figures"
    results.mkdir()
    path = write_csv(results / "decode_state_dtype.csv", synthetic_decode_rows())  # fp32 rows only
    r = run_script("make_all", "--results-dir", str(results), "--out-dir", str(out))
    assert r.returncode == 1, r.stderr
    refusal = (f"CSV {path} has no rows with status ok and state_dtype bf16 (allowed: --state-dtype fp32 or bf16, a "
               "value the CSV holds)")
    names = [f.name for f in make_all.STATE_DTYPE_FIGURES if f.csv == "decode_state_dtype.csv"]
    assert r.stderr.splitlines() == [result_csv.one_line(f"{name}: {refusal}") for name in names] + [
        f"failed {len(names)}: {', '.join(names)}"]
    assert not out.exists()


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
def test_make_all_names_the_figure_a_first_signal_waits_for(terminal, tmp_path):
    """The notice of a first SIGINT while make_all draws a figure names that figure, which it finishes before it
    stops; it is the first line on stderr, after a line feed only on a terminal, which has echoed ^C on the line
    (it began with a line feed everywhere, an empty line in a pipe or a file)."""
    results = tmp_path / "results"
    results.mkdir()
    write_csv(results / "capacity.csv", synthetic_capacity_rows())
    master, slave = os.openpty() if terminal else (None, None)
    try:
        p = _stopped_in_savefig([str(PLOTS_DIR / "make_all.py"), "--results-dir", str(results), "--out-dir",
                                 str(tmp_path / "figures")], stderr=slave if terminal else subprocess.PIPE)
        if terminal:
            os.close(slave)
        os.kill(p.pid, signal.SIGINT)
        os.kill(p.pid, signal.SIGCONT)
        stdout, err = p.communicate(timeout=120)
        if terminal:  # the terminal writes each line feed as \r\n; reading ends with EIO once the script is gone
            chunks = []
            with contextlib.suppress(OSError):
                while chunk := os.read(master, 4096):
                    chunks.append(chunk)
            err = b"".join(chunks).decode().replace("\r\n", "\n")
    finally:
        if terminal:
            os.close(master)
    assert p.returncode == 130, err
    notice = "capacity: SIGINT: stopping after this figure (send it again to stop at once)\n"
    assert err.startswith(("\n" if terminal else "") + notice), err
    assert "made 1 figure(s): capacity" in stdout


@pytest.mark.parametrize("script", ["decode_latency", "decode_efficiency"])
def test_decode_titles_name_bf16_states(script, tmp_path):
    module = importlib.import_module(script)
    path = tmp_path / "d.csv"
    rows = synthetic_decode_rows()
    for dtype, needle in (("fp32", None), ("bf16", ", bf16 states")):
        fig = module.build([dict(r, state_dtype=dtype) for r in rows if r["status"] == "ok"], path)
        title = fig.axes[0].get_title()
        assert (needle in title) if needle else ("states" not in title), title
        style.plt.close(fig)


def _all_paths(folder: Path) -> set[str]:
    return {os.path.join(d, n) for d, dirs, files in os.walk(folder) for n in dirs + files}


def _existing_folder_of_length(parent: Path, length: int) -> str:
    """A folder made under `parent` whose absolute path has `length` characters (more than PATH_MAX allows in one
    call, so it is made one name at a time)."""
    names, left = [], length - len(str(parent))
    while left > 0:
        size = min(200, left - 1)
        if left - (size + 1) == 1:  # the last name would have no character: one fewer here
            size -= 1
        names.append("d" * size)
        left -= size + 1
    fd = os.open(parent, os.O_RDONLY)
    try:
        for name in names:
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    path = os.path.join(str(parent), *names)
    assert len(path) == length
    return path


def test_paths_too_long_for_the_file_system_are_refused_in_one_line(tmp_path):
    """A --csv, --out-dir or --results-dir with a name over NAME_MAX bytes, or whose whole path (with the temporary
    file a figure is written through, or a CSV in the results folder) reaches PATH_MAX: exit 2 with one line naming
    the flag and the path (its first 72 characters and its length), no traceback, nothing written."""
    results = tmp_path / "results"
    results.mkdir()
    csv_path = write_csv(results / "capacity.csv", synthetic_capacity_rows())
    out = str(tmp_path / "out")
    long_name = str(tmp_path / "new" / ("n" * 300))
    deep = str(tmp_path / "new" / "/".join(["d" * 200] * 21))  # every name fits, the whole path does not
    full = _existing_folder_of_length(tmp_path, 4096 - len("/decode_latency.csv") + 2)  # fits; its CSVs do not
    name_reason, path_reason = "the name 'nnnnnnnn", "the path has "
    cases = [
        ("capacity", ["--csv", long_name + ".csv", "--out-dir", out], "", long_name + ".csv", name_reason),
        ("capacity", ["--csv", str(csv_path), "--out-dir", long_name], "--out-dir ", long_name, name_reason),
        ("capacity", ["--csv", str(csv_path), "--out-dir", deep], "--out-dir ", deep, path_reason),
        ("make_all", ["--results-dir", long_name, "--out-dir", out], "--results-dir ", long_name, name_reason),
        ("make_all", ["--results-dir", deep, "--out-dir", out], "--results-dir ", deep, path_reason),
        ("make_all", ["--results-dir", str(results), "--out-dir", long_name], "--out-dir ", long_name, name_reason),
        ("make_all", ["--results-dir", str(results), "--out-dir", deep], "--out-dir ", deep, path_reason),
        ("make_all", ["--results-dir", full, "--out-dir", out], "", f"{full}/decode_latency.csv", path_reason),
    ]
    before = _all_paths(tmp_path)
    for script, args, flag, path, reason in cases:
        r = run_script(script, *args)
        assert r.returncode == 2, (args, r.stderr)
        assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
        assert r.stderr.startswith(f"{flag}{path[:72]}... ({len(path)} characters): {reason}"), r.stderr
        assert r.stdout == ""
        assert _all_paths(tmp_path) == before, "nothing may be written"


@pytest.mark.parametrize("script,flag,message", [
    ("decode_latency", "--csv", "--csv: empty value (allowed: a result CSV of kvb such as results/decode_latency.csv)"),
    ("decode_latency", "--out-dir", "--out-dir: empty value (allowed: a folder, or a path to make one at)"),
    ("make_all", "--results-dir", "--results-dir: empty value (allowed: the folder of the result CSVs, such as "
                                  "results)"),
    ("make_all", "--out-dir", "--out-dir: empty value (allowed: a folder, or a path to make one at)"),
])
def test_an_empty_path_flag_is_refused_in_one_line(script, flag, message, tmp_path):
    """An empty --csv, --out-dir or --results-dir exits 2 naming the flag, as kvb refuses an empty value, instead of
    reading or writing the current folder."""
    results = tmp_path / "results"
    results.mkdir()
    write_csv(results / "decode_latency.csv", synthetic_decode_rows())
    work = tmp_path / "work"  # the current folder, which an empty path would name
    work.mkdir()
    args = ({"--csv": str(results / "decode_latency.csv"), "--out-dir": str(tmp_path / "figures")}
            if script != "make_all" else {"--results-dir": str(results), "--out-dir": str(tmp_path / "figures")})
    args[flag] = ""
    before = _all_paths(tmp_path)
    r = subprocess.run([sys.executable, str(PLOTS_DIR / f"{script}.py"), *(x for kv in args.items() for x in kv)],
                       capture_output=True, text=True, cwd=work, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr == message + "\n"
    assert r.stdout == ""
    assert _all_paths(tmp_path) == before, "nothing may be written"


def test_make_all_refuses_a_missing_results_folder(tmp_path):
    r = run_script("make_all", "--results-dir", str(tmp_path / "nonexistent"), "--out-dir", str(tmp_path / "f"))
    assert r.returncode == 2
    assert "--results-dir" in r.stderr and "no such folder" in r.stderr
    assert "made" not in r.stdout
    assert not (tmp_path / "f").exists()


def test_make_all_checks_every_csv_before_drawing(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    for name, make in SYNTHETIC.items():
        write_csv(results / name, make())
    _set("latency_us_median", "-300")(results / "short_context.csv")
    r = run_script("make_all", "--results-dir", str(results), "--out-dir", str(tmp_path / "figures"))
    assert r.returncode == 2
    assert str(results / "short_context.csv")[:60] in r.stderr  # the path, shortened when long as kvb shortens it
    assert "latency_us_median = '-300'" in r.stderr
    assert not (tmp_path / "figures").exists(), "no figure may be drawn from a set holding a bad CSV"


def _figure(tmp_path) -> object:
    rows = [r for r in synthetic_capacity_rows() if r["status"] == "ok"]
    return importlib.import_module("capacity").build(rows, tmp_path / "capacity.csv")


def _temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if ".tmp." in p.name]


def test_save_replaces_both_files_and_keeps_their_mode(tmp_path):
    out = tmp_path / "figures"
    out.mkdir()
    (out / "capacity.png").write_bytes(b"old png")
    (out / "capacity.png").chmod(0o600)
    style.save(_figure(tmp_path), out, "capacity")
    assert (out / "capacity.png").read_bytes().startswith(PNG_MAGIC)
    assert (out / "capacity.png").stat().st_mode & 0o777 == 0o600
    assert (out / "capacity.pdf").read_bytes().startswith(b"%PDF")
    assert not _temporaries(out)


@pytest.mark.parametrize("exception", [KeyboardInterrupt, OSError])
def test_interrupted_save_leaves_both_figures_as_they_were(exception, tmp_path, monkeypatch):
    out = tmp_path / "figures"
    out.mkdir()
    (out / "capacity.png").write_bytes(b"old png")
    (out / "capacity.pdf").write_bytes(b"old pdf")
    fig = _figure(tmp_path)
    real = fig.savefig

    def savefig(f, **kwargs):  # the PNG is written whole, the PDF breaks part way
        if kwargs.get("format") == "pdf":
            f.write(b"%PDF-1.4 partial")
            raise exception("stopped")
        real(f, **kwargs)

    monkeypatch.setattr(fig, "savefig", savefig)
    with pytest.raises(exception):
        style.save(fig, out, "capacity")
    assert (out / "capacity.png").read_bytes() == b"old png"
    assert (out / "capacity.pdf").read_bytes() == b"old pdf"
    assert not _temporaries(out)


def test_a_figure_file_that_is_a_folder_refuses_both_files(tmp_path):
    """A folder where one of a figure's files goes refuses the whole write: exit 2 in one line, the other file neither
    made nor replaced, no temporaries left."""
    path = write_csv(tmp_path / "decode_latency.csv", synthetic_decode_rows())
    out = tmp_path / "figures"
    (out / "decode_latency.pdf").mkdir(parents=True)
    r = run_script("decode_latency", "--csv", str(path), "--out-dir", str(out))
    assert r.returncode == 2, r.stderr
    assert r.stderr == result_csv.one_line(f"--out-dir {out}: cannot write decode_latency.png and decode_latency.pdf "
                                           "there: decode_latency.pdf exists and is not a file (allowed: a file to "
                                           "replace, or none)") + "\n"
    assert sorted(p.name for p in out.iterdir()) == ["decode_latency.pdf"]


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
def test_a_disk_that_fills_up_while_drawing_fails_the_run_not_the_input(code, tmp_path, monkeypatch, capsys):
    """A full (or failing) disk while a figure's files are written, after the probe passed: exit 1, a failure of the
    run, where it exited 2 as bad input does; one line naming --out-dir, the files and the reason; nothing left
    written, the folders made for it removed again. make_all counts the figure failed and exits 1."""
    results = tmp_path / "results"
    results.mkdir()
    csv_path = write_csv(results / "capacity.csv", synthetic_capacity_rows())

    def fsync(_fd):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(style.os, "fsync", fsync)
    out = tmp_path / "new" / "figures"
    with pytest.raises(SystemExit) as e:
        importlib.import_module("capacity").main(["--csv", str(csv_path), "--out-dir", str(out)])
    assert e.value.code == 1
    assert capsys.readouterr().err == (f"--out-dir {out}: cannot write capacity.png and capacity.pdf there: "
                                       f"{os.strerror(code)}\n")
    assert not (tmp_path / "new").exists()
    assert make_all.main(["--results-dir", str(results), "--out-dir", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"cannot write capacity.png and capacity.pdf there: {os.strerror(code)}\n" in err
    assert err.endswith("failed 1: capacity\n"), err
    assert not (tmp_path / "new").exists()


def test_a_folder_made_while_saving_leaves_both_figures_as_they_were(tmp_path, monkeypatch):
    """Every target is checked again before the first rename: a folder that appears where the PDF goes while the
    figure is written leaves the PNG as it was too."""
    out = tmp_path / "figures"
    out.mkdir()
    (out / "capacity.png").write_bytes(b"old png")
    fig = _figure(tmp_path)
    real = fig.savefig

    def savefig(f, **kwargs):
        real(f, **kwargs)
        if kwargs.get("format") == "pdf":
            (out / "capacity.pdf").mkdir()

    monkeypatch.setattr(fig, "savefig", savefig)
    with pytest.raises(OSError, match="capacity.pdf exists and is not a file"):
        style.save(fig, out, "capacity")
    assert (out / "capacity.png").read_bytes() == b"old png"
    assert (out / "capacity.pdf").is_dir()
    assert not _temporaries(out)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_stdout_that_cannot_be_written_is_not_a_figure_that_was_not(tmp_path):
    """A full stdout fails the run as a write failure (exit 1, "standard output: ..." once on stderr) after the figures
    are in place; neither the figure script nor make_all (whose scripts print to its stdout) calls them not written."""
    results = tmp_path / "results"
    results.mkdir()
    path = write_csv(results / "decode_latency.csv", synthetic_decode_rows())
    write_csv(results / "capacity.csv", synthetic_capacity_rows())
    message = "standard output: No space left on device\n"
    runs = [("decode_latency", ["--csv", str(path)], ["decode_latency"]),
            ("make_all", ["--results-dir", str(results)], ["decode_latency", "decode_efficiency", "decode_bytes",
                                                           "capacity"])]
    for script, args, names in runs:
        out = tmp_path / script
        with open("/dev/full", "w") as full:
            r = subprocess.run([sys.executable, str(PLOTS_DIR / f"{script}.py"), *args, "--out-dir", str(out)],
                               stdout=full, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT, timeout=300)
        assert r.returncode == 1, r.stderr
        assert r.stderr == message
        for name in names:
            assert_figure(out, name)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("script", ["decode_latency", "make_all"])
def test_help_that_stdout_cannot_take_fails_the_command(script):
    """--help written to a full stdout (/dev/full) or to none (file descriptor 1 closed): exit 1 with one line on
    stderr, "standard output: REASON", as the "wrote" lines fail; it exited 0, argparse dropping the error. A stdout
    that takes it still gets the help and exit 0."""
    command = [sys.executable, str(PLOTS_DIR / f"{script}.py"), "--help"]
    with open("/dev/full", "w") as full:
        r = subprocess.run(command, stdout=full, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT, timeout=120)
    assert r.returncode == 1, r.stderr
    assert r.stderr == "standard output: No space left on device\n"
    r = subprocess.run(command, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT, timeout=120,
                       preexec_fn=lambda: os.close(1))
    assert r.returncode == 1, r.stderr
    assert r.stderr == "standard output: Bad file descriptor\n"
    r = run_script(script, "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"usage: {script}.py") and r.stderr == ""


def test_a_closed_stdout_fails_and_a_path_stdout_cannot_encode_is_written_escaped(tmp_path):
    """No stdout at all (file descriptor 1 closed) fails the run as a full one does, after the figure is in place; a
    --out-dir holding a byte that is no UTF-8, with a strict stdout encoding, is reported as kvb writes it (\\xff),
    not in a traceback."""
    path = write_csv(tmp_path / "capacity.csv", synthetic_capacity_rows())
    script = str(PLOTS_DIR / "capacity.py")
    out = tmp_path / "closed"
    r = subprocess.run([sys.executable, script, "--csv", str(path), "--out-dir", str(out)], stderr=subprocess.PIPE,
                       text=True, cwd=REPO_ROOT, timeout=120, preexec_fn=lambda: os.close(1))
    assert r.returncode == 1, r.stderr
    assert r.stderr == "standard output: Bad file descriptor\n"
    assert_figure(out, "capacity")
    odd = os.fsencode(tmp_path) + b"/o\xff"
    env = dict(os.environ, PYTHONIOENCODING="utf-8:strict")
    r = subprocess.run([os.fsencode(sys.executable), os.fsencode(script), b"--csv", os.fsencode(path), b"--out-dir",
                        odd], capture_output=True, cwd=REPO_ROOT, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines() == [f"wrote {tmp_path}/o\\xff/capacity.{ext}" for ext in ("png", "pdf")]
    assert_figure(Path(os.fsdecode(odd)), "capacity")


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc/self/task")
def test_the_plotting_libraries_start_no_thread_that_could_take_a_signal():
    """After stop_at_start and the plotting libraries load, the process has one thread: a BLAS thread would take
    SIGINT or SIGTERM while the main thread holds them back (style._signals_held) and stop a figure between its two
    renames."""
    code = ("import os, sys; sys.path.insert(0, sys.argv[1]); import stop_at_start, style, numpy; "
            "numpy.ones((256, 256)) @ numpy.ones((256, 256)); print(len(os.listdir('/proc/self/task')))")
    r = subprocess.run([sys.executable, "-c", code, str(PLOTS_DIR)], capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "1"


def _stopped_at(where: str, args: list[str], cwd=REPO_ROOT, stderr=subprocess.PIPE) -> subprocess.Popen:
    """Starts a plots script (`args`: the script and its arguments) that stops itself (SIGSTOP) at stop point `where`
    (KVB_TEST_STOP_AT: loading, out-dir, savefig); waits until it has."""
    env = dict(os.environ, KVB_TEST_STOP_AT=where)
    p = subprocess.Popen([sys.executable, *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True)
    _, status = os.waitpid(p.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), "the script did not reach its stop point"
    return p


def _stopped_in_savefig(args: list[str], cwd=REPO_ROOT, stderr=subprocess.PIPE) -> subprocess.Popen:
    """_stopped_at in its first figure's temporary file."""
    return _stopped_at("savefig", args, cwd, stderr)


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_signal_during_savefig_leaves_the_figure_whole(sig, code, tmp_path):
    csv_path = write_csv(tmp_path / "capacity.csv", synthetic_capacity_rows())
    out = tmp_path / "figures"
    out.mkdir()
    (out / "capacity.png").write_bytes(b"old png")
    p = _stopped_in_savefig([str(PLOTS_DIR / "capacity.py"), "--csv", str(csv_path), "--out-dir", str(out)])
    assert _temporaries(out), "the temporary exists at the stop point"
    os.kill(p.pid, sig)
    os.kill(p.pid, signal.SIGCONT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    assert (out / "capacity.png").read_bytes() == b"old png"
    assert not (out / "capacity.pdf").exists()
    assert not _temporaries(out)


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_make_all_stopped_while_loading_says_so_in_one_line(sig, code, tmp_path):
    out = tmp_path / "figures"
    p = _stopped_at("loading", [str(PLOTS_DIR / "make_all.py"), "--out-dir", str(out)])
    os.kill(p.pid, sig)
    os.kill(p.pid, signal.SIGCONT)
    stdout, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    assert err.strip() == f"{signal.Signals(sig).name}: stopped while loading, nothing written"
    assert stdout == ""
    assert not out.exists()


def test_make_all_stops_between_figures_on_a_signal(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    for name, make in SYNTHETIC.items():
        write_csv(results / name, make())
    out = tmp_path / "figures"
    p = _stopped_in_savefig([str(PLOTS_DIR / "make_all.py"), "--results-dir", str(results), "--out-dir", str(out)])
    os.kill(p.pid, signal.SIGTERM)
    os.kill(p.pid, signal.SIGCONT)
    stdout, err = p.communicate(timeout=120)
    assert p.returncode == 143, err
    # The figure under way was finished; none after it was started.
    first = make_all.FIGURES[0].script
    assert f"made 1 figure(s): {first}" in stdout
    assert_figure(out, first)
    assert "not made (left as they were): " + ", ".join(f.script for f in make_all.FIGURES[1:]) in err
    assert sorted(p.name for p in out.iterdir()) == [f"{first}.pdf", f"{first}.png"]


def test_make_all_stopped_in_a_bf16_figure_names_that_figure(tmp_path, monkeypatch, capsys):
    """A second signal while make_all draws decode_efficiency's bf16 figure stops it at once (Interrupted raised where
    the figure is saved, as stop_between_steps raises it); the script's notice names the figure it was drawing,
    decode_efficiency_bf16, as make_all's lists do, never the fp32 figure decode_efficiency."""
    results, out = tmp_path / "results", tmp_path / "figures"
    results.mkdir()
    rows = synthetic_decode_rows()
    write_csv(results / "decode_state_dtype.csv", rows + [dict(r, state_dtype="bf16") for r in rows])
    real_save = style.save

    def save(fig, out_dir, name):
        if name == "decode_efficiency_bf16":
            style.plt.close(fig)
            raise style.Interrupted(signal.SIGTERM)
        return real_save(fig, out_dir, name)

    monkeypatch.setattr(style, "save", save)
    assert make_all.main(["--results-dir", str(results), "--out-dir", str(out)]) == 143
    captured = capsys.readouterr()
    assert "made 1 figure(s): decode_latency_bf16" in captured.out
    err = captured.err.splitlines()
    assert "decode_efficiency_bf16: stopped by SIGTERM; the figure is as it was" in err, err
    assert not any(line.startswith("decode_efficiency:") for line in err), err
    assert "stopped by SIGTERM; not made (left as they were): decode_efficiency_bf16" in err, err
    assert sorted(p.name for p in out.iterdir()) == ["decode_latency_bf16.pdf", "decode_latency_bf16.png"]

    def interrupted_save(fig, out_dir, name):
        style.plt.close(fig)
        raise style.Interrupted(signal.SIGINT)

    monkeypatch.setattr(style, "save", interrupted_save)
    module = importlib.import_module("decode_efficiency")
    for dtype, figure in (("fp32", "decode_efficiency"), ("bf16", "decode_efficiency_bf16")):
        assert module.main(["--csv", str(results / "decode_state_dtype.csv"), "--out-dir", str(out),
                            "--state-dtype", dtype]) == 130
        assert capsys.readouterr().err == f"{figure}: stopped by SIGINT; the figure is as it was\n"


@pytest.mark.parametrize("column,value,message", [
    ("state_err_at_64", "nan", "allowed: a finite error >= 0"),
    ("o_err_at_512", "-1", "allowed: a finite error >= 0"),
    ("state_err_at_4096", "inf", "allowed: a finite error >= 0"),
    ("state_err_at_16384", "0.5", "past the row's 4096 tokens"),
])
def test_accuracy_figure_refuses_errors_that_are_not_errors(tmp_path, column, value, message):
    """An accuracy row whose error is not finite and >= 0, or that records a checkpoint past its tokens: exit 2
    naming the column, no figure written."""
    rows = synthetic_accuracy_rows()
    rows[1][column] = value
    path = write_csv(tmp_path / "accuracy.csv", rows)
    r = run_script("accuracy", "--csv", str(path), "--out-dir", str(tmp_path / "out"))
    assert r.returncode == 2, r.stderr
    assert column in r.stderr and message in r.stderr, r.stderr
    assert not (tmp_path / "out" / "accuracy.png").exists()


# ---------------------------------------------------- a signal while a figure script starts (plots/stop_at_start.py)

ALL_FIGURES = make_all.FIGURES + make_all.STATE_DTYPE_FIGURES
ALL_FIGURE_IDS = [f.name for f in ALL_FIGURES]
STOP_SIGNALS = pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)],
                                       ids=["SIGINT", "SIGTERM"])


def _figure_command(fig, tmp_path: Path, out: Path) -> list[str]:
    """The command line drawing `fig` (a make_all.Figure) from a synthetic CSV, the bf16 ones from fp32 and bf16 rows."""
    script = next(f for f in make_all.FIGURES if f.script == fig.script)
    rows = SYNTHETIC[script.csv]()
    if fig.state_dtype == "bf16":
        rows = rows + [dict(r, state_dtype="bf16") for r in rows]
    csv_path = write_csv(tmp_path / fig.csv, rows)
    return [sys.executable, str(PLOTS_DIR / f"{fig.script}.py"), *fig.args(csv_path, out)]


# The longest a signal waits for a script's first line: Python's start-up takes about 0.05 s, but several times that
# on a loaded two-core machine; the wait ends as soon as the line has run, so a generous bound costs nothing.
PYTHON_START_S = 5.0


def _catches_sigterm(pid: int) -> bool:
    """True once process `pid` has a handler of its own for SIGTERM (Python installs none by itself): its first line,
    stop_at_start's guard, has run."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the signal handlers from /proc")
# Both delays land while the libraries load (about a second): the drawing-time stop is tested at its own stop points.
@pytest.mark.parametrize("delay", [0.05, 0.3])
@STOP_SIGNALS
@pytest.mark.parametrize("fig", ALL_FIGURES, ids=ALL_FIGURE_IDS)
def test_figure_script_signalled_while_starting_stops_in_one_line(fig, sig, code, delay, tmp_path):
    """SIGINT or SIGTERM `delay` seconds into a figure script (while matplotlib and numpy load, or drawing on a fast
    machine): exit 130 / 143, one line on stderr naming the figure (NAME_bf16 for a bf16 one), no traceback, nothing
    written and no --out-dir left. A signal before the script's first line runs is Python's to handle, so the early
    one waits for that line (stop_at_start's guard, seen in /proc), or for PYTHON_START_S after the start at most."""
    import time

    out = tmp_path / "figures"
    command = _figure_command(fig, tmp_path, out)
    start = time.monotonic()
    p = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(max(0.0, start + delay - time.monotonic()))
        # Python's own start-up is over well within PYTHON_START_S; the script's imports take several times that.
        while p.poll() is None and not _catches_sigterm(p.pid) and time.monotonic() < start + PYTHON_START_S:
            time.sleep(0.002)
        assert p.poll() is None, f"the script ended before the signal: {p.communicate()}"
        os.kill(p.pid, sig)
        stdout, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    name = signal.Signals(sig).name
    assert p.returncode == code, err
    assert "Traceback" not in err
    assert err in (f"{fig.name}: stopped by {name} before drawing, nothing written\n",
                   f"{fig.name}: stopped by {name}; the figure is as it was\n"), err
    assert stdout == ""
    assert not out.exists()


@STOP_SIGNALS
@pytest.mark.parametrize("fig", ALL_FIGURES, ids=ALL_FIGURE_IDS)
def test_figure_script_stopped_while_loading_names_its_figure(fig, sig, code, tmp_path):
    """A signal at the script's first line (it stops itself there: KVB_TEST_STOP_AT=loading), before its arguments
    are parsed: the line names the figure the command line asks for, NAME_bf16 for --state-dtype bf16."""
    out = tmp_path / "figures"
    p = _stopped_at("loading", _figure_command(fig, tmp_path, out)[1:])
    os.kill(p.pid, sig)
    os.kill(p.pid, signal.SIGCONT)
    stdout, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    assert err == f"{fig.name}: stopped by {signal.Signals(sig).name} before drawing, nothing written\n"
    assert stdout == ""
    assert not out.exists()


@STOP_SIGNALS
def test_signal_once_the_out_dir_is_made_removes_it(sig, code, tmp_path):
    """A signal right after the script made --out-dir (and its missing parents), before any file is in it: the
    folders it made are removed again; one that was there before stays."""
    csv_path = write_csv(tmp_path / "capacity.csv", synthetic_capacity_rows())
    out = tmp_path / "new" / "figures"
    p = _stopped_at("out-dir", [str(PLOTS_DIR / "capacity.py"), "--csv", str(csv_path), "--out-dir", str(out)])
    assert out.is_dir(), "the folder exists at the stop point"
    os.kill(p.pid, sig)
    os.kill(p.pid, signal.SIGCONT)
    stdout, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    assert err == f"capacity: stopped by {signal.Signals(sig).name}; the figure is as it was\n"
    assert not (tmp_path / "new").exists()
    assert sorted(q.name for q in tmp_path.iterdir()) == ["capacity.csv"]

    kept = tmp_path / "kept"
    kept.mkdir()
    p = _stopped_at("out-dir", [str(PLOTS_DIR / "capacity.py"), "--csv", str(csv_path), "--out-dir", str(kept)])
    os.kill(p.pid, sig)
    os.kill(p.pid, signal.SIGCONT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    assert kept.is_dir() and not list(kept.iterdir())


@pytest.mark.parametrize("argv,dtype", [
    ([], None),
    (["--csv", "x.csv", "--state-dtype", "bf16"], "bf16"),
    (["--state-dtype=bf16"], "bf16"),
    (["--state", "bf16"], "bf16"),
    (["--s=bf16", "--state-dtype", "fp32"], "fp32"),
    (["--state-dtype"], None),
    (["--", "--state-dtype", "bf16"], None),
    (["--csv=--state-dtype"], None),
])
def test_state_dtype_is_read_before_the_arguments_are_parsed(argv, dtype):
    """The start-up guard names NAME_bf16 for a command line that asks for bf16 rows the ways argparse takes it."""
    import stop_at_start
    assert stop_at_start.state_dtype_asked(argv) == dtype


def test_importing_a_figure_script_leaves_the_signal_handlers_alone():
    """Imported (by make_all or a test) rather than run, make_all and the figure scripts install no start-up guard:
    SIGINT stays Python's KeyboardInterrupt, SIGTERM its default."""
    modules = ", ".join(["make_all"] + [f.script for f in make_all.FIGURES])
    code = (f"import signal, sys; sys.path.insert(0, {str(PLOTS_DIR)!r}); import {modules}; "
            "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, "
            "signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True"]


# ------------------------------------------------------------------- axis values, UTF-8 and one-line errors as kvb's

def _with_cell(src: Path, dst: Path, line: int, column: str, value: bytes) -> Path:
    """`src` (a committed result CSV without quoted cells in its first lines) cut to its header and rows up to
    `line`, with the cell of `column` on `line` replaced by the bytes `value`, written to `dst`."""
    lines = src.read_bytes().split(b"\n")[:line]
    header = lines[0].split(b",")
    cells = lines[line - 1].split(b",")
    cells[header.index(column.encode())] = value
    lines[line - 1] = b",".join(cells)
    dst.write_bytes(b"\n".join(lines) + b"\n")
    return dst


@pytest.mark.parametrize("column,value,message", [
    ("launch", b"PDL", "launch = 'PDL' is not known (allowed: plain, pdl)"),
    ("launch", b" plain", "launch = ' plain' has white space around it (allowed: plain, pdl)"),
    ("buffer_form", b"bar", "buffer_form = 'bar' is not known (allowed: delta, raw)"),
    ("batch", b"4097", "batch = '4097' is out of range (allowed: integers 1 to 4096)"),
    ("batch", b"99999999999999999999", "batch = '99999999999999999999' is out of range (allowed: integers 1 to 4096)"),
    ("head_dim_k", b"48", "head_dim_k = '48' is not supported (allowed: 32, 64, 128, 256)"),
    ("phase", b"x" * 100, f"phase = '{'x' * 72}... (100 characters)' is not known (allowed: staggered, aligned)"),
])
def test_axis_values_no_sweep_writes_are_refused_as_kvb_refuses_them(column, value, message, tmp_path):
    """A decode CSV whose third line (a recurrent row; for the axes only KVBuffer has, the first KVBuffer row) holds an
    axis value no sweep of the kind writes is refused with kvb merge's and kvb compare's message
    (validate_axis_values, harness/sweep/result_csv.h), read from result_axes.csv."""
    decode = RESULTS_DIR / "decode_latency.csv"
    line = 3 if column not in ("buffer_form", "phase") else _first_line_of(decode, "variant", "kvbuffer")
    path = _with_cell(decode, tmp_path / "d.csv", line, column, value)
    with pytest.raises(result_csv.CsvError) as e:
        result_csv.read(path)
    assert str(e.value) == f"{path}:{line}: {message}"


def _first_line_of(path: Path, column: str, value: str) -> int:
    """The line of `path` (a result CSV without quoted line breaks) whose first row has `column` = `value`."""
    rows = list(csv.DictReader(path.open(newline="")))
    return next(i for i, r in enumerate(rows) if r[column] == value) + 2


def test_axes_set_where_they_do_not_apply_or_empty_where_they_do_are_refused(tmp_path):
    """A sweep writes an axis's value where the axis matters for the row's variant and leaves it empty elsewhere: a
    buffer_size on a recurrent row, an empty batch, an empty variant, and an empty buffer_form, launch or state_dtype
    on a KVBuffer row are refused with kvb's messages (validate_axis_values)."""
    decode = RESULTS_DIR / "decode_latency.csv"
    kv = _first_line_of(decode, "variant", "kvbuffer")
    allowed_variants = "recurrent, kvbuffer, fla_recurrent, flashinfer_recurrent, replayssm_decode"
    for line, column, value, message in (
            (3, "buffer_size", b"8", "buffer_size = '8' on a recurrent row (allowed: empty; buffer_size does not apply "
                                     "to recurrent)"),
            (3, "batch", b"", "batch is empty on a recurrent row (allowed: integers 1 to 4096)"),
            (3, "variant", b"", f"variant is empty (allowed: {allowed_variants})"),
            (kv, "buffer_form", b"", "buffer_form is empty on a kvbuffer row (allowed: delta, raw)"),
            (kv, "launch", b"", "launch is empty on a kvbuffer row (allowed: plain, pdl)"),
            (kv, "state_dtype", b"", "state_dtype is empty on a kvbuffer row (allowed: fp32, bf16)")):
        path = _with_cell(decode, tmp_path / "bad.csv", line, column, value)
        with pytest.raises(result_csv.CsvError) as e:
            result_csv.read(path)
        assert str(e.value) == f"{path}:{line}: {message}"


def test_axis_values_allowed_and_empty_pass_and_accepted_takes_a_rate(tmp_path):
    """An allowed spelling kvb takes (064), an empty cell where the axis does not apply (a recurrent row's buffer_size
    and phase) and an acceptance rate strictly between 0 and 1 pass; 1, a subnormal rate (which strtod refuses) and a
    NUL after a rate are refused."""
    decode = RESULTS_DIR / "decode_latency.csv"
    for column, value in (("batch", b"064"), ("buffer_size", b""), ("phase", b"")):
        assert result_csv.read(_with_cell(decode, tmp_path / "ok.csv", 3, column, value))
    verify = RESULTS_DIR / "spec_verify.csv"
    for value in (b"0.5", b".25", b"5e-1", b"none"):
        assert result_csv.read(_with_cell(verify, tmp_path / "ok.csv", 2, "accepted", value))
    allowed = "all, none, or an acceptance rate strictly between 0 and 1"
    for value, shown in ((b"1", "1"), (b"1e-310", "1e-310"), (b"0.5\0", "0.5\\x00"), (b"ALL", "ALL")):
        path = _with_cell(verify, tmp_path / "bad.csv", 2, "accepted", value)
        with pytest.raises(result_csv.CsvError) as e:
            result_csv.read(path)
        assert str(e.value) == f"{path}:2: accepted = '{shown}' is not allowed (allowed: {allowed})"


def test_axes_file_covers_every_sweep_kind_and_names_its_key_columns():
    """result_axes.csv (kept equal to the kinds' axis checks by kvb's CsvValidation.AxesFileMatchesTheKinds) lists
    every kind of result_schemas.csv but capacity, each axis a key column of its kind, in the kind's column order."""
    rules, known = result_csv.axis_rules(), result_csv.schemas()
    assert set(rules) == set(known) - {"capacity"}
    for kind, axes in rules.items():
        names = [a.axis for a in axes]
        assert names == [c for c in known[kind].key if c != "experiment"], kind
        for a in axes:
            assert a.allowed, (kind, a.axis)


def test_make_all_refuses_an_axis_value_no_sweep_writes_before_drawing(tmp_path):
    """make_all checks every CSV's axis values as kvb merge does, so a launch of 'PDL' stops it with exit 2 and one
    line before any figure is drawn (it used to be drawn from, or fail midway with exit 1)."""
    results = tmp_path / "results"
    results.mkdir()
    for src in RESULTS_DIR.glob("*.csv"):
        (results / src.name).write_bytes(src.read_bytes())
    _with_cell(RESULTS_DIR / "decode_latency.csv", results / "decode_latency.csv", 3, "launch", b"PDL")
    r = run_script("make_all", "--results-dir", str(results), "--out-dir", str(tmp_path / "figures"))
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        result_csv.one_line(f"{results / 'decode_latency.csv'}:3: launch = 'PDL' is not known (allowed: plain, pdl)")]
    assert not (tmp_path / "figures").exists()


@pytest.mark.parametrize("value,byte,at", [
    (b"caf\xe9", "0xE9", 4),             # a Latin-1 byte
    (b"ab\xed\xa0\x80", "0xED", 3),     # an encoded surrogate (U+D800)
    (b"\xc0\xaf", "0xC0", 1),           # an overlong '/'
    (b"x\xf4\x90\x80\x80", "0xF4", 2),  # above U+10FFFF
    (b"ab\xe2\x82", "0xE2", 3),         # a character cut short
])
def test_text_that_is_not_utf8_is_refused_naming_line_column_and_byte(value, byte, at, tmp_path):
    """A cell holding bytes outside a well-formed UTF-8 character is refused as kvb refuses it (CsvValidation.
    TextThatIsNotUtf8IsRefusedNamingLineColumnAndByte): the line, the column, the first such byte and where it is,
    never Python's codec error without a line."""
    path = _with_cell(RESULTS_DIR / "decode_latency.csv", tmp_path / "d.csv", 3, "git_sha", value)
    with pytest.raises(result_csv.CsvError) as e:
        result_csv.read(path)
    assert str(e.value) == (f"{path}:3: git_sha holds a byte that is not UTF-8 text ({byte}, byte {at} of the value; "
                            f"allowed: UTF-8 text)")


def test_a_column_name_that_is_not_utf8_is_refused_and_utf8_text_passes(tmp_path):
    src = RESULTS_DIR / "decode_latency.csv"
    lines = src.read_bytes().split(b"\n")[:3]
    column = lines[0].split(b",").index(b"git_sha") + 1
    (tmp_path / "h.csv").write_bytes(b"\n".join([lines[0].replace(b"git_sha", b"git\xe9sha"), *lines[1:]]) + b"\n")
    with pytest.raises(result_csv.CsvError) as e:
        result_csv.read(tmp_path / "h.csv")
    assert str(e.value) == (f"{tmp_path / 'h.csv'}:1: the name of column {column} holds a byte that is not UTF-8 "
                            f"text (0xE9, byte 4 of the name; allowed: UTF-8 text)")
    assert result_csv.read(_with_cell(src, tmp_path / "ok.csv", 3, "git_sha", "café 𝄞".encode()))


def test_one_line_writes_nul_and_shortens_long_runs_as_kvb_does():
    """one_line as kvb's (harness/cli/cli_checks.cpp): NUL written \\x00, line breaks \\n and \\r, each run of over 80
    characters without a space shortened to its first 72 and its length, opening quotes and closing quotes and
    punctuation kept; CsvError keeps the whole message, escaped, as kvb's UsageError keeps it."""
    long = "v" * 100
    assert result_csv.one_line("a\0b\nc\rd") == "a\\x00b\\nc\\rd"
    assert result_csv.one_line(f"x.csv:3: s = '{long}' (allowed: y)") == \
        f"x.csv:3: s = '{'v' * 72}... (100 characters)' (allowed: y)"
    assert result_csv.one_line(f"(\"{long}\"),") == f"(\"{'v' * 72}... (100 characters)\"),"
    assert result_csv.one_line(f"{'w' * 90}:3:") == f"{'w' * 72}... (92 characters):"
    assert result_csv.one_line("a  b ") == "a  b "
    assert result_csv.one_line("'':,") == "'':,"
    assert result_csv.one_line("é" * 81) == "é" * 72 + "... (81 characters)"
    # A value holding line breaks is counted and cut by its own characters: each escape one, never cut.
    assert result_csv.one_line("'" + "a\n" * 46 + "'") == "'" + "a\\n" * 36 + "... (92 characters)'"
    assert result_csv.one_line("\u2028" * 81) == "\\u2028" * 72 + "... (81 characters)"
    assert result_csv.one_line("\x1b" * 80) == "\\x1b" * 80
    # A byte that is no UTF-8 (a path's, through surrogateescape) as kvb writes it: \xNN, one character.
    assert result_csv.one_line("p/\udcff\udcfe.csv") == "p/\\xff\\xfe.csv"
    assert result_csv.one_line("\udce9" * 81) == "\\xe9" * 72 + "... (81 characters)"
    assert str(result_csv.CsvError(f"p:2: v = '{long}\0'")) == f"p:2: v = '{long}\\x00'"


def test_axis_values_are_read_in_their_one_spelling_and_two_spellings_are_one_point(tmp_path):
    """Rows are read with each axis value in its one spelling (kvb's canonical_axis_value: batch 064 as 64), so that
    the figures compare them as a sweep writes them; a second row spelling a point another way is that point listed
    twice, refused as kvb refuses it."""
    rows = synthetic_decode_rows()
    rows[0]["batch"] = "0" + rows[0]["batch"]
    got = result_csv.read(write_csv(tmp_path / "respelled.csv", rows))
    assert got[0]["batch"] == synthetic_decode_rows()[0]["batch"]
    assert [r["batch"] for r in got[1:]] == [r["batch"] for r in synthetic_decode_rows()[1:]]

    rows = synthetic_decode_rows()
    rows.append(dict(rows[0], batch="00" + rows[0]["batch"]))
    path = write_csv(tmp_path / "twice.csv", rows)
    with pytest.raises(result_csv.CsvError) as e:
        result_csv.read(path)
    assert f"{path}:{len(rows) + 1}: point " in str(e.value) and "is listed twice (first on line 2;" in str(e.value)
    assert [result_csv.canonical_axis_value(v) for v in ("064", "+64", "0.70", ".7", "7e-1", "all", "1e15")] == [
        "64", "64", "0.7", "0.7", "0.7", "all", "1000000000000000"]
    # The edges kvb's ConfigCanonical.OneSpellingPerAxisValue spells the same.
    edges = {"5.": "5", "-0.0": "-0", "99999999999999999999": "1e+20", "1e-310": "1e-310", "1e-400": "1e-400",
             "0e-400": "0", "1e400": "1e400", "0x1p-1": "0x1p-1", "0.5\0x": "0.5\0x", " 64": " 64", "64 ": "64 ",
             "1e": "1e"}
    assert {v: result_csv.canonical_axis_value(v) for v in edges} == edges


def test_an_out_dir_that_cannot_be_made_is_refused_in_one_line(tmp_path):
    """An --out-dir under a file, or where no folder can be made, exits 2 with one line naming it, not a traceback."""
    path = write_csv(tmp_path / "decode_latency.csv", synthetic_decode_rows())
    r = run_script("decode_latency", "--csv", str(path), "--out-dir", str(path / "figures"))
    assert r.returncode == 2, r.stderr
    assert r.stderr == result_csv.one_line(f"--out-dir {path / 'figures'}: '{path}' is not a folder (allowed: a "
                                           "folder, or a path to make one at)") + "\n"
    if Path("/proc/self").is_dir():  # Linux: no folder can be made in /proc, not even by root
        r = run_script("decode_latency", "--csv", str(path), "--out-dir", "/proc/kvb-figures")
        assert r.returncode == 2, r.stderr
        assert r.stderr.startswith("--out-dir /proc/kvb-figures: cannot write decode_latency.png and "
                                   "decode_latency.pdf there: ") and r.stderr.count("\n") == 1, r.stderr


def _expect_out_dir_refusals(tmp_path, cases, run):
    """Each (out, message[, ending]) of `cases` run by `run(out)`: exit 2, the one-line message on stderr (a message
    ending in ': ' is followed by the system's reason and then `ending`), nothing on stdout, nothing written under
    tmp_path."""
    before = _all_paths(tmp_path)
    for out, message, *ending in cases:
        r = run(out)
        assert r.returncode == 2, r.stderr
        if message.endswith(": "):  # the reason is the system's (No such file or directory)
            assert r.stderr.startswith(message) and r.stderr.count("\n") == 1, r.stderr
            assert r.stderr.endswith("".join(ending) + "\n"), r.stderr
        else:
            assert r.stderr == result_csv.one_line(message) + "\n"
        assert r.stdout == ""
        assert _all_paths(tmp_path) == before, "nothing may be written"


@pytest.mark.parametrize("fig", ALL_FIGURES, ids=ALL_FIGURE_IDS)
def test_figure_script_checks_its_out_dir_before_reading_the_csv(fig, tmp_path):
    """Each figure script checks and probes --out-dir as make_all does (style.check_out_dir, style.probe_out_dir),
    before it reads its CSV: a path under a file, a folder that cannot be made (/proc) or a figure's file that is a
    folder is refused in one line, exit 2, with the message save gave once the figure was drawn, and nothing is
    written. The CSV given does not exist, so the line shows the check came first."""
    missing = tmp_path / "missing.csv"
    taken = tmp_path / "taken"
    (taken / f"{fig.name}.pdf").mkdir(parents=True)
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    files = f"{fig.name}.png and {fig.name}.pdf"
    cases = [(a_file / "x", f"--out-dir {a_file / 'x'}: '{a_file}' is not a folder (allowed: a folder, or a path to "
                            "make one at)"),
             (taken, f"--out-dir {taken}: cannot write {files} there: {fig.name}.pdf exists and is not a file "
                     "(allowed: a file to replace, or none)")]
    if Path("/proc/self").is_dir():  # Linux: no folder can be made in /proc, not even by root
        cases.append((Path("/proc/kvb-figures"), f"--out-dir /proc/kvb-figures: cannot write {files} there: ",
                      f"(allowed: {style.OUT_DIR_WRITABLE})"))
    _expect_out_dir_refusals(tmp_path, cases, lambda out: run_script(fig.script, *fig.args(missing, out)))


def test_folders_made_only_to_reach_the_out_dir_are_removed_again(tmp_path):
    """An --out-dir through a folder that does not exist (new/.., new/../figs) makes that folder to reach its parent:
    once the figure is written there the folder is removed again (it was left, empty), as every folder made is when
    the run is refused or fails; a folder that was there before (old/..) stays."""
    results, work = tmp_path / "results", tmp_path / "work"
    results.mkdir()
    (work / "old").mkdir(parents=True)
    (work / "a_file").write_text("")
    csv_path = write_csv(results / "capacity.csv", synthetic_capacity_rows())

    def run(script, *args):
        return subprocess.run([sys.executable, str(PLOTS_DIR / f"{script}.py"), *args], capture_output=True, text=True,
                              cwd=work, timeout=120)

    for out, folder in (("new/..", "."), ("new/../figs", "figs"), ("old/..", "."), ("new/a/../../b", "b")):
        r = run("capacity", "--csv", str(csv_path), "--out-dir", out)
        assert r.returncode == 0, r.stderr
        assert_figure(work / folder, "capacity")
        top = {"capacity.png", "capacity.pdf"} if folder == "." else {folder}
        assert sorted(p.name for p in work.iterdir()) == sorted({"old", "a_file"} | top), out
        # Each "wrote" line names a path that leads to the file, NEW gone or not.
        wrote = [line.removeprefix("wrote ") for line in r.stdout.splitlines() if line.startswith("wrote ")]
        assert len(wrote) == 2 and all((work / w).is_file() for w in wrote), (out, r.stdout)
        for name in ("capacity.png", "capacity.pdf"):
            (work / folder / name).unlink()
        if folder != ".":
            (work / folder).rmdir()
    r = run("make_all", "--results-dir", str(results), "--out-dir", "new/../figs")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in work.iterdir()) == ["a_file", "figs", "old"]
    shutil.rmtree(work / "figs")
    before = _all_paths(tmp_path)
    for args in (["--csv", str(tmp_path / "missing.csv"), "--out-dir", "new/../figs"],  # refused once probed
                 ["--csv", str(csv_path), "--out-dir", "new/../a_file"]):  # refused: leads to a file
        r = run("capacity", *args)
        assert r.returncode == 2, r.stderr
        assert _all_paths(tmp_path) == before, args


@pytest.mark.parametrize("script", ["capacity", "make_all"])
def test_an_out_dir_that_is_a_link_to_nothing_is_refused_in_one_line(script, tmp_path):
    """An --out-dir that is a link to nothing (a dangling link, or one to itself), or a path under one: exit 2 in one
    line naming the flag, the path and what is allowed, nothing written, where it was refused as "File exists"."""
    results = tmp_path / "results"
    results.mkdir()
    write_csv(results / "capacity.csv", synthetic_capacity_rows())
    dangling, loop = tmp_path / "dangling", tmp_path / "loop"
    dangling.symlink_to(tmp_path / "nothing")
    loop.symlink_to("loop")
    allowed = "(allowed: a folder, or a path to make one at)"
    cases = [(dangling, f"--out-dir {dangling}: a link to '{tmp_path / 'nothing'}', which leads to nothing {allowed}"),
             (loop, f"--out-dir {loop}: a link to 'loop', which leads to nothing {allowed}"),
             (dangling / "x", f"--out-dir {dangling / 'x'}: '{dangling}' is a link to nothing {allowed}")]
    args = (["--results-dir", str(results)] if script == "make_all" else ["--csv", str(results / "capacity.csv")])
    _expect_out_dir_refusals(tmp_path, cases, lambda out: run_script(script, *args, "--out-dir", str(out)))


@pytest.mark.parametrize("script", ["capacity", "make_all"])
def test_an_out_dir_that_leads_to_a_file_through_a_folder_to_make_is_refused_in_one_line(script, tmp_path):
    """--out-dir new/../a_file (new missing, a_file a file), or a path under it: exit 2 in one line naming the flag,
    the path, the file it leads to or lies under once new is made, and what is allowed, nothing written, where it was
    refused as "File exists" (new's mkdir made, then a_file's met the file)."""
    results = tmp_path / "results"
    results.mkdir()
    write_csv(results / "capacity.csv", synthetic_capacity_rows())
    (tmp_path / "a_file").write_text("")
    allowed = "(allowed: a folder, or a path to make one at)"
    through = tmp_path / "new" / ".." / "a_file"
    cases = [("new/../a_file", f"--out-dir new/../a_file: leads to 'a_file', which exists and is not a folder "
                               f"{allowed}"),
             ("new/a/../../a_file/x", f"--out-dir new/a/../../a_file/x: 'a_file' is not a folder {allowed}"),
             (str(through), f"--out-dir {through}: leads to '{tmp_path / 'a_file'}', which exists and is not a folder "
                            f"{allowed}")]
    args = (["--results-dir", str(results)] if script == "make_all" else ["--csv", str(results / "capacity.csv")])
    _expect_out_dir_refusals(tmp_path, cases, lambda out: subprocess.run(
        [sys.executable, str(PLOTS_DIR / f"{script}.py"), *args, "--out-dir", out], capture_output=True, text=True,
        cwd=tmp_path, timeout=120))


OTHER_USER = 65534  # nobody: the user the scripts run as when the tests run as root (locked_folder)


@pytest.fixture
def locked_folder():
    """(base, locked, run): a fresh folder `base` under the system's temporary folder (pytest's tmp_path lies in a
    folder of mode 700, which another user cannot reach), holding `locked` (with locked/x and locked/res/accuracy.csv)
    that the plots scripts run by `run(script, *args)` cannot search, and `out`, a folder they can write in. Root
    searches any folder, so as root the scripts run as user and group OTHER_USER (setpriv) with locked at mode 700;
    as another user they run as that user with locked at mode 600, which its owner cannot search either. Skipped where
    neither works."""
    root = os.geteuid() == 0
    if root and not shutil.which("setpriv"):
        pytest.skip("needs setpriv: as root the scripts must run as another user, root searching any folder")
    base = Path(tempfile.mkdtemp(prefix="kvb-locked-"))
    locked = base / "locked"
    try:
        base.chmod(0o755)
        for folder in (base / "out", base / "mpl"):
            folder.mkdir()
            folder.chmod(0o777)  # the other user's: its figures, matplotlib's cache
        # matplotlib's font list, so that the other user's runs do not build it again.
        for cache in Path(style.matplotlib.get_cachedir()).glob("fontlist-*.json"):
            shutil.copy(cache, base / "mpl")
        (locked / "x").mkdir(parents=True)
        (locked / "res").mkdir()
        shutil.copy(REPO_ROOT / "results" / "accuracy.csv", locked / "res" / "accuracy.csv")
        locked.chmod(0o700 if root else 0o600)
        prefix = ["setpriv", f"--reuid={OTHER_USER}", f"--regid={OTHER_USER}", "--clear-groups"] if root else []
        env = dict(os.environ, MPLCONFIGDIR=str(base / "mpl"))

        def run(script, *args):
            return subprocess.run([*prefix, sys.executable, str(PLOTS_DIR / f"{script}.py"), *args],
                                  capture_output=True, text=True, cwd=base, env=env, timeout=120)

        r = subprocess.run([*prefix, sys.executable, "-c", "import matplotlib"], capture_output=True, text=True,
                           env=env, timeout=120)
        if r.returncode != 0:
            pytest.skip(f"user {OTHER_USER} cannot run Python with matplotlib here: {r.stderr.strip()[-200:]}")
        r = run("make_all", "--help")
        if r.returncode != 0:
            pytest.skip(f"user {OTHER_USER} cannot run the plots scripts here: {r.stderr.strip()[-200:]}")
        yield base, locked, run
    finally:
        if locked.exists():
            locked.chmod(0o700)
        shutil.rmtree(base, ignore_errors=True)


def _paths_under(base: Path, locked: Path) -> set[str]:
    """Every path under `base`, `locked` opened for the walk and closed again (at mode 600 its owner cannot list it)."""
    mode = locked.stat().st_mode & 0o7777
    locked.chmod(0o700)
    try:
        return _all_paths(base)
    finally:
        locked.chmod(mode)


OUT_DIR_THROUGH = "(allowed: a folder, or a path to make one at, reached through folders this user can search)"


@pytest.mark.parametrize("script", [f.script for f in ALL_FIGURES] + ["make_all"],
                         ids=ALL_FIGURE_IDS + ["make_all"])
def test_an_out_dir_under_a_folder_that_cannot_be_searched_is_refused_in_one_line(script, locked_folder):
    """--out-dir locked/x/figs, `locked` a folder the user cannot search: exit 2 in one line naming the flag, the
    path, the folder and the reason, and what is allowed, nothing written, where looking the path up ended in a
    PermissionError traceback, exit 1."""
    base, locked, run = locked_folder
    fig = next((f for f in ALL_FIGURES if f.script == script), None)
    args = fig.args(base / "missing.csv", locked / "x" / "figs") if fig else [
        "--results-dir", str(REPO_ROOT / "results"), "--out-dir", str(locked / "x" / "figs")]
    before = _paths_under(base, locked)
    r = run(script, *args)
    assert r.returncode == 2, r.stderr
    assert r.stderr == result_csv.one_line(f"--out-dir {locked / 'x' / 'figs'}: '{locked}' cannot be searched: "
                                           f"Permission denied {OUT_DIR_THROUGH}") + "\n"
    assert r.stdout == ""
    assert _paths_under(base, locked) == before, "nothing may be written"


@pytest.mark.parametrize("script", ["capacity", "make_all"])
def test_an_out_dir_that_leads_under_a_folder_that_cannot_be_searched_is_refused_in_one_line(script, locked_folder):
    """An --out-dir that reaches a folder the user cannot search once its missing folders are made (new/../locked/x),
    or through a link (to locked/x, or to locked/x/figs): exit 2 in one line naming that folder, nothing written."""
    base, locked, run = locked_folder
    (base / "to_x").symlink_to(locked / "x")
    (base / "to_figs").symlink_to(locked / "x" / "figs")
    args = (["--csv", str(REPO_ROOT / "results" / "capacity.csv")] if script == "capacity"
            else ["--results-dir", str(REPO_ROOT / "results")])
    before = _paths_under(base, locked)
    for out in ("new/../locked/x", "to_x", "to_x/figs", "to_figs", str(base / "new" / ".." / "locked" / "x")):
        r = run(script, *args, "--out-dir", out)
        folder = "locked" if out == "new/../locked/x" else locked  # a link's way is named as the link gives it
        assert r.returncode == 2, (out, r.stderr)
        assert r.stderr == result_csv.one_line(f"--out-dir {out}: '{folder}' cannot be searched: Permission denied "
                                               f"{OUT_DIR_THROUGH}") + "\n", out
        assert _paths_under(base, locked) == before, out


def test_a_csv_or_results_dir_that_cannot_be_reached_is_refused_in_one_line(locked_folder):
    """--csv under a folder the user cannot search or of a file it cannot read, and make_all's --results-dir (or a
    CSV in it) the same: exit 2 in one line naming the path, the folder or the reason and what is allowed, nothing
    written, where a PermissionError traceback ended the run (the unreadable file's line named no allowed value)."""
    base, locked, run = locked_folder
    unreadable = base / "res" / "accuracy.csv"
    unreadable.parent.mkdir()
    shutil.copy(REPO_ROOT / "results" / "accuracy.csv", unreadable)
    unreadable.chmod(0o000)
    hidden = locked / "res" / "accuracy.csv"
    through = "reached through folders this user can search"
    results = f"the folder of the result CSVs, such as results, {through}"
    cases = [
        ("accuracy", ["--csv", str(hidden)],
         f"{hidden}: '{locked}' cannot be searched: Permission denied (allowed: a result CSV of kvb, {through})"),
        ("accuracy", ["--csv", str(unreadable)],
         f"{unreadable}: unreadable: Permission denied (allowed: a result CSV of kvb that this user can read)"),
        ("make_all", ["--results-dir", str(locked)],
         f"--results-dir {locked}: '{locked}' cannot be searched: Permission denied (allowed: {results})"),
        ("make_all", ["--results-dir", str(locked / "res")],
         f"--results-dir {locked / 'res'}: '{locked}' cannot be searched: Permission denied (allowed: {results})"),
        ("make_all", ["--results-dir", str(unreadable.parent)],
         f"{unreadable}: unreadable: Permission denied (allowed: a result CSV of kvb that this user can read)"),
    ]
    before = _paths_under(base, locked)
    for script, args, message in cases:
        r = run(script, *args, "--out-dir", str(base / "out"))
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr == result_csv.one_line(message) + "\n", args
        assert r.stdout == ""
        assert _paths_under(base, locked) == before, args


def test_make_all_refuses_an_out_dir_that_cannot_be_made_once_before_drawing(tmp_path):
    """make_all checks --out-dir as the figure scripts do, once, before any figure is drawn: a path under a file, a
    folder that cannot be made (/proc), or a figure's file that is a folder is refused in one line, exit 2, instead of
    by each script in turn."""
    results = tmp_path / "results"
    results.mkdir()
    path = write_csv(results / "decode_latency.csv", synthetic_decode_rows())
    write_csv(results / "capacity.csv", synthetic_capacity_rows())
    taken = tmp_path / "taken"
    (taken / "capacity.pdf").mkdir(parents=True)
    cases = [(path / "x", f"--out-dir {path / 'x'}: '{path}' is not a folder (allowed: a folder, or a path to make one "
                          "at)"),
             (taken, f"--out-dir {taken}: cannot write the figures there: capacity.pdf exists and is not a file "
                     "(allowed: a file to replace, or none)")]
    if Path("/proc/self").is_dir():  # Linux: no folder can be made in /proc, not even by root
        cases.append((Path("/proc/kvb-figures"), "--out-dir /proc/kvb-figures: cannot write the figures there: ",
                      f"(allowed: {style.OUT_DIR_WRITABLE})"))
    _expect_out_dir_refusals(tmp_path, cases,
                             lambda out: run_script("make_all", "--results-dir", str(results), "--out-dir", str(out)))
