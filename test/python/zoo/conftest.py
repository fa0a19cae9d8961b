"""The zoo's results: each rides on its test's report, for the table test/python/conftest.py prints."""

from __future__ import annotations

import dataclasses
import os

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
    """Attach each new result to its test's report. pytest-xdist sends reports to the
    controlling process, which loads no conftest below test/python: it prints the table."""
    report = (yield).get_result()
    for name, result in zoo_harness.RESULTS.items():
        if name not in _reported:
            _reported.add(name)
            report.user_properties.append(("zoo_result", dataclasses.asdict(result)))
