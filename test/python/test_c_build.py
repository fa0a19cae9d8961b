"""Helpers shlo compiles with the machine's C compiler, shared by every process of a user."""

from __future__ import annotations

import os
import secrets

import pytest
from shlo import c_build
from shlo.backends.cpu.runtime import linker

pytestmark = pytest.mark.skipif(linker() is None, reason="no C compiler")


def _source() -> str:
    # New for each test: nothing built earlier answers it.
    return f"int shlo_test_{secrets.token_hex(8)}(void) {{ return 1; }}\n"


@pytest.fixture(autouse=True)
def _own_temporary_directory(tmp_path, monkeypatch):
    # The tests' helpers stay out of the user's shared directory.
    monkeypatch.setattr(c_build.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(c_build, "_built", {})


def test_a_helper_is_built_once_for_every_process(monkeypatch):
    source = _source()
    path = c_build.build_once(linker(), source, "helper.o", ["-c", "-fPIC"])
    assert os.path.dirname(path) == c_build.shared_directory()
    assert path.endswith("-helper.o") and open(path, "rb").read(4) == b"\x7fELF"
    # Another process (this one, having forgotten it) finds it without compiling.
    with monkeypatch.context() as patched:
        patched.setattr(c_build, "_built", {})
        patched.setattr(c_build.subprocess, "run", lambda *a, **k: pytest.fail("compiled again"))
        assert c_build.build_once(linker(), source, "helper.o", ["-c", "-fPIC"]) == path
    # Other flags are another file.
    other = c_build.build_once(linker(), source, "helper.o", ["-c", "-fPIC", "-O2"])
    assert other != path and os.path.dirname(other) == os.path.dirname(path)


def test_no_partial_file_is_left_when_the_compiler_fails():
    directory = c_build.shared_directory()
    assert directory is not None
    before = set(os.listdir(directory))
    with pytest.raises(c_build.ShloError, match=r"compiling broken\.o failed"):
        c_build.build_once(linker(), "this is not C", "broken.o", ["-c"])
    assert set(os.listdir(directory)) == before


def test_a_shared_directory_that_is_not_private_is_not_used(tmp_path):
    # Another user could have made it, or put a symlink there: each process
    # builds into a temporary directory of its own instead.
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    (tmp_path / f"shlo-built-{os.getuid()}").symlink_to(target)
    assert c_build.shared_directory() is None
    path = c_build.build_once(linker(), _source(), "helper.o", ["-c", "-fPIC"])
    assert os.path.basename(os.path.dirname(path)).startswith("shlo-built-")
    assert not os.listdir(target)
    os.chmod(target, 0o755)
    (tmp_path / f"shlo-built-{os.getuid()}").unlink()
    (tmp_path / f"shlo-built-{os.getuid()}").mkdir(mode=0o755)
    os.chmod(tmp_path / f"shlo-built-{os.getuid()}", 0o755)
    assert c_build.shared_directory() is None  # open to others
