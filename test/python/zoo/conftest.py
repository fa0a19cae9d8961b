"""The zoo's results table: printed after the run, written to $SHLO_ZOO_REPORT."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

# The zoo builds every model from a config object with random weights: never
# let transformers reach for the hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import zoo_harness

# The results this process has attached to a test report.
_reported: set[str] = set()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach each new result to its test's report, which pytest-xdist sends to the
    controlling process: a run in several processes still prints one table."""
    report = (yield).get_result()
    for name, result in zoo_harness.RESULTS.items():
        if name not in _reported:
            _reported.add(name)
            report.user_properties.append(("zoo_result", dataclasses.asdict(result)))


def pytest_runtest_logreport(report) -> None:
    for key, value in report.user_properties:
        if key == "zoo_result":
            zoo_harness.RESULTS.setdefault(value["name"], zoo_harness.Result(**value))


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not zoo_harness.RESULTS:
        return
    table = zoo_harness.markdown_table(list(zoo_harness.RESULTS.values()))
    terminalreporter.write_sep("=", "shlo model zoo")
    terminalreporter.write(table)
    report = os.environ.get("SHLO_ZOO_REPORT")
    if report:
        Path(report).write_text(table)
        terminalreporter.write_line(f"zoo table written to {report}")
