"""lit configuration for shlo's IR-in/IR-out tests (.mlir) and binding tests (.py)."""

from __future__ import annotations

import os
import shutil
import sys

import lit.formats

config.name = "shlo"  # noqa: F821 - lit provides `config`
config.test_format = lit.formats.ShTest(execute_external=False)  # lit's shell has `not`
config.suffixes = [".mlir", ".py"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "python", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = getattr(config, "shlo_obj_root", None) or os.path.join(
    config.test_source_root, "Output"
)

# The tools live next to the interpreter of the environment shlo is installed in.
python = getattr(config, "python_executable", None) or sys.executable
bin_dir = os.path.dirname(python)
config.environment["PATH"] = os.pathsep.join([bin_dir, config.environment.get("PATH", os.environ["PATH"])])
config.environment["FILECHECK_OPTS"] = "-enable-var-scope"
for name in ("HOME", "TMPDIR", "SHLO_REPRO_DIR", "JAX_PLATFORMS"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
config.environment.setdefault("JAX_PLATFORMS", "cpu")

config.substitutions.append(("%PYTHON", python))
# shlo-opt and FileCheck are found on PATH, in bin_dir first.

if shutil.which("nvidia-smi") and os.system("nvidia-smi -L > /dev/null 2>&1") == 0:
    config.available_features.add("cuda")
