"""Finding ops by name or attribute with a walk in C instead of a Python call per op.

The bindings' ``Operation.walk`` calls back into Python for every op it
visits, about 0.4 µs each, and most passes look for a few op names in the
whole module: those walks took about 40 ms of GPT-2's compile. A C function,
compiled here once per process by ``enable``, walks through the MLIR C API
of the bindings' own library and hands back only the matches (GPT-2's
largest module: 16 ms a walk in Python, 1.2 ms in C). The worker enables it
while it waits for its first request; elsewhere, or without a C compiler,
the functions here return None and the caller walks in Python. The library
is built in memory (``c_build.load_built_in_memory``): a worker killed while
it builds leaves no file.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Sequence
from dataclasses import dataclass

from shlo._mlir_compat import c_api_function, ir, operation_pointer, operations_at
from shlo.c_build import load_built_in_memory

# The C API's types by value: an op, an identifier and an attribute are one
# pointer each.
_SOURCE = r"""
#include <stdlib.h>
#include <string.h>

typedef struct { void *ptr; } Operation;
typedef struct { const void *ptr; } Identifier;
typedef struct { const void *ptr; } Attribute;
typedef struct { const char *data; size_t length; } StringRef;
typedef int (*Visit)(Operation, void *);  /* returns MlirWalkResult: 0 advances */
typedef void (*Walk)(Operation, Visit, void *, int);
typedef Identifier (*GetName)(Operation);
typedef StringRef (*IdentifierStr)(Identifier);
typedef Attribute (*GetAttribute)(Operation, StringRef);

typedef struct {
  GetName get_name;
  IdentifierStr identifier_str;
  GetAttribute get_attribute;  /* set: match ops having one of the attributes */
  const char *const *names;
  const size_t *lengths;
  size_t count;
  void **found;
  size_t size, capacity;
  int failed;
} Search;

static int matches(Search *search, Operation op) {
  if (search->get_attribute) {
    for (size_t i = 0; i < search->count; ++i) {
      StringRef name = {search->names[i], search->lengths[i]};
      if (search->get_attribute(op, name).ptr) return 1;
    }
    return 0;
  }
  StringRef name = search->identifier_str(search->get_name(op));
  for (size_t i = 0; i < search->count; ++i)
    if (search->lengths[i] == name.length && !memcmp(search->names[i], name.data, name.length))
      return 1;
  return 0;
}

static int visit(Operation op, void *data) {
  Search *search = data;
  if (!matches(search, op)) return 0;
  if (search->size == search->capacity) {
    size_t capacity = search->capacity ? 2 * search->capacity : 64;
    void **grown = realloc(search->found, capacity * sizeof(void *));
    if (!grown) {
      search->failed = 1;
      return 1; /* interrupt */
    }
    search->found = grown;
    search->capacity = capacity;
  }
  search->found[search->size++] = op.ptr;
  return 0;
}

/* The ops under root (pre-order) named one of names, or, given get_attribute,
   having an attribute named one of them, in *found (free with shlo_free);
   their count, or -1 when memory ran out. */
long shlo_search(Walk walk, GetName get_name, IdentifierStr identifier_str,
                 GetAttribute get_attribute, void *root, const char *const *names,
                 const size_t *lengths, size_t count, void ***found) {
  Search search = {get_name, identifier_str, get_attribute, names, lengths, count,
                   NULL, 0, 0, 0};
  Operation op = {root};
  walk(op, visit, &search, 0 /* MlirWalkPreOrder */);
  *found = search.found;
  return search.failed ? -1 : (long)search.size;
}

static int count(Operation op, void *data) {
  (void)op;
  ++*(long *)data;
  return 0;
}

/* How many ops there are under root, root included. */
long shlo_count_ops(Walk walk, void *root) {
  long ops = 0;
  Operation op = {root};
  walk(op, count, &ops, 0);
  return ops;
}

void shlo_free(void *pointer) { free(pointer); }
"""


@dataclass(frozen=True)
class _Library:
    """The built C functions and the C API functions they call."""

    search: ctypes._CFuncPtr
    count: ctypes._CFuncPtr
    free: ctypes._CFuncPtr
    walk: int  # mlirOperationWalk
    get_name: int  # mlirOperationGetName
    identifier_str: int  # mlirIdentifierStr
    get_attribute: int  # mlirOperationGetAttributeByName


_library: _Library | None = None


def enable(driver: str) -> None:
    """Compile the C walk with ``driver`` (a C compiler) and use it from now on.

    Raises ShloError when the compiler fails."""
    global _library
    # A PyDLL keeps the GIL during calls: no other thread changes the IR meanwhile.
    library = load_built_in_memory(driver, _SOURCE, "fast_walks.so")
    pointer = ctypes.c_void_p
    library.shlo_search.argtypes = [pointer] * 7 + [
        ctypes.c_size_t,
        ctypes.POINTER(ctypes.POINTER(pointer)),
    ]
    library.shlo_search.restype = ctypes.c_long
    library.shlo_count_ops.argtypes = [pointer, pointer]
    library.shlo_count_ops.restype = ctypes.c_long
    library.shlo_free.argtypes = [pointer]
    _library = _Library(
        library.shlo_search,
        library.shlo_count_ops,
        library.shlo_free,
        c_api_function("mlirOperationWalk"),
        c_api_function("mlirOperationGetName"),
        c_api_function("mlirIdentifierStr"),
        c_api_function("mlirOperationGetAttributeByName"),
    )


def enabled() -> bool:
    return _library is not None


@functools.lru_cache(maxsize=256)
def _name_arrays(names: tuple[str, ...]) -> tuple[ctypes.Array, ctypes.Array]:
    encoded = [name.encode() for name in names]
    return (ctypes.c_char_p * len(encoded))(*encoded), (ctypes.c_size_t * len(encoded))(
        *map(len, encoded)
    )


def _run(root: ir.Operation, names: Sequence[str], by_attribute: bool) -> list[ir.Operation] | None:
    library = _library
    if library is None:
        return None
    texts, lengths = _name_arrays(tuple(names))
    found = ctypes.POINTER(ctypes.c_void_p)()
    count = library.search(
        library.walk,
        library.get_name,
        library.identifier_str,
        library.get_attribute if by_attribute else None,
        operation_pointer(root),
        texts,
        lengths,
        len(names),
        ctypes.byref(found),
    )
    try:
        return None if count < 0 else operations_at(found[:count])
    finally:
        library.free(found)


def ops_named(root: ir.Operation, names: Sequence[str]) -> list[ir.Operation] | None:
    """The ops under ``root`` (pre-order) named one of ``names``; None when not enabled."""
    return _run(root, names, by_attribute=False)


def ops_with_attributes(root: ir.Operation, names: Sequence[str]) -> list[ir.Operation] | None:
    """The ops under ``root`` (pre-order) that have an attribute named one of ``names``
    (inherent or discardable); None when not enabled."""
    return _run(root, names, by_attribute=True)


def op_count(root: ir.Operation) -> int | None:
    """How many ops there are under ``root``, itself included; None when not enabled."""
    library = _library
    if library is None:
        return None
    return library.count(library.walk, operation_pointer(root))
