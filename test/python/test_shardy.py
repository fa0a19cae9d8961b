"""Programs with Shardy (sdy) annotations: real JAX exports load, multi-device ones are refused."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import shlo
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from shlo import bytecode, shardy
from shlo.io import module_to_bytecode

SHLO_OPT = str(Path(sys.executable).parent / "shlo-opt")
MULTI_DEVICE = "multi-device shardings are not supported yet"

_SQUARE = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], np.float32)
LINALG = {
    "inv": (jnp.linalg.inv, (_SQUARE,)),
    "solve": (jnp.linalg.solve, (_SQUARE, np.ones((3, 2), np.float32))),
    "cholesky": (jnp.linalg.cholesky, (_SQUARE,)),
    "qr": (jnp.linalg.qr, (_SQUARE,)),
    "eigh": (jnp.linalg.eigh, (_SQUARE,)),
    "svd": (jnp.linalg.svd, (_SQUARE,)),
}
# How JAX writes the rule in text: the last entry of a custom call's attributes.
_SHARDING_RULE = re.compile(r"(, )?sdy\.sharding_rule = #sdy\.op_sharding_rule<.*?>(?=\})")


@pytest.fixture(scope="module")
def linalg_exports() -> dict[str, jax.export.Exported]:
    return {name: jax.export.export(jax.jit(fn))(*args) for name, (fn, args) in LINALG.items()}


@pytest.fixture(scope="module")
def plain_export() -> jax.export.Exported:
    return jax.export.export(jax.jit(lambda x: jnp.sin(x) @ x.T))(np.ones((3, 4), np.float32))


@pytest.mark.parametrize("name", sorted(LINALG))
def test_linalg_exports_load_from_bytes_and_text(linalg_exports, name):
    exported = linalg_exports[name]
    text = exported.mlir_module()
    assert "sdy.sharding_rule" in text
    from_bytes = str(shlo.load_module(exported.mlir_module_serialized))
    from_text = str(shlo.load_module(text))
    assert "sdy" not in from_bytes
    assert from_bytes == from_text
    # The rest of the module is what it was: the same text, rules removed by hand.
    by_hand = shlo.load_module(_SHARDING_RULE.sub("", text))
    assert from_text == str(by_hand)
    assert "lapack_" in from_text


def test_rewrite_replaces_only_the_sdy_entries(linalg_exports):
    data = linalg_exports["inv"].mlir_module_serialized
    rewritten, has_sdy = shardy.rewrite_bytecode(data)
    assert has_sdy
    assert rewritten != data
    assert rewritten.startswith(data[:32])  # magic, version and producer
    assert b'#sdy<"op_sharding_rule (binary encoding dropped)">\x00' in rewritten


def test_text_file_keeps_its_name_in_locations(tmp_path):
    path = tmp_path / "annotated.mlir"
    path.write_text(_module(_SHARDED_FUNC.format(arg="sdy.sharding = #sdy.sharding<@mesh, [{}]>")))
    module = shlo.load_module(path)
    assert "sdy" not in str(module)
    (function,) = module.body.operations
    assert str(function.location).startswith(f'loc("{path}":2:')


def test_plain_program_bytes_are_untouched(plain_export):
    data = plain_export.mlir_module_serialized
    assert shardy.rewrite_bytecode(data) == (data, False)
    assert shardy.prepare_input(data) == (data, False)


def _resource_module_bytecode() -> bytes:
    """shlo's own bytecode of a module with a blob, which sits in an aligned section."""
    module = shlo.load_module(
        textwrap.dedent(
            """\
            func.func @f() -> tensor<2xf32> {
              %0 = stablehlo.constant dense_resource<blob> : tensor<2xf32>
              return %0 : tensor<2xf32>
            }
            {-#
              dialect_resources: {builtin: {blob: "0x040000000000803F00000040"}}
            #-}
            """
        )
    )
    return module_to_bytecode(module)


def test_reencoding_reproduces_the_bytes(plain_export):
    """The section reader and writer are exact inverses, alignment padding included."""
    resource = _resource_module_bytecode()
    assert resource[4] >= 5  # a bytecode version with aligned resource sections
    for data in (plain_export.mlir_module_serialized, resource):
        assert shardy._rewrite_bytecode(data, always_rebuild=True) == (data, False)


def test_alignment_padding_follows_the_new_offset():
    section = bytecode.Section(id=5, alignment=8, data=b"\x01\x02\x03")
    for prefix in range(12):
        out = bytearray(b"\x00" * prefix)
        bytecode.write_section(out, section)
        start = out.index(b"\x01\x02\x03", prefix + 3)
        assert start % 8 == 0
        reader = bytecode.Reader(bytes(out), prefix)
        assert bytecode.read_section(reader) == section
        assert reader.at_end()


@pytest.mark.parametrize("value", [0, 1, 127, 128, 2**14, 2**21 - 1, 2**40, 2**56, 2**64 - 1])
def test_varint_round_trip(value):
    encoded = bytecode.encode_varint(value)
    reader = bytecode.Reader(encoded)
    assert reader.varint() == value
    assert reader.at_end()


def _with_sdy_version(data: bytes) -> bytes:
    """``data`` with a dialect version entry for sdy, as a newer JAX may write."""
    container = bytecode.read_container(data)
    by_id = container.by_id()
    strings = bytecode.read_strings(by_id[0].data)
    dialects, op_names = bytecode.read_dialects(by_id[1].data, strings, container.version)
    for dialect in dialects:
        if dialect.name == b"sdy":
            entry = bytearray(bytecode.encode_varint(dialect.name_index << 1 | 1))
            bytecode.write_section(entry, bytecode.Section(7, 0, b"\x01\x03\x01"))
            dialect.encoded = bytes(entry)
    by_id[1].data = (
        bytecode.encode_varint(len(dialects)) + b"".join(d.encoded for d in dialects) + op_names
    )
    out = bytearray(container.header)
    for section in container.sections:
        bytecode.write_section(out, section)
    return bytes(out)


def test_sdy_version_entry_is_dropped(linalg_exports):
    data = _with_sdy_version(linalg_exports["inv"].mlir_module_serialized)
    assert len(data) == len(linalg_exports["inv"].mlir_module_serialized) + 5
    assert "sdy" not in str(shlo.load_module(data))


def test_corrupt_bytes_never_crash_the_rewriter(linalg_exports):
    data = linalg_exports["cholesky"].mlir_module_serialized
    for end in range(len(data)):
        truncated = data[:end]
        rewritten, _ = shardy.rewrite_bytecode(truncated)
        assert isinstance(rewritten, bytes)
    rng = random.Random(0)
    for _ in range(300):
        corrupted = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            corrupted[rng.randrange(len(corrupted))] = rng.randrange(256)
        rewritten, _ = shardy.rewrite_bytecode(bytes(corrupted))
        assert isinstance(rewritten, bytes)


def test_truncated_sdy_bytecode_is_a_clean_error(linalg_exports):
    data = linalg_exports["inv"].mlir_module_serialized
    with pytest.raises(shlo.ShloError):
        shlo.load_module(data[: len(data) // 2])


def test_single_device_sharded_export_loads():
    mesh = jax.make_mesh((1,), ("x",))
    sharding = NamedSharding(mesh, P("x"))
    fn = jax.jit(lambda x: jnp.sin(x) * 2, in_shardings=sharding, out_shardings=sharding)
    exported = jax.export.export(fn)(jax.ShapeDtypeStruct((4, 3), np.float32, sharding=sharding))
    text = exported.mlir_module()
    assert "sdy.mesh @" in text and "sdy.sharding_constraint" in text
    for source in (exported.mlir_module_serialized, text):
        module = str(shlo.load_module(source))
        assert "sdy" not in module
        assert "stablehlo.sine" in module and "stablehlo.multiply" in module
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    result = shlo.compile(exported.mlir_module_serialized)(x)
    np.testing.assert_allclose(np.asarray(result), np.sin(x) * 2, rtol=1e-6)


# Exports on two (forced) CPU devices, with Shardy and with GSPMD's mhlo.sharding.
_TWO_DEVICE_EXPORTS = """
import sys
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

def export(stem, devices):
    mesh = jax.make_mesh((len(devices),), ("x",), devices=devices)
    sharding = NamedSharding(mesh, P("x"))
    fn = jax.jit(lambda x: jnp.sin(x) * 2, in_shardings=sharding, out_shardings=sharding)
    args = jax.ShapeDtypeStruct((4, 3), np.float32, sharding=sharding)
    exported = jax.export.export(fn)(args)
    open(stem + ".bc", "wb").write(exported.mlir_module_serialized)
    open(stem + ".mlir", "w").write(exported.mlir_module())

export(sys.argv[1] + "/sdy_2", jax.devices())
jax.config.update("jax_use_shardy_partitioner", False)
export(sys.argv[1] + "/gspmd_2", jax.devices())
export(sys.argv[1] + "/gspmd_1", jax.devices()[:1])
"""


@pytest.fixture(scope="module")
def two_device_exports(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("sdy")
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    subprocess.run(
        [sys.executable, "-c", _TWO_DEVICE_EXPORTS, str(folder)], env=env, check=True, timeout=120
    )
    return folder


def test_two_device_export_is_refused(two_device_exports):
    for suffix in (".bc", ".mlir"):
        with pytest.raises(shlo.ShloError, match=f"{MULTI_DEVICE}: sdy.mesh declares a mesh of 2"):
            shlo.load_module(two_device_exports / f"sdy_2{suffix}")
    path = two_device_exports / "sdy_2.bc"
    result = subprocess.run([SHLO_OPT, str(path)], capture_output=True, timeout=120)
    assert result.returncode == 1
    assert (
        result.stderr.decode().strip()
        == f"{path}: error: {MULTI_DEVICE}: sdy.mesh declares a mesh of 2 devices"
    )


def test_gspmd_exports(two_device_exports):
    """Without Shardy, JAX writes mhlo.sharding strings: one device loads, two do not."""
    assert 'mhlo.sharding = "{replicated}"' in (two_device_exports / "gspmd_1.mlir").read_text()
    for suffix in (".bc", ".mlir"):
        assert "stablehlo.sine" in str(shlo.load_module(two_device_exports / f"gspmd_1{suffix}"))
        expected = f'{MULTI_DEVICE}: mhlo.sharding = "{{devices=[2,1]<=[2]}}"'
        with pytest.raises(shlo.ShloError, match=re.escape(expected)):
            shlo.load_module(two_device_exports / f"gspmd_2{suffix}")


@pytest.mark.parametrize(
    ("sharding", "single_device"),
    [
        ("{replicated}", True),
        ("{maximal device=0}", True),
        ("{maximal device=1}", False),
        ("{devices=[1,1]<=[1]}", True),
        ('{replicated metadata={op_name="jit(f)/x"}}', True),
        ("{{replicated}, {maximal device=0}}", True),
        ("{{replicated}, {devices=[2]0,1}}", False),
        ("{devices=[1,1,2]<=[2] last_tile_dims={replicated}}", False),
        ("{devices=[2,1]<=[2]}", False),
    ],
)
def test_hlo_sharding_device_count(sharding, single_device):
    assert shardy._is_single_device_hlo_sharding(sharding) is single_device


def test_shlo_opt_prints_the_linalg_export(tmp_path, linalg_exports):
    exported = linalg_exports["qr"]
    (tmp_path / "qr.bc").write_bytes(exported.mlir_module_serialized)
    (tmp_path / "qr.mlir").write_text(exported.mlir_module())
    for name in ("qr.bc", "qr.mlir"):
        result = subprocess.run([SHLO_OPT, str(tmp_path / name)], capture_output=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert b"lapack_" in result.stdout and b"sdy" not in result.stdout


def test_compile_gets_past_loading(linalg_exports):
    exported = linalg_exports["inv"]
    # Loaded, and its LAPACK calls compiled by their handlers (shlo.custom_calls).
    result = shlo.compile(exported.mlir_module_serialized)(_SQUARE)
    np.testing.assert_allclose(np.asarray(result), np.linalg.inv(_SQUARE), rtol=1e-5)


def _module(body: str, attributes: str = "") -> str:
    return textwrap.dedent(
        f"""\
        module attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32{attributes}}} {{
        {body}
        }}
        """
    )


_SHARDED_FUNC = """\
  func.func @main(%arg0: tensor<4xf32> {{{arg}}}) -> tensor<4xf32> {{
    return %arg0 : tensor<4xf32>
  }}"""


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            _module('  sdy.mesh @mesh = <["x"=2, "y"=2]>\n' + _SHARDED_FUNC.format(arg="")),
            "sdy.mesh declares a mesh of 4 devices",
        ),
        (
            _module(
                _SHARDED_FUNC.format(arg='sdy.sharding = #sdy.sharding<mesh<["x"=2]>, [{"x"}]>')
            ),
            "sdy.sharding names a mesh of 2 devices",
        ),
        (
            _module(_SHARDED_FUNC.format(arg='mhlo.sharding = "{devices=[2]<=[2]}"')),
            "mhlo.sharding = \"{devices=[2]<=[2]}\" in 'func.func'",
        ),
        (
            _module(
                _SHARDED_FUNC.format(arg="sdy.sharding = #sdy.sharding<@mesh, [{}]>"),
                attributes=', mhlo.frontend_attributes = {xla.sdy.meshes = "{mesh = #sdy.mesh<[\\"x\\"=8]>}"}',
            ),
            "xla.sdy.meshes names a mesh of 8 devices",
        ),
    ],
)
def test_hand_written_multi_device_programs_are_refused(source, expected):
    with pytest.raises(shlo.ShloError, match=re.escape(f"{MULTI_DEVICE}: {expected}")):
        shlo.load_module(source)


def test_single_device_annotations_are_removed():
    source = _module(
        '  sdy.mesh @mesh = <["x"=1]> {stablehlo.mesh = {axes = [{name = "x", size = 1 : i64}]}}\n'
        + _SHARDED_FUNC.format(
            arg='sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>, mhlo.sharding = "{{replicated}, {maximal device=0}}"'
        ),
        attributes=', mhlo.frontend_attributes = {xla.sdy.meshes = "{mesh = #sdy.mesh<[]>}", other = "kept"}',
    )
    module = str(shlo.load_module(source))
    assert "sdy" not in module
    assert 'mhlo.frontend_attributes = {other = "kept"}' in module
    assert "mhlo.sharding" in module


def test_other_sdy_ops_and_unknown_dialects_are_errors():
    manual = _module(
        "  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
        "    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{}]>] out_shardings=[<@mesh, [{}]>] manual_axes={} (%a: tensor<4xf32>) {\n"
        "      sdy.return %a : tensor<4xf32>\n"
        "    } : (tensor<4xf32>) -> tensor<4xf32>\n"
        "    return %0 : tensor<4xf32>\n"
        "  }"
    )
    with pytest.raises(
        shlo.ShloError,
        match=r"<string>:3:\d+: error: the Shardy op 'sdy.manual_computation' is not supported",
    ):
        shlo.load_module(manual)
    unknown_op = _module(
        _SHARDED_FUNC.format(arg="sdy.sharding = #sdy.sharding<@mesh, [{}]>").replace(
            "    return", '    "foo.bar"() : () -> ()\n    return'
        )
    )
    with pytest.raises(
        shlo.ShloError, match=re.escape("operation 'foo.bar' of an unknown dialect")
    ):
        shlo.load_module(unknown_op)
    unknown_attr = _module(
        _SHARDED_FUNC.format(arg='sdy.sharding = #sdy.sharding<@mesh, [{}]>, foo.x = #foo<"y">')
    )
    with pytest.raises(shlo.ShloError, match="belongs to the unknown dialect 'foo'"):
        shlo.load_module(unknown_attr)
    unknown_type = _module(
        _SHARDED_FUNC.format(arg="sdy.sharding = #sdy.sharding<@mesh, [{}]>")
        + "\n  func.func @g(%a: !foo.t) {\n    return\n  }"
    )
    with pytest.raises(shlo.ShloError, match=re.escape("type !foo.t in 'func.func'")):
        shlo.load_module(unknown_type)
    # Without sdy nothing changes: unknown dialects are parse errors as before.
    with pytest.raises(shlo.ShloError, match="unregistered dialect"):
        shlo.load_module(_module(_SHARDED_FUNC.format(arg='foo.x = #foo<"y">')))


def test_complex_constants_with_sdy_annotations_load() -> None:
    # Reading a complex constant's attribute aborted the loading process:
    # a complex jnp.linalg export crashed the worker instead of loading.
    a = (np.eye(3) * (2 + 1j)).astype(np.complex64)
    exported = jax.export.export(jax.jit(lambda a: jnp.linalg.inv(a) + (1 + 2j)))(a)
    assert "sdy." in exported.mlir_module()
    # Loaded, and its LAPACK calls (cgetrf, ctrsm) compiled by their handlers.
    got = shlo.compile(exported.mlir_module_serialized)(a)
    np.testing.assert_allclose(
        got, np.asarray(jax.jit(lambda a: jnp.linalg.inv(a) + (1 + 2j))(a)), rtol=1e-5
    )
