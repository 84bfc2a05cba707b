"""Tallies for the reliability tests: every session ends with one line
``reliability: N passed, N failed; rows lost L, rows duplicated D``."""

from __future__ import annotations

TALLY = {"passed": 0, "failed": 0, "lost": 0, "duplicated": 0}


def pytest_runtest_logreport(report):
    if "reliability" not in report.nodeid:
        return
    if report.when == "call" or (report.when == "setup" and report.failed):
        if report.passed:
            TALLY["passed"] += 1
        elif report.failed:
            TALLY["failed"] += 1


def pytest_terminal_summary(terminalreporter):
    if TALLY["passed"] or TALLY["failed"]:
        terminalreporter.write_line(
            f"reliability: {TALLY['passed']} passed, {TALLY['failed']} failed; "
            f"rows lost {TALLY['lost']}, rows duplicated {TALLY['duplicated']}"
        )
