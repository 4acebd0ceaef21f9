"""Tests of the peer runner (peers/) without a GPU: the timing protocol against kvb's sampler cases, the throttle
discard with a fake SM clock and the NVML reader with a fake pynvml, the error measure and verdict of the check, the
request contract's one-line errors, the result file, and the command line (list, probe, run) with the stand-in peers
of standin_peer.py. The check against kvb's float64 reference runs end to end in tests/cpu/test_peers.cpp, where kvb
writes the case.

Run: python3 -m pytest -q tests/peers   (needs numpy and pytest; no torch, no GPU)
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNNER = REPO_ROOT / "peers" / "run_peer.py"
STANDIN = Path(__file__).resolve().parent / "standin_peer.py"
sys.path.insert(0, str(REPO_ROOT))

from peers import check, protocol, request, result, sm_clock  # noqa: E402


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


# --- the throttle discard: the same rules as harness/measure/sampling.h, with a fake SM clock ------------------------

MAX_MHZ = 1980


class FakeGpu:
    """SM clock readings given out in order (the last one repeated), a fake wall clock that only sleep() and
    samples advance, and samples numbered in the order they are taken, each recording the reading it followed
    (tests/cpu/test_sampling.cpp FakeGpu)."""

    def __init__(self, readings, sample_seconds=0.0):
        self.readings = list(readings)
        self.next_reading = 0
        self.last_mhz = None
        self.clock_before_sample = []
        self.now = 0.0
        self.sample_seconds = sample_seconds

    def read(self):
        self.last_mhz = self.readings[min(self.next_reading, len(self.readings) - 1)]
        self.next_reading += 1
        return None if self.last_mhz is None else protocol.ClockReading(self.last_mhz, MAX_MHZ, 0)

    def sample(self):
        self.clock_before_sample.append(self.last_mhz)
        self.now += self.sample_seconds
        return float(len(self.clock_before_sample))  # sample k has the value k

    def sleep(self, seconds):
        self.now += seconds

    def sample_until(self, rule, **kw):
        return protocol.sample_until(self.sample, rule, clock=lambda: self.now, sm_clock=self.read,
                                     sleep=self.sleep, **kw)


def quick_rule(min_samples, **kw):
    """Stops as soon as min_samples are kept; polls the clock every 10 ms of the fake wall clock."""
    return protocol.SamplingRule(min_samples=min_samples, max_samples=50, target_noise_pct=1000.0,
                                 recovery_poll_seconds=0.01, **kw)


def test_the_rule_has_the_cpp_samplers_throttle_defaults():
    r = protocol.SamplingRule()
    assert (r.min_clock_fraction, r.recovery_poll_seconds, r.max_throttled_seconds) == (0.75, 0.05, 30.0)


def test_below_the_clock_floor_as_kvb_decides_it():
    floor = protocol.below_clock_floor
    assert floor(protocol.ClockReading(1455, MAX_MHZ, 0), 0.75)  # 73% of the maximum
    assert not floor(protocol.ClockReading(1485, MAX_MHZ, 0), 0.75)  # exactly 75%
    assert floor(protocol.ClockReading(1700, MAX_MHZ, 0), 0.9)
    # Idle alone lowers the clock without throttling; idle with a power cap does not excuse it.
    assert not floor(protocol.ClockReading(345, MAX_MHZ, protocol.GPU_IDLE), 0.75)
    assert floor(protocol.ClockReading(345, MAX_MHZ, protocol.GPU_IDLE | 0x4), 0.75)
    # Unknown clock, maximum or reasons: an idle GPU cannot be told from a throttled one, nothing is discarded.
    assert not floor(None, 0.75)
    assert not floor(protocol.ClockReading(None, MAX_MHZ, 0), 0.75)
    assert not floor(protocol.ClockReading(100, None, 0), 0.75)
    assert not floor(protocol.ClockReading(345, MAX_MHZ, None), 0.75)


def test_samples_taken_throttled_are_discarded_and_counted():
    # Readings: one before the first sample, one after each sample, one per poll while waiting. Samples 2 and 3 end
    # throttled, and each time the next poll finds the clock back.
    gpu = FakeGpu([1980, 1980, 1400, 1980, 1400, 1980, 1980, 1980])
    s = gpu.sample_until(quick_rule(4))
    assert (s.discarded, s.clock_checked, s.samples) == (2, True, 4)
    assert s.median == 4.5  # kept: samples 1, 4, 5, 6
    assert s.p10 == pytest.approx(protocol.percentile([1, 4, 5, 6], 0.1))


def test_no_sample_starts_before_the_clock_recovers():
    # Throttled from the start: polled until back, then sampled; after a throttled sample it waits again.
    gpu = FakeGpu([1000, 1100, 1200, 1980, 1300, 1350, 1990, 1980])
    s = gpu.sample_until(quick_rule(3))
    assert all(mhz >= 0.75 * MAX_MHZ for mhz in gpu.clock_before_sample)
    assert (s.discarded, s.samples, len(gpu.clock_before_sample)) == (1, 3, 4)
    assert gpu.now == pytest.approx(5 * 0.01)  # five polls of 10 ms: three before the first sample, two after


def test_throttled_time_does_not_count_toward_the_time_budget():
    # Samples of 1 s with a 3.5 s budget: the kept ones stop it after 4 (kept time 4 s), the discarded ones and the
    # waits for the clock do not count.
    gpu = FakeGpu([1980, 1400, 1400, 1980, 1400, 1980], sample_seconds=1.0)
    noisy = iter([1.0, 3.0] * 50)
    s = protocol.sample_until(lambda: gpu.sample() and next(noisy), protocol.SamplingRule(
        min_samples=2, max_seconds=3.5, recovery_poll_seconds=0.01), clock=lambda: gpu.now, sm_clock=gpu.read,
        sleep=gpu.sleep)
    assert (s.stop, s.samples, s.discarded) == ("time", 4, 2)


def test_a_clock_that_never_recovers_fails_the_point_naming_it():
    gpu = FakeGpu([1400])
    with pytest.raises(protocol.ThrottledError) as e:
        gpu.sample_until(quick_rule(3, max_throttled_seconds=2.0))
    assert str(e.value) == ("SM clock below 75% of its maximum (1400 of 1980 MHz): 0 samples discarded; it did not "
                            "recover within 2 s")
    assert gpu.clock_before_sample == []
    assert 2.0 < gpu.now <= 2.0 + 0.011  # it gave up once waiting passed max_throttled_seconds of the wall clock
    # Samples that end throttled count too: 1 s each, waits of 10 ms, given up once their sum passes 2.5 s.
    gpu = FakeGpu([1980, 1400, 1980] * 10, sample_seconds=1.0)
    with pytest.raises(protocol.ThrottledError, match=r"\(1400 of 1980 MHz\): 3 samples discarded; it did not"):
        gpu.sample_until(quick_rule(30, max_throttled_seconds=2.5))


def test_a_clock_that_keeps_falling_after_each_sample_fails_after_max_samples():
    flicker = FakeGpu([1980, 1400] * 200)
    with pytest.raises(protocol.ThrottledError, match="51 samples discarded; more than 50 samples"):
        flicker.sample_until(quick_rule(3))


def test_without_a_readable_clock_nothing_is_discarded_and_the_count_is_unknown():
    s = protocol.sample_until(lambda: 1.0, quick_rule(5))
    assert (s.discarded, s.clock_checked, s.samples) == (0, False, 5)
    gpu = FakeGpu([None])  # NVML answers nothing
    s = gpu.sample_until(quick_rule(5))
    assert (s.discarded, s.clock_checked, s.samples) == (0, False, 5)
    # A low clock whose reasons are unknown is not taken for throttling: kept, and the clock was checked.
    s = protocol.sample_until(lambda: 1.0, quick_rule(5), sm_clock=lambda: protocol.ClockReading(300, MAX_MHZ, None))
    assert (s.discarded, s.clock_checked) == (0, True)


def test_model_steps_pass_the_sm_clock_to_the_sampler():
    gpu = FakeGpu([1980, 1400, 1980])
    t = protocol.time_model_steps(lambda n: 0.25 * n, cycle=1, layer_steps=1, rule=quick_rule(3),
                                  step_rule=protocol.StepRule(warmup_cycles=1, warmup_min_ms=1.0, sample_min_ms=1.0),
                                  sm_clock=gpu.read)
    assert (t.stats.discarded, t.stats.clock_checked, t.stats.samples) == (1, True, 3)


class FakeNvml:
    """The few pynvml calls the reader makes, answering for one GPU at `mhz` of 1980 MHz."""

    NVML_CLOCK_SM = 1

    class NVMLError(Exception):
        pass

    def __init__(self, mhz=1980, init_fails=False, reasons=True, bus_ids=()):
        self.mhz, self.init_fails, self.bus_ids = mhz, init_fails, bus_ids
        if reasons:  # the new name of the reasons query fails (a driver older than the bindings), the old answers
            self.nvmlDeviceGetCurrentClocksEventReasons = self.not_found
            self.nvmlDeviceGetCurrentClocksThrottleReasons = lambda handle: 0x4

    def not_found(self, *args):
        raise self.NVMLError("Function Not Found")

    def nvmlInit(self):
        if self.init_fails:
            raise self.NVMLError("Driver Not Loaded")

    def nvmlDeviceGetHandleByPciBusId(self, bus_id):
        if bus_id not in self.bus_ids:
            raise self.NVMLError("Not Found")
        return ("gpu", bus_id)

    def nvmlDeviceGetHandleByIndex(self, index):
        return ("gpu", index)

    def nvmlDeviceGetClockInfo(self, handle, kind):
        self.handle = handle
        if self.mhz is None:
            raise self.NVMLError("Not Supported")
        return self.mhz

    def nvmlDeviceGetMaxClockInfo(self, handle, kind):
        return MAX_MHZ


def test_the_nvml_reader_reads_the_clock_or_is_absent(monkeypatch):
    monkeypatch.setitem(sys.modules, "fake_nvml", FakeNvml(mhz=1400))
    read = sm_clock.nvml_sm_clock(0, "fake_nvml")
    assert read() == protocol.ClockReading(1400, MAX_MHZ, 0x4)  # the older name of the reasons query
    monkeypatch.setitem(sys.modules, "fake_nvml", FakeNvml(reasons=False))
    assert sm_clock.nvml_sm_clock(0, "fake_nvml")() == protocol.ClockReading(1980, MAX_MHZ, None)
    # No module, NVML that does not start, a clock NVML does not give: no reader, the clock is not checked.
    assert sm_clock.nvml_sm_clock(0, "no_such_nvml_module") is None
    monkeypatch.setitem(sys.modules, "fake_nvml", FakeNvml(init_fails=True))
    assert sm_clock.nvml_sm_clock(0, "fake_nvml") is None
    monkeypatch.setitem(sys.modules, "fake_nvml", FakeNvml(mhz=None))
    assert sm_clock.nvml_sm_clock(0, "fake_nvml") is None


def test_the_nvml_reader_finds_the_device_by_its_pci_bus_id_when_torch_knows_it(monkeypatch):
    class FakeTorch:  # torch.cuda.get_device_properties(1): the GPU at 0000:1b:00 (CUDA_VISIBLE_DEVICES honoured)
        class cuda:
            @staticmethod
            def get_device_properties(device):
                return types.SimpleNamespace(pci_domain_id=0, pci_bus_id=0x1B, pci_device_id=0)

    monkeypatch.setitem(sys.modules, "torch", FakeTorch)
    nvml = FakeNvml(bus_ids=(b"00000000:1b:00.0",))
    monkeypatch.setitem(sys.modules, "fake_nvml", nvml)
    sm_clock.nvml_sm_clock(1, "fake_nvml")()
    assert nvml.handle == ("gpu", b"00000000:1b:00.0")
    nvml = FakeNvml()  # NVML does not know the id: by index, as kvb falls back
    monkeypatch.setitem(sys.modules, "fake_nvml", nvml)
    sm_clock.nvml_sm_clock(1, "fake_nvml")()
    assert nvml.handle == ("gpu", 1)


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
    (lambda d: d["sampling"].update(min_clock_fraction=1.5),
     "request sampling.min_clock_fraction = 1.5 is not allowed (allowed: a number > 0 and <= 1)"),
    (lambda d: d["sampling"].update(min_clock_fraction="0.75"),
     "request sampling.min_clock_fraction = '0.75' is not allowed (allowed: a number > 0 and <= 1)"),
    (lambda d: d["sampling"].update(max_throttled_seconds=0),
     "request sampling.max_throttled_seconds = 0.0 is not allowed (allowed: a finite number of seconds > 0)"),
    (lambda d: d["tensors"]["q"].update(dtype="bf16"), "request tensors.q = "),
])
def test_a_bad_request_field_is_named(tmp_path, change, needle):
    d = good_request()
    change(d)
    with pytest.raises(request.RequestError, match=None) as e:
        request.load_request(str(write_request(tmp_path, d)))
    assert needle in str(e.value)


def test_the_clock_floor_and_throttled_time_come_from_the_request_or_default(tmp_path):
    d = good_request()
    rule = request.load_request(str(write_request(tmp_path, d))).sampling
    assert (rule.min_clock_fraction, rule.max_throttled_seconds) == (0.75, 30.0)  # a request written before them
    d["sampling"].update(min_clock_fraction=0.9, max_throttled_seconds=12.5)
    rule = request.load_request(str(write_request(tmp_path, d))).sampling
    assert (rule.min_clock_fraction, rule.max_throttled_seconds, rule.min_samples) == (0.9, 12.5, 3)


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
    assert rows[0].index("discarded_samples") == rows[0].index("steps_per_sample") + 1
    assert row["discarded_samples"] == ""  # not given: the clock was not checked
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
