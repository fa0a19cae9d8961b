"""Write the ``@template`` function that ``shlo.ir_templates`` expands, op by op.

Each call appends one generic-form op and returns the SSA name of its result;
the builder remembers every value's type, so callers only give result types.
Loops are ``scf.for`` over tensors whose index is also offered as a
``tensor<i64>``, ready for ``stablehlo.dynamic_slice`` and friends.

    b = TemplateBuilder()
    x = b.argument("tensor<4xf32>")
    y = b.op("stablehlo.add", [x, x], "tensor<4xf32>")
    replace_with_template(op, b.function([y]))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

INDEX = "tensor<i64>"


def dense_hex(array: np.ndarray) -> str:
    """``array`` as a dense attribute body in hex: exact, and fast to parse when large."""
    data = np.ascontiguousarray(array)
    little = data.astype(data.dtype.newbyteorder("<"), copy=False)
    return 'dense<"0x' + little.tobytes().hex().upper() + '">'


def tensor_text(shape: Sequence[int], element: str) -> str:
    return "tensor<" + "".join(f"{size}x" for size in shape) + f"{element}>"


def split_type(type_: str) -> tuple[list[int], str]:
    """(shape, element type) of a static ``tensor<...>`` type written as text."""
    body = type_[len("tensor<") : -1]
    dims: list[int] = []
    while True:
        head, sep, rest = body.partition("x")
        if not sep or not head.isdigit():
            return dims, body
        dims.append(int(head))
        body = rest


def array(values: Sequence[int]) -> str:
    return "array<i64" + "".join(f", {v}" if i else f": {v}" for i, v in enumerate(values)) + ">"


class TemplateBuilder:
    """Accumulates the body of ``func.func @template`` as text."""

    def __init__(self) -> None:
        self._arguments: list[str] = []
        self._lines: list[str] = []
        self._types: dict[str, str] = {}
        self._count = 0
        self._indent = 1

    def type_of(self, value: str) -> str:
        return self._types[value]

    def _fresh(self, type_: str, prefix: str = "v") -> str:
        name = f"%{prefix}{self._count}"
        self._count += 1
        self._types[name] = type_
        return name

    def _line(self, text: str) -> None:
        self._lines.append("  " * self._indent + text)

    def argument(self, type_: str) -> str:
        name = f"%arg{len(self._arguments)}"
        self._arguments.append(type_)
        self._types[name] = type_
        return name

    def op(self, name: str, operands: Sequence[str], result_type: str, properties: str = "") -> str:
        """Append ``name`` in generic form; ``properties`` is the text inside ``<{...}>``."""
        result = self._fresh(result_type)
        props = f" <{{{properties}}}>" if properties else ""
        operand_list = ", ".join(operands)
        operand_types = ", ".join(self._types[value] for value in operands)
        self._line(
            f'{result} = "{name}"({operand_list}){props} : ({operand_types}) -> {result_type}'
        )
        return result

    def constant(self, type_: str, value: str) -> str:
        """A stablehlo.constant; ``value`` is the attribute body, e.g. ``dense<0.0>``."""
        return self.op("stablehlo.constant", [], type_, f"value = {value} : {type_}")

    # --- stablehlo conveniences ------------------------------------------------------

    def transpose(self, value: str, permutation: Sequence[int]) -> str:
        shape, element = split_type(self.type_of(value))
        result = tensor_text([shape[p] for p in permutation], element)
        return self.op(
            "stablehlo.transpose", [value], result, f"permutation = {array(permutation)}"
        )

    def swap_minor(self, value: str) -> str:
        """Transpose the two innermost dimensions."""
        rank = len(split_type(self.type_of(value))[0])
        return self.transpose(value, [*range(rank - 2), rank - 1, rank - 2])

    def conj(self, value: str) -> str:
        """The complex conjugate; other values as they are."""
        shape, element = split_type(self.type_of(value))
        if not element.startswith("complex<"):
            return value
        part = tensor_text(shape, element[len("complex<") : -1])
        real = self.op("stablehlo.real", [value], part)
        imag = self.op("stablehlo.imag", [value], part)
        negated = self.op("stablehlo.negate", [imag], part)
        return self.op("stablehlo.complex", [real, negated], self.type_of(value))

    def broadcast(self, value: str, shape: Sequence[int], dimensions: Sequence[int]) -> str:
        element = split_type(self.type_of(value))[1]
        return self.op(
            "stablehlo.broadcast_in_dim",
            [value],
            tensor_text(shape, element),
            f"broadcast_dimensions = {array(dimensions)}",
        )

    def iota(self, shape: Sequence[int], dimension: int, element: str = "i64") -> str:
        return self.op(
            "stablehlo.iota", [], tensor_text(shape, element), f"iota_dimension = {dimension} : i64"
        )

    def zeros(self, shape: Sequence[int], element: str) -> str:
        zero = "(0.000000e+00,0.000000e+00)" if element.startswith("complex<") else "0"
        if element.startswith(("f", "bf")):
            zero = "0.000000e+00"
        return self.constant(tensor_text(shape, element), f"dense<{zero}>")

    def compare(self, direction: str, lhs: str, rhs: str) -> str:
        shape = split_type(self.type_of(lhs))[0]
        return self.op(
            "stablehlo.compare",
            [lhs, rhs],
            tensor_text(shape, "i1"),
            f"comparison_direction = #stablehlo<comparison_direction {direction}>",
        )

    def dynamic_slice(self, value: str, starts: Sequence[str], sizes: Sequence[int]) -> str:
        element = split_type(self.type_of(value))[1]
        return self.op(
            "stablehlo.dynamic_slice",
            [value, *starts],
            tensor_text(sizes, element),
            f"slice_sizes = {array(sizes)}",
        )

    def dynamic_update_slice(self, value: str, update: str, starts: Sequence[str]) -> str:
        return self.op(
            "stablehlo.dynamic_update_slice", [value, update, *starts], self.type_of(value)
        )

    def convert(self, value: str, element: str) -> str:
        shape, current = split_type(self.type_of(value))
        if current == element:
            return value
        return self.op("stablehlo.convert", [value], tensor_text(shape, element))

    # --- structure ---------------------------------------------------------------------

    def for_loop(
        self,
        count: int,
        inits: Sequence[str],
        body: Callable[[str, list[str]], Sequence[str]],
    ) -> list[str]:
        """``scf.for`` with index 0..count-1 carrying ``inits``.

        ``body(index, carried)`` appends the loop body and returns the values
        to carry on; ``index`` is the iteration number as a ``tensor<i64>``.
        """
        types = [self._types[value] for value in inits]
        lower, upper, step = (self._fresh("index", "c") for _ in range(3))
        self._line(f"{lower} = arith.constant 0 : index")
        self._line(f"{upper} = arith.constant {count} : index")
        self._line(f"{step} = arith.constant 1 : index")
        loop = self._fresh("", "loop")
        results = [loop] if len(inits) == 1 else [f"{loop}#{i}" for i in range(len(inits))]
        for name, type_ in zip(results, types):
            self._types[name] = type_
        carried = [self._fresh(type_, "iter") for type_ in types]
        induction = self._fresh("index", "i")
        iter_args = ", ".join(f"{c} = {init}" for c, init in zip(carried, inits))
        count_suffix = "" if len(inits) == 1 else f":{len(inits)}"
        self._line(
            f"{loop}{count_suffix} = scf.for {induction} = {lower} to {upper} step {step}"
            f" iter_args({iter_args}) -> ({', '.join(types)}) {{"
        )
        self._indent += 1
        as_i64 = self._fresh("i64", "n")
        self._line(f"{as_i64} = arith.index_cast {induction} : index to i64")
        index = self._fresh(INDEX, "index")
        self._line(f"{index} = tensor.from_elements {as_i64} : {INDEX}")
        next_values = list(body(index, carried))
        self._line(f"scf.yield {', '.join(next_values)} : {', '.join(types)}")
        self._indent -= 1
        self._line("}")
        return results

    def function(self, results: Sequence[str]) -> str:
        """The module text holding ``@template``, returning ``results``."""
        arguments = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(self._arguments))
        result_types = ", ".join(self._types[value] for value in results)
        return (
            f"func.func @template({arguments}) -> ({result_types}) {{\n"
            + "\n".join(self._lines)
            + f"\n  return {', '.join(results)} : {result_types}\n}}\n"
        )
