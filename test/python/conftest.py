from __future__ import annotations

import os

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
