"""Analyses over StableHLO programs.

``shlo.analysis.indexing``: symbolic indexing maps between the indices of
ops' (and fusions') outputs and inputs, on MLIR's ``AffineMap``; see
docs/indexing.md.
"""

from __future__ import annotations

from shlo.analysis.indexing import (
    IndexingMap,
    fusion_output_to_input,
    input_to_output,
    output_to_input,
    parse_indexing_map,
)

__all__ = [
    "IndexingMap",
    "fusion_output_to_input",
    "input_to_output",
    "output_to_input",
    "parse_indexing_map",
]
