"""The zoo's results table: printed after the run, written to $SHLO_ZOO_REPORT."""

from __future__ import annotations

import os
from pathlib import Path

# The zoo builds every model from a config object with random weights: never
# let transformers reach for the hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import zoo_harness


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
