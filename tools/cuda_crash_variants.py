"""Run the GPU conformance suite with one CUDA runtime feature changed, to bisect a crash.

  python tools/cuda_crash_variants.py VARIANT PATH... [python -m shlo.conformance options]

VARIANT is one of:
  base       nothing changed;
  keepalive  no compiled function is ever destroyed (their ExecutionEngines live on);
  sync       every kernel launch is waited for, as when host code reads memory;
  ptxjit     the driver JIT-compiles the PTX instead of loading the cubin;
  nopool     the runtime allocates and frees managed memory on every request.

It exists for the open defect in docs/cuda.md ("Known limits and defects"):
children that ran other files' GPU code crash later in MLIR Python code.
Each variant patches the runtime in this process before the runner forks
its children, so they inherit it. Needs a GPU.
"""

from __future__ import annotations

import sys

import shlo.backends.cuda.runtime as runtime
from shlo import conformance

VARIANTS = ("base", "keepalive", "sync", "ptxjit", "nopool")


def apply(variant: str) -> None:
    if variant == "keepalive":
        kept = []
        load = conformance._load_for_cuda

        def keep(*args):
            function = load(*args)
            kept.append(function)
            return function

        conformance._load_for_cuda = keep
    elif variant == "sync":
        init = runtime.MgpuRuntime.__init__

        def synchronous(self, driver, cubins=None, synchronous=True):
            init(self, driver, cubins, True)

        runtime.MgpuRuntime.__init__ = synchronous
    elif variant == "ptxjit":
        init = runtime.CudaFunction.__init__

        def without_cubins(self, *args, **kwargs):
            kwargs["cubins"] = None
            init(self, *args, **kwargs)

        runtime.CudaFunction.__init__ = without_cubins
    elif variant == "nopool":

        def alloc(self, size):
            return self.driver.allocate_managed(size) if size else None

        def free(self, pointer):
            if pointer:
                self.driver.free(self._over_aligned.pop(pointer, pointer))

        runtime.MgpuRuntime.alloc = alloc
        runtime.MgpuRuntime.free = free
    elif variant != "base":
        raise SystemExit(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")


def main() -> int:
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    apply(sys.argv.pop(1))
    return conformance.main([*sys.argv[1:], "--target", "cuda"])


if __name__ == "__main__":
    sys.exit(main())
