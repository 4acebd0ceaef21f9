"""The timing protocol of kvb's own sweep points, for peers timed in this process.

The same rules as harness/measure/sampling.h and harness/measure/step_timing.h, with the constants kvb passes in its
request (so that both sides keep one set of numbers): warm-up of whole cycles for at least `warmup_cycles` cycles and
`warmup_min_ms`; samples of a whole number of cycles lasting at least `sample_min_ms`; sampling until the spread
(p90 - p10) / (2 median) falls to `target_noise_pct` percent (stop "noise") or, once `min_samples` are taken, the
time budget `max_seconds` or `max_samples` is reached (stop "time"). Latencies are microseconds per layer-step.
Plain Python: the replay and the timer are the caller's (CUDA graph and CUDA events on a GPU).
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
    max_seconds: float = 3.0
    target_noise_pct: float = 1.0


@dataclass(frozen=True)
class StepRule:
    """Warm-up and sample length (harness/measure/step_timing.h): at least `warmup_cycles` cycles and `warmup_min_ms`
    of warm-up; samples of whole cycles lasting at least `sample_min_ms`."""

    warmup_cycles: int = 3
    warmup_min_ms: float = 100.0
    sample_min_ms: float = 2.0


@dataclass
class SampleStats:
    """Median and spread of timed samples, in the samples' unit; `stop` is "noise" or "time"."""

    median: float = 0.0
    p10: float = 0.0
    p90: float = 0.0
    noise_pct: float = 0.0
    samples: int = 0
    stop: str = ""


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


def sample_until(sample: Callable[[], float], rule: SamplingRule,
                 clock: Callable[[], float] = time.monotonic) -> SampleStats:
    """Calls `sample()` until the rule stops it; `clock()` gives seconds (wall clock by default)."""
    values: list[float] = []
    start = clock()
    while True:
        values.append(sample())
        n = len(values)
        if n < rule.min_samples:
            continue
        s = summarize(values)
        if s.noise_pct <= rule.target_noise_pct:
            s.stop = "noise"
            return s
        if clock() - start >= rule.max_seconds or n >= rule.max_samples:
            s.stop = "time"
            return s


def time_model_steps(replay_ms: Callable[[int], float], cycle: int, layer_steps: int, rule: SamplingRule,
                     step_rule: StepRule = StepRule(), before_sample: Optional[Callable[[], None]] = None,
                     on_timing: Optional[Callable[[], None]] = None) -> StepTiming:
    """Warms up and samples `replay_ms(steps)` (replays `steps` model steps, returns their milliseconds), one model
    step being `layer_steps` layer-steps and `cycle` steps one whole cycle. `before_sample()` runs untimed before
    each sample (the cold-L2 flush); `on_timing()` once between warm-up and the first sample. Raises ValueError for
    a cycle or layer_steps below 1."""
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

    return StepTiming(sample_until(one, rule), steps_per_sample)
