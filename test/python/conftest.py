from __future__ import annotations

import os

# JAX only needs the CPU here; stops it probing for accelerators.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
