"""Histograms as HBase publishes them on `/jmx`, and the snapshot period that resets them.

HBase's metrics2 histograms (`org.apache.hadoop.metrics2.lib.MutableHistogram` over
`org.apache.hadoop.hbase.metrics.impl.HistogramImpl`; `MutableTimeHistogram` / `MutableSizeHistogram` add range
counters through `MutableRangeHistogram`):

- the name is capitalised (`StringUtils.capitalize`): `queueCallTime` is published as `QueueCallTime_*`;
- each snapshot (`HistogramImpl.snapshot()` = `snapshotAndReset()`) publishes `<Name>_num_ops` (the counter: every
  value ever added, cumulative), then `_min`, `_max`, `_mean`, `_25th_percentile`, `_median`, `_75th_percentile`,
  `_90th_percentile`, `_95th_percentile`, `_98th_percentile`, `_99th_percentile`, `_99.9th_percentile` over the
  values added since the previous snapshot (all 0 when there was none), as integers (HBase's `Snapshot` gives
  longs; the mean is the integer division of the sum by the count);
- a range histogram then adds `<Name>_<TimeRangeCount|SizeRangeCount>_<low>-<high>` (and `_<last>-inf`) for the
  values of the snapshot in (low, high], only for ranges that are not empty (`updateSnapshotRangeMetrics`).

Percentiles here are exact nearest-rank values over the period's values (HBase's FastLongHistogram interpolates
inside bins, so its figures are approximate); past `max_samples` values in one period a uniform reservoir
sample is kept (count, min, max, mean and range counts stay exact).

`PeriodicSnapshot` is the JMX cache in front of a metrics source (Hadoop's `MetricsSourceAdapter`, whose TTL is
the metrics period, 10 s in HBase): a read finds the last snapshot; a read that finds it older than the period
takes a new one, which resets the histograms. So `_max` is the largest value of the last period that a reader
triggered, and 0 once a period passed without values.
"""
from __future__ import annotations

import bisect
import random
import threading
import time
from typing import Callable

# MutableTimeHistogram.RANGES (milliseconds) and MutableSizeHistogram.RANGES (bytes).
TIME_RANGES = (1, 3, 10, 30, 100, 300, 1000, 3000, 10000, 30000, 60000, 120000, 300000, 600000)
SIZE_RANGES = (10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000)
TIME_RANGE_TYPE = "TimeRangeCount"
SIZE_RANGE_TYPE = "SizeRangeCount"
MAX_SAMPLES = 4096

# MutableHistogram.updateSnapshotMetrics, in its order: (suffix, quantile in thousandths).
PERCENTILES = (("_25th_percentile", 250), ("_median", 500), ("_75th_percentile", 750),
               ("_90th_percentile", 900), ("_95th_percentile", 950), ("_98th_percentile", 980),
               ("_99th_percentile", 990), ("_99.9th_percentile", 999))


def capitalize(name: str) -> str:
    """`StringUtils.capitalize`: the first character upper-cased, the rest unchanged."""
    return name[:1].upper() + name[1:]


def nearest_rank(ordered: list[int], permille: int) -> int:
    """The quantile `permille`/1000 of sorted values by the nearest-rank rule: the value at rank
    ceil(permille * n / 1000) (1-based; integer arithmetic, so 0.9 * 30 is exactly 27)."""
    n = len(ordered)
    if not n:
        return 0
    rank = (permille * n + 999) // 1000
    return ordered[min(max(rank, 1), n) - 1]


class Histogram:
    """One histogram; not thread-safe (its owner serialises `add` and `snapshot`)."""

    __slots__ = ("name", "range_type", "ranges", "max_samples", "count", "_n", "_min", "_max", "_sum",
                 "_samples", "_buckets", "_random")

    def __init__(self, name: str, range_type: str | None = None, ranges: tuple[int, ...] = (),
                 max_samples: int = MAX_SAMPLES):
        self.name = capitalize(name)
        self.range_type = range_type
        self.ranges = tuple(ranges)
        self.max_samples = max_samples
        self.count = 0  # HistogramImpl's counter: never reset
        self._random = random.Random(0)
        self._reset()

    @classmethod
    def time(cls, name: str, **kw) -> "Histogram":
        """`newTimeHistogram(name)`: milliseconds, with `TimeRangeCount` ranges."""
        return cls(name, TIME_RANGE_TYPE, TIME_RANGES, **kw)

    @classmethod
    def size(cls, name: str, **kw) -> "Histogram":
        """`newSizeHistogram(name)`: bytes, with `SizeRangeCount` ranges."""
        return cls(name, SIZE_RANGE_TYPE, SIZE_RANGES, **kw)

    def _reset(self) -> None:
        self._n = 0
        self._min = 0
        self._max = 0
        self._sum = 0
        self._samples: list[int] = []
        self._buckets = [0] * (len(self.ranges) + 1)

    def add(self, value: int) -> None:
        self.count += 1
        n = self._n = self._n + 1
        if n == 1 or value < self._min:
            self._min = value
        if value > self._max:
            self._max = value
        self._sum += value
        samples = self._samples
        if len(samples) < self.max_samples:
            samples.append(value)
        else:
            j = self._random.randrange(n)  # reservoir sampling: every value kept with the same chance
            if j < self.max_samples:
                samples[j] = value
        if self.ranges:
            # getCountAtOrBelow(range): a value v falls in (ranges[i-1], ranges[i]] for the first range >= v.
            self._buckets[bisect.bisect_left(self.ranges, value)] += 1

    def snapshot(self) -> dict[str, int]:
        """`snapshot()` then `updateSnapshotMetrics` (+ `updateSnapshotRangeMetrics`): the published values;
        the period's values are reset, `_num_ops` is not."""
        name = self.name
        n = self._n
        ordered = sorted(self._samples)
        out = {name + "_num_ops": self.count, name + "_min": self._min if n else 0, name + "_max": self._max,
               name + "_mean": self._sum // n if n else 0}
        for suffix, permille in PERCENTILES:
            out[name + suffix] = nearest_rank(ordered, permille)
        if self.range_type:
            low = 0
            for high, hits in zip(self.ranges, self._buckets):
                if hits:
                    out[f"{name}_{self.range_type}_{low}-{high}"] = hits
                low = high
            if self._buckets[-1]:
                out[f"{name}_{self.range_type}_{low}-inf"] = self._buckets[-1]
        self._reset()
        return out


class PeriodicSnapshot:
    """The JMX cache of one metrics source: `get()` answers the last snapshot, taking a new one (through `take`,
    which resets the source's histograms) when the last is `period_s` old or older."""

    def __init__(self, period_s: float, take: Callable[[], dict], clock: Callable[[], float] = time.monotonic):
        self.period_s = period_s
        self._take = take
        self._clock = clock
        self._taken_at: float | None = None
        self._values: dict = {}
        self._lock = threading.Lock()

    def get(self) -> dict:
        with self._lock:
            now = self._clock()
            if self._taken_at is None or now - self._taken_at >= self.period_s:
                self._values = self._take()
                self._taken_at = now
            return self._values
