"""Write StableHLO as torch-mlir's own exporter does, for tests that run without PyTorch.

Run with torch 2.13.0 and the pinned MLIR wheel:
    .venv/bin/python test/artifacts/make_torch_mlir_artifacts.py

torch-mlir-20261001/mlp_dynamic_batch.mlir is ``torch_mlir.fx.export_and_import``
of a small MLP with a dynamic batch, output_type "stablehlo": weights in
dense_resource blobs, shapes computed in the shape dialect. The .npz holds
inputs of two batch sizes and PyTorch eager's outputs for them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch_mlir import fx

OUT = Path(__file__).parent / "torch-mlir-20261001"


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.hidden = torch.nn.Linear(8, 16)
        self.out = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.out(torch.relu(self.hidden(x)))


def main() -> None:
    torch.manual_seed(0)
    model = MLP().eval()
    batch = {"x": {0: torch.export.Dim("batch", min=2, max=64)}}
    module = fx.export_and_import(
        model, torch.randn(3, 8), output_type="stablehlo", dynamic_shapes=batch
    )
    OUT.mkdir(exist_ok=True)
    (OUT / "mlp_dynamic_batch.mlir").write_text(str(module))
    arrays = {}
    for size in (2, 5):
        x = torch.randn(size, 8)
        with torch.no_grad():
            arrays[f"x{size}"], arrays[f"y{size}"] = x.numpy(), model(x).numpy()
    np.savez(OUT / "mlp_dynamic_batch.npz", **arrays)


if __name__ == "__main__":
    main()
