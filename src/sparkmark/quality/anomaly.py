"""DetectAnomalies' model: a metric's next value predicted from its history by a robust
seasonal-trend decomposition, and judged against the spread of what the model could
not explain.

A metric whose values are all positive (a row count, a completeness, a sum of amounts)
is modelled on its logarithm, so that a season and a trend act in proportion to the
level, as they do on data that grows; the band is turned back into the metric's units.

The history is the metric's values in earlier evaluations, oldest first, one position
per evaluation; a value excluded by the user (an annotation) is NaN: it keeps its
position, so the season's phases stay in step, and takes no part in the fit.

1. **Trend**: the Theil-Sen line (the median of the slopes between every two points),
   which a few anomalous points in the history cannot tilt; once a season is found, the
   line is fitted again on the data without it, and the season again on what is left.
2. **Season**: on what the trend leaves, the periods of scheduled runs' calendars (7,
   24, 12 and 30 runs) are tried where the history holds two cycles: a season is the
   median of each phase. The period kept is the one that explains the most variance once
   the p values it fits are paid for (the residual variance is scaled by
   (n - 1) / (n - p)), if that share is at least half; the shortest period within 90% of
   the best wins, so a multiple of the season is not taken for it.
3. **Band**: the residuals' spread, 1.4826 × their median absolute deviation (the
   standard deviation of normal noise, and not widened by the anomalies in the history),
   each residual taken from the season of the other points of its phase, as a
   prediction would miss it. The next value is anomalous when it lies more than 3 of
   those from the prediction.

With fewer than 14 usable points (two cycles of the weekly season; a season the model
cannot see yet would look like a run of anomalies) the model is not fitted: the value
must lie within the mean ± 3 (sample) standard deviations of the history; with fewer
than 3 it is not judged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MODEL_POINTS = 14  # fewer usable points (two weeks of daily runs): the mean ± 3σ band
BAND_POINTS = 3  # fewer: not judged
SIGMAS = 3.0
SEASON_SHARE = 0.5
# The seasons a metric of scheduled runs has: a week of daily runs, a day of hourly
# runs, a year of monthly runs, a month of daily runs. Trying every period instead
# finds a season in plain noise (the luckiest of many is always good).
PERIODS = (7, 24, 12, 30)
MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class Verdict:
    anomalous: bool
    method: str  # "seasonal-trend", "mean ± 3σ" or "not judged"
    expected: float | None = None
    low: float | None = None
    high: float | None = None
    period: int | None = None  # the season found, if any
    points: int = 0  # the history's usable points

    def notes(self) -> dict[str, object]:
        """What the verdict rests on, for the rule's outcome."""
        found: dict[str, object] = {"method": self.method, "history_points": self.points}
        if self.expected is not None:
            found.update(expected=self.expected, expected_low=self.low, expected_high=self.high)
        if self.period:
            found["season"] = self.period
        return found


def judge(history: Sequence[float], value: float, sigmas: float = SIGMAS) -> Verdict:
    """Whether ``value``, the metric's next value, is anomalous given ``history``."""
    y = np.asarray(history, dtype=float)
    t = np.arange(len(y), dtype=float)
    usable = ~np.isnan(y)
    n = int(usable.sum())
    if n < BAND_POINTS:
        return Verdict(False, "not judged", points=n)
    if n < MODEL_POINTS:
        mean, spread = float(y[usable].mean()), float(y[usable].std(ddof=1))
        low, high = mean - sigmas * spread, mean + sigmas * spread
        return Verdict(not low <= value <= high, "mean ± 3σ", mean, low, high, points=n)
    scaled = bool(np.all(y[usable] > 0))  # in proportion: fitted on the logarithms
    fit = fit_model(t[usable], np.log(y[usable]) if scaled else y[usable])
    centre = fit.predict(float(len(y)))
    margin = sigmas * fit.spread
    low, expected, high = centre - margin, centre, centre + margin
    if scaled:
        low, expected, high = math.exp(low), math.exp(expected), math.exp(high)
    return Verdict(not low <= value <= high, "seasonal-trend", expected, low, high, fit.period, n)


@dataclass(frozen=True)
class Fit:
    slope: float
    intercept: float
    period: int | None
    season: tuple[float, ...]  # by phase (t mod period)
    spread: float

    def predict(self, t: float) -> float:
        level = self.intercept + self.slope * t
        if self.period:
            level += self.season[int(t) % self.period]
        return level


def fit_model(t: np.ndarray, y: np.ndarray) -> Fit:
    """Trend, season and residual spread of the points ``(t, y)``."""
    slope, intercept = _theil_sen(t, y)
    detrended = y - (intercept + slope * t)
    period, season = _season(t, detrended)
    if period:  # the trend again, on the data without its season (a season tilts the first)
        seasonal = np.array([season[int(x) % period] for x in t])
        slope, intercept = _theil_sen(t, y - seasonal)
        detrended = y - (intercept + slope * t)
        season = _phase_medians(t, detrended, period)
    residual = _held_out(t, detrended, period) if period else detrended
    spread = _spread(residual, y)
    return Fit(slope, intercept, period, tuple(season), spread)


def _theil_sen(t: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    i, j = np.triu_indices(len(t), k=1)
    slope = float(np.median((y[j] - y[i]) / (t[j] - t[i])))
    return slope, float(np.median(y - slope * t))


def _phase_medians(t: np.ndarray, d: np.ndarray, period: int) -> list[float]:
    phases = t.astype(int) % period
    return [float(np.median(d[phases == k])) if np.any(phases == k) else 0.0 for k in range(period)]


def _held_out(t: np.ndarray, d: np.ndarray, period: int) -> np.ndarray:
    """Each point's residual from the season of the other points of its phase: what a
    prediction misses, where an in-sample median would fit a phase's middle point
    exactly and narrow the band."""
    phases = t.astype(int) % period
    out = np.empty_like(d)
    for i in range(len(d)):
        others = d[(phases == phases[i]) & (np.arange(len(d)) != i)]
        out[i] = d[i] - (float(np.median(others)) if len(others) else 0.0)
    return out


def _season(t: np.ndarray, d: np.ndarray) -> tuple[int | None, list[float]]:
    n = len(d)
    total = float(np.var(d))
    if total == 0.0:
        return None, []
    shares: dict[int, tuple[float, list[float]]] = {}
    for period in (p for p in PERIODS if 2 * p <= n):
        season = _phase_medians(t, d, period)
        left = d - np.array([season[int(x) % period] for x in t])
        paid = float(np.var(left)) * (n - 1) / max(n - period, 1)
        shares[period] = (1.0 - paid / total, season)
    if not shares:
        return None, []
    best = max(share for share, _ in shares.values())
    if best < SEASON_SHARE:
        return None, []
    period = min(p for p, (share, _) in shares.items() if share >= 0.9 * best)
    return period, shares[period][1]


def _spread(residual: np.ndarray, y: np.ndarray) -> float:
    # Rounding's size in these units: no spread is taken to be smaller.
    floor = 1e-9 * max(1.0, float(np.max(np.abs(y))))
    mad = float(np.median(np.abs(residual - np.median(residual)))) * MAD_TO_SIGMA
    if mad > floor:
        return mad
    # More than half the residuals are zero (a series that repeats itself): the spread
    # of the others, or, when the model explains every point, rounding's.
    off = residual[np.abs(residual) > floor]
    return max(float(np.std(off)), floor) if len(off) else floor


def outside_band(history: Sequence[float], value: float) -> bool:
    """Whether ``value`` lies outside the mean ± 3σ (population σ) of every earlier value:
    how DetectAnomalies judged before this model, kept as the baseline it is measured
    against (bench/anomaly.py)."""
    kept = [x for x in history if not math.isnan(x)]
    if len(kept) < BAND_POINTS:
        return False
    mean = sum(kept) / len(kept)
    spread = math.sqrt(sum((x - mean) ** 2 for x in kept) / len(kept))
    return not mean - SIGMAS * spread <= value <= mean + SIGMAS * spread


def walk_forward(series: Sequence[float], detect, labelled: Sequence[int] = (), warmup: int = 3) -> list[int]:
    """The positions ``detect(history, value)`` flags, each point judged on the ones
    before it, as a user reviewing each alert would have it: a flagged point that is a
    true anomaly (in ``labelled``) is excluded from later histories (NaN keeps its
    place); a false alarm is kept as the normal value it is."""
    truth = set(labelled)
    history: list[float] = []
    flagged: list[int] = []
    for i, value in enumerate(series):
        hit = i >= warmup and detect(history, value)
        if hit:
            flagged.append(i)
        history.append(math.nan if hit and i in truth else float(value))
    return flagged


def precision_recall(flagged: Sequence[int], labelled: Sequence[int]) -> tuple[float, float]:
    found, truth = set(flagged), set(labelled)
    hits = len(found & truth)
    precision = hits / len(found) if found else 1.0
    recall = hits / len(truth) if truth else 1.0
    return precision, recall
