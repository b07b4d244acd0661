"""Kafka's windowed rate and throttle time, as its client quotas measure them.

`SampledRate` is Kafka's ``Rate`` over a ``WindowedSum`` (clients' metrics
``SampledStat``), with ``quota.window.num`` samples of
``quota.window.size.seconds`` each:

- ``record(value, now)`` adds to the current sample, first moving to the next
  one (reset, or a new one while fewer than samples + 1 exist: one extra for a
  sample overlapping the window's start) when the current one is a whole
  window old.
- ``measure(now)`` is the sum of the samples per second of `window_ms`. First
  every sample whose last value is ``samples * window`` old is reset. The
  window is the time since the oldest sample started, but never less than
  ``samples - 1`` whole windows plus the current part: a client's first bytes
  are measured as if spread over ten seconds (with the defaults), so a new
  client may send a burst of ``(samples - 1) * window * quota`` bytes before
  it is throttled.

`throttle_time_ms` is Kafka's ``QuotaUtils.throttleTime``: a rate ``O`` above
the bound ``T`` over a window ``W`` comes back to ``T`` after a delay ``X``
with ``O * W / (W + X) = T``, so ``X = (O - T) / T * W``, rounded half up.

Times are integer milliseconds of a monotonic clock; values are floats
(bytes, or percent-seconds of one thread for ``request_percentage``).
"""

from __future__ import annotations

import math


class _Sample:
    __slots__ = ("value", "events", "start_ms", "last_ms")

    def __init__(self, now_ms: int) -> None:
        self.reset(now_ms)

    def reset(self, now_ms: int) -> None:
        self.value = 0.0
        self.events = 0
        self.start_ms = now_ms
        self.last_ms = now_ms


class SampledRate:
    """A rate per second over ``samples`` windows of ``window_ms`` (Kafka's Rate + WindowedSum)."""

    __slots__ = ("samples", "window", "_list", "_current")

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = max(samples, 1)
        self.window = max(window_ms, 1)
        self._list: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window:
            sample = self._advance(now_ms)
        sample.value += value
        sample.events += 1
        sample.last_ms = now_ms

    def measure(self, now_ms: int) -> float:
        """The rate per second at ``now_ms``."""
        self._purge(now_ms)
        total = sum(s.value for s in self._list)
        return total / (self.window_ms(now_ms) / 1000)

    def window_ms(self, now_ms: int) -> int:
        """The time the rate is measured over (at least ``samples - 1`` whole windows, and 1 ms)."""
        self._purge(now_ms)
        if not self._list:
            self._list.append(_Sample(now_ms))
        elapsed = now_ms - min(s.start_ms for s in self._list)
        full = elapsed // self.window
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window
        return max(elapsed, 1)

    def idle_since(self, now_ms: int) -> int:
        """Milliseconds since the last value was recorded (a large number when never)."""
        if not self._list:
            return now_ms
        return now_ms - max(s.last_ms for s in self._list)

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._list:
            self._list.append(_Sample(now_ms))
        return self._list[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._list):
            sample = _Sample(now_ms)
            self._list.append(sample)
            return sample
        sample = self._list[self._current]
        sample.reset(now_ms)
        return sample

    def _purge(self, now_ms: int) -> None:
        expire = self.samples * self.window
        for sample in self._list:
            if now_ms - sample.last_ms >= expire:
                sample.reset(now_ms)


def throttle_time_ms(observed: float, bound: float, window_ms: int) -> int:
    """Kafka's QuotaUtils.throttleTime: ``(O - T) / T * W`` rounded half up (0 when within the bound)."""
    if observed <= bound:
        return 0
    return math.floor((observed - bound) / bound * window_ms + 0.5)


def record_and_throttle(
    rate: SampledRate, value: float, bound: float, now_ms: int, max_ms: int | None = None
) -> int:
    """Record ``value`` (Kafka's Sensor.record with quota checks), then the throttle time: 0 when
    the rate stays within ``bound``, else `throttle_time_ms` (capped at ``max_ms`` when given)."""
    rate.record(value, now_ms)
    observed = rate.measure(now_ms)
    if observed <= bound:
        return 0
    ms = throttle_time_ms(observed, bound, rate.window_ms(now_ms))
    return ms if max_ms is None else min(ms, max_ms)


class TokenBucket:
    """Kafka's ``TokenBucket`` (the measure of ``controller_mutation_rate``, KIP-599).

    Credits refill at ``rate`` per second up to ``burst`` = rate x ``quota.window.num`` x the
    window in seconds, starting full; a mutation takes its partition count, possibly driving the
    credits below zero. Below zero the quota is exceeded for ``-credits / rate`` seconds.
    """

    def __init__(self) -> None:
        self.credits: float | None = None  # None: full (no time has passed yet)
        self.last_ms = 0
        self.rate = self.burst = 0.0  # as last used

    def is_full(self, now_ms: int) -> bool:
        """Whether it has refilled completely: forgetting it then changes nothing."""
        if self.credits is None:
            return True
        return self.credits + self.rate * max(now_ms - self.last_ms, 0) / 1000 >= self.burst

    def _refill(self, rate: float, burst: float, now_ms: int) -> float:
        self.rate, self.burst = rate, burst
        if self.credits is None:
            self.credits = burst
        else:
            self.credits = min(burst, self.credits + rate * max(now_ms - self.last_ms, 0) / 1000)
        self.last_ms = now_ms
        return self.credits

    def take(self, value: float, rate: float, burst: float, now_ms: int) -> None:
        self.credits = min(burst, self._refill(rate, burst, now_ms) - value)

    def throttle_ms(self, rate: float, burst: float, now_ms: int) -> int:
        """How long until the credits are back to zero (0 when not below it): Kafka rounds."""
        credits = self._refill(rate, burst, now_ms)
        return 0 if credits >= 0 else round(-credits / rate * 1000)
