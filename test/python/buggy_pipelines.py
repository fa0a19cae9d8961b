"""CPU pipelines with a known bug put back on purpose, for test_check.py.

A module of its own so the worker process (shlo.isolation) can import the
pipeline class when it unpickles a compilation request.

``python buggy_pipelines.py ARGS...`` runs shlo-run with BERT_FUSION_BUG as
the default pipeline, so the tests can run ``shlo-run --check`` on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from shlo.backends.cpu.pipeline import CpuPipeline


@dataclass(frozen=True)
class WithoutPasses(CpuPipeline):
    """The CPU pipeline without the passes named in ``removed``."""

    removed: tuple[str, ...] = ()

    def stages(self) -> list[tuple[str, list[str]]]:
        return [
            (name, [element for element in stage if element not in self.removed])
            for name, stage in super().stages()
        ]


# The silent wrong answers of a74b60a (Flax BERT): an all-parallel generic
# that accumulates into its output, fused into a consuming contraction, is
# re-accumulated per reduction index. shlo-parallel-inits-to-inputs fixes it;
# since then shlo-fuse-elementwise-trees also fences such producers from
# upstream fusion, so both go (with the pass that removes the fences) for
# the bug to show again; and the matmuls are generated, not calls of the
# precompiled kernel, into which nothing fuses.
BERT_FUSION_BUG = WithoutPasses(
    removed=(
        "shlo-parallel-inits-to-inputs",
        "shlo-fuse-elementwise-trees",
        "shlo-remove-fusion-fences",
    ),
    precompiled_kernels=False,
)


if __name__ == "__main__":
    import shlo.backends.cpu as cpu

    # Imported by name, not from __main__: the worker must find the class.
    from buggy_pipelines import BERT_FUSION_BUG as bug
    from shlo.tools.shlo_run import main

    default = cpu.resolve_pipeline
    cpu.resolve_pipeline = lambda pipeline, *rest: default(pipeline or bug, *rest)
    main()
