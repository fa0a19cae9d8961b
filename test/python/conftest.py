from __future__ import annotations

import os
import sys
from pathlib import Path

# JAX only needs the CPU here; stops it probing for accelerators.
os.environ.setdefault("JAX_PLATFORMS", "cpu")


import jax
import pytest


@pytest.fixture(scope="module")
def float64_in_jax():
    """f64 and c128 programs need jax's x64 mode; on for one module's tests
    (``pytestmark = pytest.mark.usefixtures("float64_in_jax")``)."""
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", previous)


# The model zoo's results (test/python/zoo/conftest.py puts them on the reports).
_zoo_results: list[dict] = []


def pytest_runtest_logreport(report) -> None:
    _zoo_results.extend(value for key, value in report.user_properties if key == "zoo_result")


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """The zoo's table, after the run; also written to $SHLO_ZOO_REPORT when it is set."""
    if not _zoo_results:
        return
    sys.path.insert(0, str(Path(__file__).parent / "zoo"))
    from zoo_harness import Result, markdown_table

    table = markdown_table([Result(**result) for result in _zoo_results])
    terminalreporter.write_sep("=", "shlo model zoo")
    terminalreporter.write(table)
    report = os.environ.get("SHLO_ZOO_REPORT")
    if report:
        Path(report).write_text(table)
        terminalreporter.write_line(f"zoo table written to {report}")
