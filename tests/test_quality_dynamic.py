"""Dynamic rules over a job's own history: twelve bookmarked runs of one job whose new
input grows by ten rows a run, dips, then drops to five rows. Each rule form of AWS's
DQDL reference ("Dynamic rules") is held to the outcome its documented meaning gives
for each run, worked out by hand below."""

from __future__ import annotations

import json

from .conftest import Runner

# new rows each run; the email column's completeness is 1.0 until run 11 (91 of 95)
# and run 12 (4 of 5)
COUNTS = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 95, 5]
MISSING_EMAILS = {11: 4, 12: 1}

P, F = "Passed", "Failed"
EXPECTED = {
    # the previous run's count; the first run compares with last()'s 0.0
    "RowCount > last()": [P] * 10 + [F, F],
    # 95 > 0.8 * avg(100, 90, 80) = 72; 5 < 0.8 * avg(95, 100, 90) = 76
    "RowCount > avg(last(3)) * 0.8": [P] * 11 + [F],
    # exclusive bounds: each growing run lies above the last ten's max + 1; 95 lies
    # inside (9, 101); 5 below min(20..100) - 1
    "RowCount between min(last(10)) - 1 and max(last(10)) + 1": [F] * 10 + [P, F],
    # runs 1 to 3 have fewer than three earlier values, so position 2 does not exist
    "RowCount >= index(last(3), 2)": [F] * 3 + [P] * 8 + [F],
    # 91/95 = 0.958 >= 1.0 - 0.05; then 0.8 < min(0.958, 1, 1, 1, 1) - 0.05
    'Completeness "email" >= min(last(5)) - 0.05': [P] * 11 + [F],
    # left to right: abs(-2 * max(...)); the first run's bound is 0
    "RowCount <= abs(-2 * max(last(3)))": [F] + [P] * 11,
    # the share of emails that match: 0.958 >= avg(1, 1) - 0.1; 0.8 < avg(0.958, 1) - 0.1
    'ColumnValues "email" matches "[a-z0-9]+@example.com" with threshold >= avg(last(2)) - 0.1': [P] * 11
    + [F],
}


def test_twelve_runs_of_a_growing_then_dropping_input(runner: Runner, tmp_path):
    data = tmp_path / "in"
    data.mkdir()
    ruleset = "Rules = [\n  " + ",\n  ".join(EXPECTED) + "\n]"
    seen: dict[str, list[str]] = {rule: [] for rule in EXPECTED}
    reasons: dict[str, list[str | None]] = {rule: [] for rule in EXPECTED}
    for run, count in enumerate(COUNTS, start=1):
        missing = MISSING_EMAILS.get(run, 0)
        with open(data / f"part-{run:02d}.json", "w", encoding="utf-8") as out:
            for i in range(count):
                email = None if i < missing else f"u{run}x{i}@example.com"
                out.write(json.dumps({"id": run * 1000 + i, "email": email}) + "\n")
        job = runner.start()
        frame = job.read_files(str(data), format="json", ctx="src")
        result = job.evaluate_quality(frame, ruleset, name="volume")
        job.commit()
        assert result.metrics["Dataset.*.RowCount"] == count
        for outcome in result.outcomes:
            seen[outcome.rule].append(outcome.outcome)
            reasons[outcome.rule].append(outcome.failure_reason)
    for rule, expected in EXPECTED.items():
        assert seen[rule] == expected, rule
    # why a dynamic rule failed says what its numbers came to
    assert reasons["RowCount > avg(last(3)) * 0.8"][11] == (
        "Value: 5 does not meet the constraint requirement! "
        "(avg(last(3)) * 0.8 = 76 from 11 earlier value(s))"
    )
    assert (
        "there are 1 earlier value(s), so position 2 does not exist"
        in reasons["RowCount >= index(last(3), 2)"][0]
    )


def test_a_failed_runs_metrics_are_not_history(runner: Runner, tmp_path):
    """A run that fails after its evaluation leaves its metrics out of last(k)."""
    data = tmp_path / "in"
    data.mkdir()
    rules = "Rules = [ RowCount > last() * 2 ]"

    def run(n: int, rows: int, fail: bool = False):
        with open(data / f"p{n}.json", "w", encoding="utf-8") as out:
            out.writelines(json.dumps({"id": n * 100 + i}) + "\n" for i in range(rows))
        job = runner.start()
        result = job.evaluate_quality(job.read_files(str(data), format="json", ctx="src"), rules, name="c")
        if fail:
            job.fail("stopped on purpose")
        else:
            job.commit()
        return result.outcomes[0]

    assert run(1, 5).passed  # 5 > 0
    assert run(2, 50, fail=True).passed  # 50 > 2 * 5; this run fails afterwards
    # the failed run's file is read again: 58 rows, held to run 1's 5 (58 > 10), not to
    # the failed run's 50 (58 > 100 would fail)
    third = run(3, 8)
    assert third.passed, third.failure_reason


def test_an_excluded_statistic_leaves_the_history_of_dynamic_rules(runner: Runner, tmp_path):
    """Glue's "Exclude statistics": a historical load's row count kept out of last()."""
    from sparkmark.quality.store import EXCLUDE, QualityStore

    data = tmp_path / "in"
    data.mkdir()
    rules = "Rules = [ RowCount >= last() ]"

    def run(n: int, rows: int):
        with open(data / f"p{n}.json", "w", encoding="utf-8") as out:
            out.writelines(json.dumps({"id": n * 1000 + i}) + "\n" for i in range(rows))
        job = runner.start()
        result = job.evaluate_quality(job.read_files(str(data), format="json", ctx="src"), rules, name="load")
        job.commit()
        return result.outcomes[0]

    assert run(1, 5).passed and run(2, 500).passed  # 500 rows: a one-off historical load
    store = QualityStore(runner.store)
    (load,) = [r for r in store.results(runner.name) if r.metrics["Dataset.*.RowCount"] == 500]
    store.annotate(load.id, ["Dataset.*.RowCount"], EXCLUDE)
    third = run(3, 8)  # held to run 1's 5, not the excluded 500
    assert third.passed, third.failure_reason


def test_published_counts_reach_the_metric_store_and_the_prometheus_exposition(runner: Runner, tmp_path):
    """Glue's enableDataQualityCloudWatchMetrics: glue.data.quality.rules.passed and
    .failed in the "Glue Data Quality" namespace, by EvaluationContext."""
    from sparkmark.app import App
    from sparkmark.app.prometheus import exposition
    from sparkmark.runtime.metric_store import MetricStore
    from sparkmark.settings import Settings

    data = tmp_path / "in"
    data.mkdir()
    (data / "p.json").write_text("".join(json.dumps({"id": i}) + "\n" for i in range(4)))
    job = runner.start()
    frame = job.read_files(str(data), format="json", ctx="src")
    job.evaluate_quality(
        frame, 'Rules = [ RowCount = 4, RowCount > 9, IsComplete "id" ]', name="pub", publish_metrics=True
    )
    job.commit()
    latest = {
        (m.name, dict(m.dims)["EvaluationContext"]): m.value
        for m in MetricStore(runner.store).latest("Glue Data Quality")
    }
    assert latest == {
        ("glue.data.quality.rules.passed", "pub"): 2.0,
        ("glue.data.quality.rules.failed", "pub"): 1.0,
    }
    text = exposition(App(Settings.from_env(), runner.store))[0].decode()
    assert 'glue_data_quality_glue_data_quality_rules_failed{evaluation_context="pub"} 1.0' in text
