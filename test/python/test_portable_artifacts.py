"""Artifacts serialized by jax releases, old and current, load and run in shlo.

test/artifacts/jax-X.Y.Z/ holds what test/artifacts/make_artifacts.py wrote
under jax X.Y.Z: real bytes, not re-exported here. Each program is loaded
twice, as the StableHLO portable artifact (``mlir_module_serialized``) and
as the whole ``Exported.serialize()``, and its results are compared with
the outputs that release's jax computed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import shlo
from shlo.io import portable_artifact_producer

ARTIFACTS = Path(__file__).parents[2] / "test" / "artifacts"
# jax 0.8.0 (October 2025) is more than a year older than jax 0.10.2.
RELEASES = ["jax-0.8.0", "jax-0.10.2"]
PROGRAMS = ["mlp", "while_loop", "cumulative"]


def saved(release: str, program: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    with np.load(ARTIFACTS / release / f"{program}.npz") as data:
        inputs = [data[f"input_{i}"] for i in range(sum(k.startswith("input_") for k in data))]
        outputs = [data[f"output_{i}"] for i in range(sum(k.startswith("output_") for k in data))]
    return inputs, outputs


def assert_matches(got, want: list[np.ndarray]) -> None:
    got = list(got) if isinstance(got, tuple | list) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("release", RELEASES)
def test_portable_artifact_runs(release: str, program: str) -> None:
    artifact = (ARTIFACTS / release / f"{program}.stablehlo").read_bytes()
    assert portable_artifact_producer(artifact) is not None
    inputs, outputs = saved(release, program)
    assert_matches(shlo.compile(artifact)(*inputs), outputs)


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("release", RELEASES)
def test_serialized_exported_runs(release: str, program: str) -> None:
    pytest.importorskip("flatbuffers")
    function = shlo.compile((ARTIFACTS / release / f"{program}.exported").read_bytes())
    inputs, outputs = saved(release, program)
    # The Exported takes the arguments as the function did: here, one pytree
    # of the kept leaves rebuilt from the saved order.
    exported = function.exported
    import jax

    leaves = [None] * exported.in_tree.num_leaves
    for index, value in zip(exported.module_kept_var_idx, inputs):
        leaves[index] = value
    args, kwargs = jax.tree_util.tree_unflatten(exported.in_tree, leaves)
    assert_matches(jax.tree_util.tree_leaves(function(*args, **kwargs)), outputs)


def test_the_old_artifacts_are_older() -> None:
    """The old release's artifacts carry an older StableHLO version than the current one's."""

    def version(release: str) -> tuple[int, ...]:
        producer = portable_artifact_producer((ARTIFACTS / release / "mlp.stablehlo").read_bytes())
        return tuple(int(part) for part in producer.split("."))

    assert version("jax-0.8.0") < version("jax-0.10.2")
