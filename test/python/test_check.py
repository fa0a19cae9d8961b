"""shlo.check and shlo-run --check: agreement, and the BERT fusion bug found when put back.

The bug (a74b60a) is put back by compiling with buggy_pipelines.BERT_FUSION_BUG;
the checker must name the consuming contraction, not the last op, and write
a reproducer that diverges with that pipeline and agrees with the default one.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import shlo
from buggy_pipelines import BERT_FUSION_BUG
from shlo.checker import CheckReport, compare
from test_fusion_regressions import CASES, compile_with_shlo, head_scaled_attention

HERE = Path(__file__).resolve().parent
SHLO_RUN = str(Path(sys.executable).parent / "shlo-run")
ADD_ONE = HERE.parents[1] / "docs" / "examples" / "add_one_dynamic.mlir"
RNG = np.random.default_rng(0)


def normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def layer_norm(x: jax.Array) -> jax.Array:
    mean = x.mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-6)


def bert_like_block(x, wq, wk, wv, head_scale, wo):
    """Self-attention with per-head scaling (BERT's head_mask), output projection, residual, layer norm."""
    batch, length, width = x.shape
    heads = head_scale.shape[0]

    def split(t):
        return t.reshape(batch, length, heads, width // heads)

    q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(width // heads)
    probs = jnp.einsum("bhqk,h->bhqk", jax.nn.softmax(scores, axis=-1), head_scale)
    context = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(batch, length, width)
    return layer_norm(context @ wo + x)


BERT_ARGS = [normal(1, 4, 8), normal(8, 8), normal(8, 8), normal(8, 8), normal(2), normal(8, 8)]


def attention_inside_a_chain(x, w, h, v, z):
    """The bug in the middle: agreeing ops before it and after it."""
    y = jnp.tanh(x @ w)
    attended = jnp.einsum("bhqk,bhkd->bhqd", jnp.einsum("bhqk,h->bhqk", y, h), v)
    after = jax.nn.relu(attended) @ z
    return jnp.sum(jnp.exp(-after * after), axis=-1) + 1.0


def test_the_buggy_pipeline_really_gives_wrong_answers() -> None:
    # The premise of the tests below, checked against jax.
    fn, args = CASES["random_attention"]
    exported = jax.export.export(jax.jit(fn), platforms=["cpu"])(*args)
    want = np.asarray(jax.jit(fn)(*args))
    buggy = shlo.compile(exported.mlir_module_serialized, pipeline=BERT_FUSION_BUG)(*args)
    assert np.abs(buggy - want).max() > 1.0
    np.testing.assert_allclose(compile_with_shlo(fn, *args)(*args), want, rtol=1e-5, atol=1e-5)


def test_an_agreeing_module_is_ok() -> None:
    report = shlo.check(ADD_ONE, np.array([1, 2, 3, 4.5], np.float32))
    assert report.ok, report
    assert report.systems == ["shlo (cpu)", "interpreter", "xla"]
    assert report.first_divergence is None and report.reproducer is None
    np.testing.assert_array_equal(report.outputs["xla"][0], [2, 3, 4, 5.5])
    assert "all systems agree" in str(report)


def test_a_function_is_compared_on_three_systems() -> None:
    report = shlo.check(bert_like_block, *BERT_ARGS)
    assert report.ok, report
    assert report.systems == ["shlo (cpu)", "interpreter", "xla"]
    want = np.asarray(jax.jit(bert_like_block)(*BERT_ARGS))
    for system in report.systems:
        np.testing.assert_allclose(report.outputs[system][0], want, rtol=1e-4, atol=1e-4)


def assert_reproducer_diverges_only_with_the_bug(report: CheckReport) -> None:
    assert report.reproducer is not None and report.reproducer.is_file()
    shlo.load_module(report.reproducer)  # parses on its own
    with np.load(report.reproducer_inputs) as archive:
        inputs = [archive[name] for name in archive.files]
    # Its own reproducer goes next to the first, not to a new temporary directory.
    again = report.reproducer.parent / "again"
    buggy = shlo.check(
        report.reproducer, *inputs, pipeline=BERT_FUSION_BUG, xla=False, reproducer_dir=again
    )
    assert not buggy.ok and buggy.reproducer == again / "reproducer.mlir"
    fixed = shlo.check(report.reproducer, *inputs, xla=False)
    assert fixed.ok, fixed


def test_finds_the_fusion_bug_in_the_regression_program(tmp_path: Path) -> None:
    fn, args = CASES["random_attention"]
    exported = jax.export.export(jax.jit(fn), platforms=["cpu"])(*args)
    report = shlo.check(exported, *args, pipeline=BERT_FUSION_BUG, reproducer_dir=tmp_path)
    assert not report.ok
    assert report.differences["xla"][0].ok  # the references agree with each other
    divergence = report.first_divergence
    assert divergence is not None, report
    assert divergence.op_name == "stablehlo.dot_general"
    assert divergence.name.endswith("bhqk,bhkd->bhqd/dot_general")  # the consumer
    line = head_scaled_attention.__code__.co_firstlineno + 1  # its return, the einsums
    assert f"test_fusion_regressions.py:{line}:" in divergence.location
    assert divergence.result == 0 and divergence.difference.max_abs > 1.0
    assert report.reproducer == tmp_path / "reproducer.mlir"
    text = str(report)
    assert (
        "DIVERGES" in text and "first divergence: op 2 of 3 in @main, stablehlo.dot_general" in text
    )
    assert f"--input=@{tmp_path / 'reproducer_inputs.npz'} --check" in text
    assert_reproducer_diverges_only_with_the_bug(report)


def test_finds_the_fusion_bug_in_a_bert_like_block(tmp_path: Path) -> None:
    report = shlo.check(
        bert_like_block, *BERT_ARGS, pipeline=BERT_FUSION_BUG, reproducer_dir=tmp_path
    )
    divergence = report.first_divergence
    assert divergence is not None, report
    assert divergence.op_name == "stablehlo.dot_general"
    assert divergence.name.endswith("bhqk,bkhd->bqhd/dot_general"), divergence
    # Shrunk: the two contractions and what feeds the consumer's other operand, not the 44 ops.
    assert shlo.load_module(report.reproducer).operation.get_asm().count(" = stablehlo.") < 10
    assert_reproducer_diverges_only_with_the_bug(report)


def test_bisection_names_the_op_in_the_middle_not_the_last(tmp_path: Path) -> None:
    args = [normal(1, 2, 3, 4), normal(4, 4), normal(2), normal(1, 2, 4, 5), normal(5, 3)]
    report = shlo.check(
        attention_inside_a_chain, *args, pipeline=BERT_FUSION_BUG, reproducer_dir=tmp_path
    )
    divergence = report.first_divergence
    assert divergence is not None, report
    assert divergence.name.endswith("bhqk,bhkd->bhqd/dot_general"), divergence
    line = attention_inside_a_chain.__code__.co_firstlineno + 3  # the line of the einsums
    assert f"test_check.py:{line}:" in divergence.location
    assert divergence.op_index < divergence.op_count - 5  # well before the end


def test_compare_rules() -> None:
    assert compare(np.array([1, 2]), np.array([1, 2])).ok
    assert not compare(np.array([1, 2]), np.array([1, 3])).ok  # integers exactly
    assert compare(np.float32([1.0, np.nan, np.inf]), np.float32([1.00001, np.nan, np.inf])).ok
    assert not compare(np.float32([np.inf]), np.float32([-np.inf])).ok
    assert not compare(np.float32([1.0]), np.float32([1.01])).ok
    assert compare(np.float32([1.0]), np.float32([1.01]), rtol=0.1).ok
    assert not compare(np.float32([1.0]), np.float64([1.0])).ok  # dtypes must match
    assert "shape (2,) != (3,)" in compare(np.zeros(2), np.zeros(3)).detail


def test_import_shlo_does_not_import_jax() -> None:
    code = "import sys, shlo; shlo.check; assert 'jax' not in sys.modules, 'jax imported'"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_shlo_run_check_exit_codes_and_report(tmp_path: Path) -> None:
    agree = subprocess.run(
        [SHLO_RUN, str(ADD_ONE), "--input=4xf32=1,2,3,4.5", "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert agree.returncode == 0, agree.stderr
    assert agree.stdout.startswith("shlo.check: all systems agree (reference: interpreter)\n")

    args = CASES["random_attention"][1]
    exported = jax.export.export(jax.jit(head_scaled_attention), platforms=["cpu"])(*args)
    program = tmp_path / "attention.mlir"
    program.write_text(exported.mlir_module())
    np.savez(tmp_path / "args.npz", *args)
    out = tmp_path / "out"
    # shlo-run with the bug as its default pipeline.
    command = [sys.executable, str(HERE / "buggy_pipelines.py")]
    flags = [f"--input=@{tmp_path / 'args.npz'}", "--check", f"--reproducer-dir={out}"]
    diverge = subprocess.run(
        [*command, str(program), *flags], capture_output=True, text=True, timeout=120
    )
    assert diverge.returncode == 1, diverge.stderr
    assert "DIVERGES" in diverge.stdout
    assert "first divergence: op 2 of 3 in @main, stablehlo.dot_general, result 0" in diverge.stdout
    rerun = f"shlo-run {out / 'reproducer.mlir'} --input=@{out / 'reproducer_inputs.npz'} --check"
    assert rerun in diverge.stdout
    # The reproducer, as the report says to rerun it: diverges with the bug, agrees without.
    reproducer = [str(out / "reproducer.mlir"), f"--input=@{out / 'reproducer_inputs.npz'}"]
    rerun_buggy = subprocess.run(
        [*command, *reproducer, "--check", f"--reproducer-dir={tmp_path / 'again'}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rerun_buggy.returncode == 1, rerun_buggy.stdout + rerun_buggy.stderr
    rerun_fixed = subprocess.run(
        [SHLO_RUN, *reproducer, "--check"], capture_output=True, text=True, timeout=120
    )
    assert rerun_fixed.returncode == 0, rerun_fixed.stdout + rerun_fixed.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--check", "--target=interpreter"], "--check compares a compiler target"),
        (["--check", "--benchmark=2"], "--check prints a report"),
        (["--reproducer-dir=x"], "--reproducer-dir needs --check"),
    ],
)
def test_shlo_run_check_usage_errors(flags: list[str], message: str) -> None:
    result = subprocess.run(
        [SHLO_RUN, str(ADD_ONE), "--input=4xf32=1", *flags],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert message in result.stderr and "Traceback" not in result.stderr


def test_a_torch_module_is_compared_with_eager_pytorch_too() -> None:
    torch = pytest.importorskip("torch")
    from test_torch_embedding import build

    model, make_input, length, _ = build("encoder")  # int64 token ids, embeddings, attention
    ids = make_input(2, length)
    report = shlo.check(model, ids)
    assert report.ok, report
    assert report.systems == ["shlo (cpu)", "interpreter", "xla", "pytorch"]
    with torch.no_grad():
        want = model(ids).numpy()
    np.testing.assert_allclose(report.outputs["shlo (cpu)"][0], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(report.outputs["pytorch"][0], want)
