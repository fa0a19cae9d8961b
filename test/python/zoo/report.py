"""Run the model zoo and print its table: model | correct | compile s | shlo ms | jax ms.

    python test/python/zoo/report.py [-o zoo.md] [extra pytest arguments]

Exits with pytest's status, so a wrong answer fails the run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ZOO = Path(__file__).parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", help="also write the markdown table to this file")
    options, pytest_args = parser.parse_known_args()
    with tempfile.TemporaryDirectory() as tmp:
        table_path = Path(options.output or Path(tmp) / "zoo.md").resolve()
        table_path.unlink(missing_ok=True)
        env = dict(os.environ, SHLO_ZOO_REPORT=str(table_path))
        status = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                str(ZOO),
                "-q",
                "-p",
                "no:cacheprovider",
                *pytest_args,
            ],
            env=env,
            stdout=subprocess.DEVNULL,
        ).returncode
        if not table_path.exists():
            print(f"no zoo results (pytest exited {status})", file=sys.stderr)
            return status or 1
        print(table_path.read_text(), end="")
    return status


if __name__ == "__main__":
    sys.exit(main())
