"""The timing protocol of kvb's own sweep points, for peers timed in this process.

The same rules as harness/measure/sampling.h and harness/measure/step_timing.h, with the constants kvb passes in its
request (so that both sides keep one set of numbers): warm-up of whole cycles for at least `warmup_cycles` cycles and
`warmup_min_ms`; samples of a whole number of cycles lasting at least `sample_min_ms`; sampling until the spread
(p90 - p10) / (2 median) falls to `target_noise_pct` percent (stop "noise") or, once `min_samples` are taken, the
time budget `max_seconds` or `max_samples` is reached (stop "time"). Latencies are microseconds per layer-step.
Samples the GPU ran throttled are discarded as kvb discards its own (sampling.h, gpu_clock.h below_clock_floor): with
an SM clock, a sample after which the clock reads below `min_clock_fraction` of its maximum is dropped and counted,
and the next one waits for the clock to recover. Plain Python: the replay, the timer and the clock are the caller's
(CUDA graph, CUDA events and NVML on a GPU: peers/sm_clock.py).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence


@dataclass(frozen=True)
class SamplingRule:
    """How long to sample one point (harness/measure/sampling.h SamplingRule)."""

    min_samples: int = 10
    max_samples: int = 1000
    max_seconds: float = 3.0  # seconds of kept samples (throttled time excluded), once min_samples are kept
    target_noise_pct: float = 1.0
    min_clock_fraction: float = 0.75  # a sample ending below this fraction of the maximum SM clock is discarded
    recovery_poll_seconds: float = 0.05  # how often the clock is read while waiting for it to recover, seconds
    max_throttled_seconds: float = 30.0  # longest time on discarded samples and waiting before the point fails


@dataclass(frozen=True)
class StepRule:
    """Warm-up and sample length (harness/measure/step_timing.h): at least `warmup_cycles` cycles and `warmup_min_ms`
    of warm-up; samples of whole cycles lasting at least `sample_min_ms`."""

    warmup_cycles: int = 3
    warmup_min_ms: float = 100.0
    sample_min_ms: float = 2.0


@dataclass
class SampleStats:
    """Median and spread of timed samples, in the samples' unit; `stop` is "noise" or "time". `discarded`: samples
    dropped because the SM clock was below the rule's floor; `clock_checked`: the SM clock could be read (otherwise
    nothing was discarded and the count is unknown)."""

    median: float = 0.0
    p10: float = 0.0
    p90: float = 0.0
    noise_pct: float = 0.0
    samples: int = 0
    stop: str = ""
    discarded: int = 0
    clock_checked: bool = False


# NVML clocks-event reason bits (nvmlClocksEventReason*; harness/measure/gpu_clock.h clock_event).
GPU_IDLE = 0x1
THERMAL_OR_POWER = 0x4 | 0x8 | 0x20 | 0x40 | 0x80  # sw power cap, hw slowdown, sw/hw thermal, hw power brake


@dataclass(frozen=True)
class ClockReading:
    """One reading of the SM clock (harness/measure/gpu_clock.h ClockSample): current and maximum in MHz, and the
    active NVML clocks-event reason bits; None where a value could not be read."""

    sm_mhz: Optional[int]
    max_sm_mhz: Optional[int] = None
    event_reasons: Optional[int] = None


class ThrottledError(RuntimeError):
    """The SM clock stayed below the rule's floor: the point cannot be timed unthrottled."""


@dataclass
class StepTiming:
    """Samples in microseconds per layer-step, and model steps per sample (a whole number of cycles)."""

    stats: SampleStats
    steps_per_sample: int


def percentile(values: Sequence[float], q: float) -> float:
    """Percentile q in [0, 1] with linear interpolation between order statistics; NaN for no values."""
    if not values:
        return math.nan
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])


def summarize(values: Sequence[float]) -> SampleStats:
    """Median, p10, p90 and noise_pct = (p90 - p10) / (2 median) * 100 (0 when the median is not positive)."""
    s = SampleStats(median=percentile(values, 0.5), p10=percentile(values, 0.1), p90=percentile(values, 0.9),
                    samples=len(values))
    s.noise_pct = (s.p90 - s.p10) / (2 * s.median) * 100 if s.median > 0 else 0.0
    return s


def below_clock_floor(r: Optional[ClockReading], min_fraction: float) -> bool:
    """Whether reading `r` is throttled (gpu_clock.h below_clock_floor): the clock is below `min_fraction` of its
    maximum, unless the only active clocks-event reason is the GPU being idle. False when the clock, its maximum or
    the reasons are unknown: an idle GPU could not be told from a throttled one."""
    if r is None or r.sm_mhz is None or not r.max_sm_mhz or r.event_reasons is None:
        return False
    if r.sm_mhz >= min_fraction * r.max_sm_mhz:
        return False
    idle_only = bool(r.event_reasons & GPU_IDLE) and not r.event_reasons & THERMAL_OR_POWER
    return not idle_only


def _clock_text(r: Optional[ClockReading]) -> str:
    """"CUR of MAX MHz", "?" for a value not read."""
    cur = "?" if r is None or r.sm_mhz is None else str(r.sm_mhz)
    top = "?" if r is None or r.max_sm_mhz is None else str(r.max_sm_mhz)
    return f"{cur} of {top} MHz"


class _Throttle:
    """The discard bookkeeping of one sample_until: the last SM clock reading, samples discarded, and seconds spent
    on discarded samples and waiting for the clock."""

    def __init__(self, sm_clock: Callable[[], Optional[ClockReading]], rule: SamplingRule,
                 clock: Callable[[], float], sleep: Callable[[float], None]):
        self.sm_clock, self.rule, self.clock, self.sleep = sm_clock, rule, clock, sleep
        self.last: Optional[ClockReading] = None
        self.read_ok = False
        self.discarded = 0
        self.seconds = 0.0

    def read(self) -> bool:
        """Reads the SM clock; True when it is below the floor."""
        self.last = self.sm_clock()
        self.read_ok = self.read_ok or (self.last is not None and self.last.sm_mhz is not None)
        return below_clock_floor(self.last, self.rule.min_clock_fraction)

    def give_up(self, why: str) -> None:
        """Raises ThrottledError naming the clock, the floor and the count."""
        raise ThrottledError(f"SM clock below {self.rule.min_clock_fraction * 100:g}% of its maximum "
                             f"({_clock_text(self.last)}): {self.discarded} samples discarded; {why}")

    def discard(self, taken: float) -> None:
        """Counts the sample that started at wall time `taken` as discarded; gives up past max_samples."""
        self.discarded += 1
        self.seconds += self.clock() - taken
        if self.discarded > self.rule.max_samples:
            self.give_up(f"more than {self.rule.max_samples} samples")

    def wait(self) -> None:
        """Reads the clock every recovery_poll_seconds until it is back above the floor; gives up once the throttled
        time would pass max_throttled_seconds."""
        start = self.clock()
        while below_clock_floor(self.last, self.rule.min_clock_fraction):
            if self.seconds + self.clock() - start > self.rule.max_throttled_seconds:
                self.give_up(f"it did not recover within {self.rule.max_throttled_seconds:g} s")
            self.sleep(self.rule.recovery_poll_seconds)
            self.read()
        self.seconds += self.clock() - start


def sample_until(sample: Callable[[], float], rule: SamplingRule,
                 clock: Callable[[], float] = time.monotonic,
                 sm_clock: Optional[Callable[[], Optional[ClockReading]]] = None,
                 sleep: Callable[[float], None] = time.sleep) -> SampleStats:
    """Calls `sample()` until the rule stops it; `clock()` gives seconds (wall clock by default), `sleep(seconds)`
    waits. With `sm_clock` (returns a ClockReading, or None when the clock cannot be read): the clock is read once
    before the first sample and after every sample; a sample after which it is below the floor is discarded and
    counted, and before the next sample the clock is read every recovery_poll_seconds until it is back. Throttled
    time does not count toward max_seconds. Raises ThrottledError naming the clock when more than
    max_throttled_seconds went into discarded samples and waiting, or more than max_samples were discarded."""
    values: list[float] = []
    throttle = _Throttle(sm_clock, rule, clock, sleep) if sm_clock else None
    start = clock()
    if throttle and throttle.read():
        throttle.wait()
    while True:
        taken = clock() if throttle else 0.0
        value = sample()
        if throttle and throttle.read():
            throttle.discard(taken)
            throttle.wait()
            continue
        values.append(value)
        n = len(values)
        if n < rule.min_samples:
            continue
        s = summarize(values)
        if throttle:
            s.discarded, s.clock_checked = throttle.discarded, throttle.read_ok
        if s.noise_pct <= rule.target_noise_pct:
            s.stop = "noise"
            return s
        throttled_s = throttle.seconds if throttle else 0.0
        if clock() - start - throttled_s >= rule.max_seconds or n >= rule.max_samples:
            s.stop = "time"
            return s


def time_model_steps(replay_ms: Callable[[int], float], cycle: int, layer_steps: int, rule: SamplingRule,
                     step_rule: StepRule = StepRule(), before_sample: Optional[Callable[[], None]] = None,
                     on_timing: Optional[Callable[[], None]] = None,
                     sm_clock: Optional[Callable[[], Optional[ClockReading]]] = None) -> StepTiming:
    """Warms up and samples `replay_ms(steps)` (replays `steps` model steps, returns their milliseconds), one model
    step being `layer_steps` layer-steps and `cycle` steps one whole cycle. `before_sample()` runs untimed before
    each sample (the cold-L2 flush); `on_timing()` once between warm-up and the first sample. With `sm_clock`,
    throttled samples are discarded (sample_until). Raises ValueError for a cycle or layer_steps below 1, and
    ThrottledError when the clock does not recover."""
    if cycle < 1 or layer_steps < 1:
        raise ValueError(f"cycle = {cycle} and layer_steps = {layer_steps} must be at least 1")
    warm_ms, warm_steps = 0.0, 0
    while warm_steps < step_rule.warmup_cycles * cycle or warm_ms < step_rule.warmup_min_ms:
        warm_ms += replay_ms(cycle)
        warm_steps += cycle
    step_ms = warm_ms / warm_steps
    steps_per_sample = max(1, math.ceil(step_rule.sample_min_ms / (step_ms * cycle))) * cycle if step_ms > 0 else cycle
    layer_steps_per_sample = steps_per_sample * layer_steps
    if on_timing:
        on_timing()

    def one() -> float:
        if before_sample:
            before_sample()
        return replay_ms(steps_per_sample) * 1e3 / layer_steps_per_sample

    return StepTiming(sample_until(one, rule, sm_clock=sm_clock), steps_per_sample)
