"""Tallies for the reliability tests: every session ends with one line
``reliability: N passed, N failed; rows lost L, rows duplicated D``.

A test adds what it found to ``TALLY`` in the process that runs it; the counts travel
with the test's report (as user properties), so the line is right when pytest-xdist
runs the tests in worker processes and the summary is written by the controller."""

from __future__ import annotations

import pytest

TALLY = {"lost": 0, "duplicated": 0}  # this test's rows, in the process running it
SUMMARY = {"passed": 0, "failed": 0, "lost": 0, "duplicated": 0}


def pytest_runtest_setup(item):
    TALLY.update(lost=0, duplicated=0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when == "call" and "reliability" in item.nodeid:
        report = outcome.get_result()
        report.user_properties.append(("rows_lost", TALLY["lost"]))
        report.user_properties.append(("rows_duplicated", TALLY["duplicated"]))


def pytest_runtest_logreport(report):
    if "reliability" not in report.nodeid:
        return
    if report.when == "call" or (report.when == "setup" and report.failed):
        if report.passed:
            SUMMARY["passed"] += 1
        elif report.failed:
            SUMMARY["failed"] += 1
        found = dict(report.user_properties)
        SUMMARY["lost"] += int(found.get("rows_lost", 0))
        SUMMARY["duplicated"] += int(found.get("rows_duplicated", 0))


def pytest_terminal_summary(terminalreporter):
    if SUMMARY["passed"] or SUMMARY["failed"]:
        terminalreporter.write_line(
            f"reliability: {SUMMARY['passed']} passed, {SUMMARY['failed']} failed; "
            f"rows lost {SUMMARY['lost']}, rows duplicated {SUMMARY['duplicated']}"
        )
