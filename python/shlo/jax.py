"""JAX embedding: ``shlo.jax.jit``, and compiling ``jax.export.Exported`` objects.

A jax export's ``@main`` is not the function the user wrote: its arguments
are the flattened pytree leaves that the function uses
(``module_kept_var_idx``), after a platform index for multi-platform
exports, and its results are the flattened output leaves. ``ExportedFunction``
hides that: it is called like the exported function, with pytrees of jax or
numpy arrays, and returns the output pytree.

jax is imported only by the functions here, never by ``import shlo``.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from shlo.diagnostics import ShloError

# A target and the jax platform whose lowering it compiles.
_PLATFORM_OF_TARGET = {"cpu": "cpu", "cuda": "cuda"}
_MLIR_BYTECODE_MAGIC = b"ML\xefR"


def is_exported(source: object) -> bool:
    """Whether ``source`` is a ``jax.export.Exported`` (without importing jax)."""
    return all(
        hasattr(source, name)
        for name in ("mlir_module_serialized", "in_tree", "out_tree", "module_kept_var_idx")
    )


def deserialize_exported(source: object) -> Any | None:
    """The Exported that ``source`` serializes (``Exported.serialize()``), else None.

    MLIR text never holds a NUL byte and MLIR bytecode starts with its magic,
    so only other binary data is handed to jax's deserializer.
    """
    if not isinstance(source, bytes | bytearray) or bytes(source[:4]) == _MLIR_BYTECODE_MAGIC:
        return None
    if b"\0" not in bytes(source[:64]):
        return None
    try:
        from jax import export
    except ImportError:
        return None
    try:
        return export.deserialize(bytearray(source))
    except Exception:  # not a serialized Exported: the MLIR reader says what it is
        return None


def platform_for(exported: Any, target: str) -> str:
    """The platform of ``exported`` that ``target`` runs; ShloError when it has none."""
    platform = _PLATFORM_OF_TARGET.get(target, target)
    if platform not in exported.platforms:
        raise ShloError(
            f"the export is lowered for {', '.join(exported.platforms)}; target {target!r} "
            f"needs a lowering for {platform!r} (jax.export.export(..., platforms=[{platform!r}]))"
        )
    return platform


class ExportedFunction:
    """A compiled ``jax.export.Exported``, called like the function that was exported."""

    def __init__(self, exported: Any, target: str = "cpu", **options: Any) -> None:
        from shlo.compiler import compile as compile_program

        if exported.ordered_effects:
            # Token arguments and results, for host callbacks that no target here runs.
            effects = ", ".join(str(e) for e in exported.ordered_effects)
            raise ShloError(f"the export has ordered effects ({effects}), which shlo cannot run")
        self.exported = exported
        platform = platform_for(exported, target)
        # A multi-platform export takes the platform's index as a first argument.
        self._platform_index = (
            np.int32(exported.platforms.index(platform)) if len(exported.platforms) > 1 else None
        )
        self.executable = compile_program(exported.mlir_module_serialized, target, **options)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import jax

        leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
        if tree != self.exported.in_tree:
            raise TypeError(
                f"arguments of structure {tree} do not match the export's {self.exported.in_tree}"
            )
        return self.call_leaves(leaves)

    def call_leaves(self, leaves: list[Any]) -> Any:
        """Run on the flattened arguments (of the export's ``in_tree``); returns the
        output pytree."""
        import jax

        return jax.tree_util.tree_unflatten(self.exported.out_tree, self.output_leaves(leaves))

    def output_leaves(self, leaves: list[Any]) -> list[Any]:
        """Run on the flattened arguments; returns the flattened outputs."""
        # GPU arrays stay where they are for a GPU target; the rest are read as numpy arrays.
        on_gpu = _gpu_array_test(self.executable.target)
        kept = [leaves[i] for i in self.exported.module_kept_var_idx]
        inputs = [leaf if on_gpu and on_gpu(leaf) else np.asarray(leaf) for leaf in kept]
        if self._platform_index is not None:
            inputs.insert(0, self._platform_index)
        results = self.executable(*inputs)
        return list(results) if isinstance(results, tuple) else [results]


class Jitted:
    """``shlo.jax.jit(fn)``: export per input signature with jax, compile with shlo, call.

    A signature is the arguments' pytree structure, each leaf's shape and
    dtype (only the dtype and rank with ``polymorphic_shapes``) and the
    values of the static arguments. Results are jax arrays, built from the
    compiled code's numpy results without a copy where DLPack allows.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        target: str = "cpu",
        polymorphic_shapes: Sequence[str | None] | None = None,
        static_argnums: int | Sequence[int] = (),
        **options: Any,
    ) -> None:
        self.fn = fn
        self.target = target
        self.polymorphic_shapes = polymorphic_shapes
        self.static_argnums = (
            (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        )
        if target == "cpu":
            # As jax.jit's code computes: XLA's CPU code flushes subnormals to zero.
            options.setdefault("flush_denormals", True)
        if options.get("isolate", True):
            from shlo.compiler import prepare

            # The first call's compilation finds the worker up and warm.
            prepare(target)
        self._options = options
        self._compiled: dict[Any, ExportedFunction] = {}
        self._lock = threading.Lock()

    def _split(self, args: tuple[Any, ...]) -> tuple[list[Any], tuple[Any, ...]]:
        count = len(args)
        static = {i % count if count else i for i in self.static_argnums}
        dynamic = [a for i, a in enumerate(args) if i not in static]
        statics = tuple((i, args[i]) for i in sorted(static) if i < count)
        return dynamic, statics

    def _signature(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, list[Any]]:
        """The signature of a call, and its dynamic arguments' leaves."""
        import jax

        dynamic, statics = self._split(args)
        leaves, tree = jax.tree_util.tree_flatten((dynamic, kwargs))
        shapes = []
        for leaf in leaves:
            # Arrays (jax, numpy) first: two hasattr calls took a third of this loop.
            try:
                shape, dtype = tuple(leaf.shape), leaf.dtype
            except AttributeError:  # Python scalars, lists
                array = np.asarray(leaf)
                shape, dtype = array.shape, array.dtype
            # The dtype itself: str() of a numpy dtype took 2.7 us a leaf.
            shapes.append((len(shape) if self.polymorphic_shapes else shape, dtype))
        return (tree, tuple(shapes), statics), leaves

    def export(self, *args: Any, **kwargs: Any) -> Any:
        """The ``jax.export.Exported`` that calls with these arguments use."""
        return self._function(args, kwargs)[0].exported

    def _function(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[ExportedFunction, list[Any]]:
        """The compiled function for this call's signature, and its arguments' leaves."""
        key, leaves = self._signature(args, kwargs)
        function = self._compiled.get(key)
        if function is not None:
            return function, leaves
        with self._lock:
            function = self._compiled.get(key)
            if function is None:
                function = ExportedFunction(
                    self._export(args, kwargs), self.target, **self._options
                )
                self._compiled[key] = function
        return function, leaves

    def _export(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        import jax
        from jax import export

        dynamic, statics = self._split(args)
        static_values = dict(statics)

        # Static arguments are bound: the export's arguments are the dynamic ones.
        def bound(*dynamic_args: Any, **kw: Any) -> Any:
            it = iter(dynamic_args)
            full = [static_values[i] if i in static_values else next(it) for i in range(len(args))]
            return self.fn(*full, **kw)

        specs: Any = dynamic
        if self.polymorphic_shapes is not None:
            shapes = [s for i, s in enumerate(self.polymorphic_shapes) if i not in static_values]
            specs = export.symbolic_args_specs(dynamic, shapes)
        platform = _PLATFORM_OF_TARGET.get(self.target, self.target)
        return export.export(jax.jit(bound), platforms=[platform])(*specs, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import jax

        # The signature's leaves are the export's arguments, flattened as it flattens them.
        function, leaves = self._function(args, kwargs)
        outputs = _to_jax_arrays(function.output_leaves(leaves))
        return jax.tree_util.tree_unflatten(function.exported.out_tree, outputs)


def _gpu_array_test(target: str) -> Callable[[Any], bool] | None:
    """Whether a value is a GPU array the target takes as it is; None: the target takes none."""
    if target != "cuda":
        return None
    from shlo.backends.cuda.dlpack import is_device_array

    return is_device_array


def _to_jax(array: Any, importer: _HostDlpackImporter | None = None) -> Any:
    """A jax array over ``array``'s memory where DLPack allows, else a copy.

    ``importer``: ``_host_dlpack_importer()``, when the caller has it already.
    """
    import jax.numpy as jnp

    if type(array) is np.ndarray:
        importer = importer or _host_dlpack_importer()
        if importer is not None and array.dtype in importer.dtypes:
            try:
                return importer(array)
            except Exception:  # alignment or layout limits: the public path decides
                pass
        if array.dtype.kind not in "biufc":
            # ml_dtypes' bfloat16 and float8 types, which numpy cannot export
            # through DLPack: trying first took 20 us a result.
            return jnp.asarray(array)
    try:
        return jnp.from_dlpack(array)
    except Exception:  # alignment, read-only or dtype limits of zero-copy import
        return jnp.asarray(array)


def _to_jax_arrays(arrays: list[Any]) -> list[Any]:
    """``_to_jax`` of each array: the zoo's GPT-2 training step returns 86."""
    importer = _host_dlpack_importer()
    return [_to_jax(array, importer) for array in arrays]


class _HostDlpackImporter:
    """jaxlib's import of a host DLPack tensor as a jax array on the CPU device, called directly.

    ``jax.numpy.from_dlpack`` wraps that one call in about 20 us of Python
    (device lookup, stream query, an ``asarray`` that canonicalizes the
    dtype); models return dozens of arrays, and a small Flax BERT spent more
    time there than in its compiled code. The call is private to jax, so it
    is used only for dtypes jax keeps as they are, only after one array made
    through it matched the public path, and any error falls back to that path.
    """

    def __init__(self) -> None:
        import jax
        from jax._src.lib import _jax, jaxlib_extension_version

        self._convert = _jax.dlpack_managed_tensor_to_buffer
        self._device = jax.devices("cpu")[0]
        self._new_signature = jaxlib_extension_version >= 467
        # Not the 64-bit types, which jax narrows unless x64 is on (a setting that may change).
        self.dtypes = {
            np.dtype(t)
            for t in (
                *(np.float32, np.float16, np.bool_),
                *(np.int32, np.int16, np.int8, np.uint32, np.uint16, np.uint8),
            )
        }

    def __call__(self, array: np.ndarray) -> Any:
        capsule = array.__dlpack__()
        if self._new_signature:
            return self._convert(capsule, self._device, None, None, 1)  # 1: kDLCPU
        return self._convert(capsule, self._device, None, None)


@functools.cache
def _host_dlpack_importer() -> _HostDlpackImporter | None:
    """The direct importer when this jax has it and it agrees with the public path, else None."""
    import jax
    import jax.numpy as jnp

    try:
        importer = _HostDlpackImporter()
        probe = np.arange(6, dtype=np.float32).reshape(2, 3)
        got = importer(probe)
        want = jnp.from_dlpack(probe)
        same = (
            type(got) is type(want)
            and got.shape == want.shape
            and got.dtype == want.dtype
            and got.sharding == want.sharding
            and np.array_equal(np.asarray(got), probe)
            and isinstance(got, jax.Array)
        )
    except Exception:
        return None
    return importer if same else None


def jit(
    fn: Callable[..., Any] | None = None,
    *,
    target: str = "cpu",
    polymorphic_shapes: Sequence[str | None] | None = None,
    static_argnums: int | Sequence[int] = (),
    **options: Any,
) -> Any:
    """Like ``jax.jit``, but the code is compiled by shlo for ``target``.

    ``polymorphic_shapes`` (as ``jax.export.symbolic_args_specs`` takes
    them) exports once per structure and dtypes, and shlo specializes the
    code per shape. ``options`` go to ``shlo.compile`` (``threads``,
    ``arch``, ``isolate``, ...). On the CPU, ``flush_denormals`` is True
    unless given (it replaces a ``pipeline``'s setting): subnormal floats
    compute as zero, as under ``jax.jit``.
    Usable as ``@shlo.jax.jit`` or ``@shlo.jax.jit(target=...)``.
    """
    if fn is None:
        return lambda f: Jitted(
            f,
            target=target,
            polymorphic_shapes=polymorphic_shapes,
            static_argnums=static_argnums,
            **options,
        )
    return Jitted(
        fn,
        target=target,
        polymorphic_shapes=polymorphic_shapes,
        static_argnums=static_argnums,
        **options,
    )
