"""DetectAnomalies' learned model, without Spark: a robust seasonal-trend decomposition
judged on the fixture series (tests/fixtures/quality/anomaly_series.json, written from
fixed seeds by bench/anomaly.py), beside the mean ± 3σ band it replaces."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from sparkmark.quality.anomaly import judge, outside_band, precision_recall, walk_forward
from sparkmark.quality.statistics import describe

SERIES = {
    s["name"]: s
    for s in json.loads((Path(__file__).parent / "fixtures" / "quality" / "anomaly_series.json").read_text())[
        "series"
    ]
}


band = outside_band


def flagged(name, detect):
    s = SERIES[name]
    return walk_forward(s["values"], detect, s["anomalies"]), s["anomalies"]


@pytest.mark.parametrize(
    "name", ["daily rows, weekly season", "daily rows, weekly season, growing", "hourly rows, daily season"]
)
def test_every_injected_anomaly_in_a_seasonal_series_is_flagged_where_the_band_misses_most(name):
    found, truth = flagged(name, lambda h, v: judge(h, v).anomalous)
    assert set(truth) <= set(found)
    band_found, _ = flagged(name, band)
    assert precision_recall(band_found, truth)[1] < 0.5  # the season widens the band past them
    # the false alarms: the first weekend (before any history shows one) and at most three more
    assert len(set(found) - set(truth)) <= 4


def test_the_season_is_found_and_a_seasonal_low_is_not_an_anomaly():
    s = SERIES["daily rows, weekly season"]
    low_day = next(i for i in range(63, 70) if i % 7 == 6 and i not in s["anomalies"])  # 0.55 of a weekday
    verdict = judge(s["values"][:low_day], s["values"][low_day])  # the history's anomalies left in
    assert verdict.period == 7 and verdict.method == "seasonal-trend" and not verdict.anomalous
    assert verdict.expected < 0.7 * max(s["values"][:low_day])


def test_a_growing_metric_is_expected_to_keep_growing():
    history = [100.0 * 1.02**i for i in range(30)]
    verdict = judge(history, 100.0 * 1.02**30)
    assert not verdict.anomalous and verdict.expected == pytest.approx(100 * 1.02**30, rel=1e-3)
    # the band of every earlier value calls the next point of the same trend an anomaly
    assert band(history, 100.0 * 1.02**40)
    assert not judge(history + [100.0 * 1.02**i for i in range(30, 40)], 100.0 * 1.02**40).anomalous


def test_short_and_constant_histories():
    assert judge([], 5).method == "not judged" and not judge([1, 2], 99).anomalous
    short = judge([9, 10, 11], 5)  # mean 10, sample σ 1
    assert short.method == "mean ± 3σ" and short.anomalous and short.low == pytest.approx(7.0)
    assert judge([5.0] * 20, 5.0).anomalous is False
    assert judge([5.0] * 20, 5.01).anomalous  # a constant history: any change stands out


def test_an_excluded_point_keeps_its_place_in_the_season():
    week = [100.0, 104, 108, 102, 97, 62, 55] * 4
    with_gap = list(week)
    with_gap[10] = math.nan  # excluded: the phases after it stay in step
    next_value = week[len(week) % 7]
    for history in (week, with_gap):
        verdict = judge(history, next_value)
        assert verdict.period == 7 and not verdict.anomalous
        assert verdict.expected == pytest.approx(next_value, rel=0.02)


def test_the_model_beats_the_band_on_every_fixture_series_taken_together():
    totals = {"model": [0, 0, 0], "band": [0, 0, 0]}
    for name in SERIES:
        for label, detect in (("model", lambda h, v: judge(h, v).anomalous), ("band", band)):
            found, truth = flagged(name, detect)
            totals[label][0] += len(set(found) & set(truth))
            totals[label][1] += len(found)
            totals[label][2] += len(truth)
    model_recall = totals["model"][0] / totals["model"][2]
    band_recall = totals["band"][0] / totals["band"][2]
    assert model_recall == 1.0 and band_recall < 0.6
    assert totals["model"][0] / totals["model"][1] >= 0.7


def test_glue_names_of_stored_metrics():
    assert describe("Dataset.*.RowCount") == describe("Dataset.*.RowCount")
    found = describe("Column.email.Completeness")
    assert (found.level, found.name, found.columns) == ("Column", "Completeness", ("email",))
    found = describe("Column.status.ColumnValues.Compliance")
    assert (found.name, found.columns) == ("ColumnValues.Compliance", ("status",))
    found = describe("Multicolumn.a,b.ColumnCorrelation")
    assert (found.level, found.columns) == ("Multicolumn", ("a", "b"))
    found = describe("Dataset.ref.RowCountMatch")
    assert (found.level, found.datasets, found.columns) == ("Dataset", ("ref",), ())
    assert describe("Dataset.*.RowCount").name == "RowCount"


def test_walk_forward_keeps_false_alarms_and_excludes_confirmed_anomalies():
    series = [10.0] * 20 + [50.0] + [10.0] * 5
    seen = []

    def detect(history, value):
        seen.append(list(history))
        return value > 20

    assert walk_forward(series, detect, labelled=[20]) == [20]
    assert math.isnan(seen[-1][20])
    assert precision_recall([1, 2], [2, 3]) == (0.5, 0.5) and precision_recall([], []) == (1.0, 1.0)
    assert np.isclose(precision_recall([4], [4])[0], 1.0)
