"""Loading compiled entry functions and calling them with numpy arrays.

The worker generates object code (``compile_object``); the host places it in
memory itself (``object_loader``), or where that loader declines, links it into
a shared library with the system's linker and loads it with ctypes, so the
host never runs LLVM's code generator on a program.

The entry function takes one argument (shlo-pack-entry-arguments): a pointer
to the data pointers of its buffers, inputs first, then one out-parameter per
result; shapes are static, so nothing else varies. It is called through the
JIT's packed wrapper ``_mlir_main``, which takes an array of pointers to the
arguments. A call costs one ctypes call plus one allocation per result; the
pointer arrays are kept per thread, so concurrent calls from several threads
are safe.
"""

from __future__ import annotations

import _ctypes
import ctypes
import functools
import importlib.metadata
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shlo._mlir_compat import (
    ExecutionEngine,
    apply_llvm_options,
    ir,
    new_context,
    write_object_file,
)
from shlo.backends.cpu import glue_codegen, object_loader, precompiled
from shlo.c_build import build_once
from shlo.diagnostics import ShloError
from shlo.dtypes import numpy_dtype
from shlo.ir_utils import string_value, tensor_type_text

# Sub-byte integers are stored one per byte; LLVM leaves the unused high bits
# of a stored value undefined, so results are sign- or zero-extended here.
_SUB_BYTE_BITS = {"i2": 2, "i4": 4, "ui2": 2, "ui4": 4}
_ELF_MAGIC = b"\x7fELF"
# Static dimensions, then an element type without an encoding or nested commas.
_STATIC_TENSOR = re.compile(r"tensor<((?:\d+x)*)([A-Za-z][\w<>]*)>")


@dataclass(frozen=True)
class ArrayType:
    """A static tensor type as numpy sees it."""

    shape: tuple[int, ...]
    element_type: str

    @property
    def dtype(self) -> np.dtype[Any]:
        return numpy_dtype(self.element_type)

    @staticmethod
    def parse(text: str, context: ir.Context | None = None) -> ArrayType:
        """``tensor<2x3xf32>`` as MLIR prints it; other spellings go through MLIR's parser."""
        # A context costs 3 ms to make, more than the rest of loading small code.
        match = _STATIC_TENSOR.fullmatch(text)
        if match is not None:
            dims = match.group(1)
            shape = tuple(int(d) for d in dims.split("x")[:-1]) if dims else ()
            return ArrayType(shape, match.group(2))
        tensor_type = ir.RankedTensorType(ir.Type.parse(text, context or new_context()))
        return ArrayType(tuple(tensor_type.shape), str(tensor_type.element_type))

    def __str__(self) -> str:
        return tensor_type_text(self.shape, self.element_type)


def fix_sub_byte(array: np.ndarray, element_type: str) -> np.ndarray:
    bits = _SUB_BYTE_BITS.get(element_type)
    if bits is None:
        return array
    raw = array.view(np.uint8) & ((1 << bits) - 1)
    if not element_type.startswith("u"):
        raw = np.where(raw >= (1 << (bits - 1)), raw | (0xFF << bits) & 0xFF, raw).astype(np.uint8)
    return raw.view(array.dtype)


# MLIR's generic allocation functions, which the generated code calls for
# every buffer (finalize-memref-to-llvm{use-generic-functions}), and the entry
# point the host calls: a failed allocation returns to it through longjmp
# instead of letting the code write through a null pointer. Freed blocks are
# kept for the next allocation of the same size, since a program called again
# allocates the same sizes: large blocks returned to the kernel fault their
# pages in and zeroed again on every call (that was 44% of GPT-2's run time),
# and glibc's aligned allocation and consolidation of small blocks took 15%
# of the training step's.
_ALLOCATION_GUARD = r"""
#include <pthread.h>
#include <setjmp.h>
#include <stdlib.h>
#ifdef __SSE__
#include <xmmintrin.h>
#endif

static __thread jmp_buf *on_failure;

static void *checked(void *pointer, size_t size) {
  if (!pointer && size && on_failure) longjmp(*on_failure, 1);
  return pointer;
}

/* Free blocks of one size form a list threaded through the blocks
   themselves (the first word of a block's header); a table with open
   addressing finds the list of a size. A size, once in a table, keeps its
   entry, so a probe stops at its size or at an empty entry. Each thread keeps
   the blocks it frees in its own shard, under the shard's own lock: the
   threads of a parallel loop that allocate a tile's buffer per iteration
   would otherwise meet on one lock, and its futex waits and wakes cost
   microseconds a block (softmax over [2048, 8192]: 12.6 -> 11.0 ms). */
#define BUCKETS 4096 /* distinct sizes kept per shard; a power of 2 */
#define SHARDS 4
#define MAX_KEPT_BYTES ((size_t)512 << 20)
static struct {
  pthread_mutex_t lock;
  struct { size_t total; void *head; } kept[BUCKETS];
} __attribute__((aligned(64))) shards[SHARDS];
static size_t kept_bytes; /* in all shards; atomic */
static int next_shard;     /* atomic */
static __thread int my_shard = -1;

static int own_shard(void) {
  if (my_shard < 0) my_shard = __atomic_fetch_add(&next_shard, 1, __ATOMIC_RELAXED) % SHARDS;
  return my_shard;
}

__attribute__((constructor)) static void init_shards(void) {
  for (int s = 0; s < SHARDS; ++s) pthread_mutex_init(&shards[s].lock, 0);
}

/* The entry of `total` in shard `s`, or the empty entry it would take;
   BUCKETS when the table is full. The shard's lock is held. */
static size_t entry_of(int s, size_t total) {
  size_t i = (size_t)((total * 0x9E3779B97F4A7C15ull) >> 52) & (BUCKETS - 1);
  for (size_t probes = 0; probes < BUCKETS; ++probes, i = (i + 1) & (BUCKETS - 1))
    if (shards[s].kept[i].total == total || shards[s].kept[i].total == 0) return i;
  return BUCKETS;
}

static void *take_from(int s, size_t total) {
  void *block = 0;
  pthread_mutex_lock(&shards[s].lock);
  size_t i = entry_of(s, total);
  if (i < BUCKETS && shards[s].kept[i].head) {
    block = shards[s].kept[i].head;
    shards[s].kept[i].head = *(void **)block;
  }
  pthread_mutex_unlock(&shards[s].lock);
  if (block) __atomic_fetch_sub(&kept_bytes, total, __ATOMIC_RELAXED);
  return block;
}

/* The thread's own shard first; then the others, which hold the blocks of
   calls made from other threads. */
static void *take_kept(size_t total) {
  int own = own_shard();
  void *block = take_from(own, total);
  for (int s = 0; !block && s < SHARDS; ++s)
    if (s != own) block = take_from(s, total);
  return block;
}

static int keep(void *block, size_t total) {
  if (__atomic_add_fetch(&kept_bytes, total, __ATOMIC_RELAXED) > MAX_KEPT_BYTES) {
    __atomic_fetch_sub(&kept_bytes, total, __ATOMIC_RELAXED);
    return 0;
  }
  int s = own_shard(), done = 0;
  pthread_mutex_lock(&shards[s].lock);
  size_t i = entry_of(s, total);
  if (i < BUCKETS) {
    shards[s].kept[i].total = total;
    *(void **)block = shards[s].kept[i].head;
    shards[s].kept[i].head = block;
    done = 1;
  }
  pthread_mutex_unlock(&shards[s].lock);
  if (!done) __atomic_fetch_sub(&kept_bytes, total, __ATOMIC_RELAXED);
  return done;
}

/* Unloading the code returns the kept blocks: the library's destructor, or
   for the guard that all code loaded without a linker shares, the loader. */
#ifdef SHLO_SHARED_GUARD
size_t shlo_kept_bytes(void) { return __atomic_load_n(&kept_bytes, __ATOMIC_RELAXED); }

void shlo_release_kept(void) {
#else
__attribute__((destructor)) static void shlo_release_kept(void) {
#endif
  for (int s = 0; s < SHARDS; ++s) {
    pthread_mutex_lock(&shards[s].lock);
    for (int i = 0; i < BUCKETS; ++i)
      while (shards[s].kept[i].head) {
        void *block = shards[s].kept[i].head;
        shards[s].kept[i].head = *(void **)block;
        __atomic_fetch_sub(&kept_bytes, shards[s].kept[i].total, __ATOMIC_RELAXED);
        free(block);
      }
    pthread_mutex_unlock(&shards[s].lock);
  }
}

/* Each block starts with a header of `offset` bytes (a multiple of the
   alignment) whose last two words hold the offset and the block's size. */
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size) {
  size_t offset = alignment > 64 ? alignment : 64;
  size_t total = size + offset;
  void *block = take_kept(total);
  if (!block && posix_memalign(&block, offset, total) != 0) block = 0;
  if (!block) return checked(0, size ? size : 1);
  size_t *header = (size_t *)((char *)block + offset);
  header[-1] = total;
  header[-2] = offset;
  return header;
}

void *_mlir_memref_to_llvm_alloc(size_t size) {
  return _mlir_memref_to_llvm_aligned_alloc(16, size);
}

void _mlir_memref_to_llvm_free(void *pointer) {
  if (!pointer) return;
  size_t *header = pointer;
  size_t total = header[-1];
  void *block = (char *)pointer - header[-2];
  if (!keep(block, total)) free(block);
}

/* 0 when the entry ran to the end, 1 when an allocation failed. Code
   compiled with flush_denormals sets MXCSR and restores it on return; a
   failed allocation leaves it without returning, so the caller's mode is
   restored here. */
#ifdef SHLO_SHARED_GUARD
int shlo_call_entry(void (*entry)(void **), void **arguments) {
#else
void _mlir_main(void **arguments);
#define entry _mlir_main
int shlo_call(void **arguments) {
#endif
  jmp_buf here;
  jmp_buf *outer = on_failure;
  int failed = 0;
#ifdef __SSE__
  unsigned int fp_mode = _mm_getcsr();
#endif
  on_failure = &here;
  if (setjmp(here) == 0) {
    entry(arguments);
  } else {
    failed = 1;
#ifdef __SSE__
    _mm_setcsr(fp_mode);
#endif
  }
  on_failure = outer;
  return failed;
}

/* f32 -> bf16, rounded to nearest even, NaNs kept and made quiet. LLVM calls it
   where the host has no bf16 instructions (AVX512-BF16), to store or select
   bf16 values, and libgcc has it only from GCC 13. The bf16 is returned in the
   low 16 bits of xmm0, as LLVM expects it. */
float __truncsfbf2(float value) {
  union { float f; unsigned int u; } in = {value}, out;
  unsigned int bits = in.u;
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    out.u = (bits >> 16) | 0x40u;
  else
    out.u = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  return out.f;
}
"""
# Functions the generated code may call that the guard defines (_ALLOCATION_GUARD).
GUARD_FUNCTIONS = ("__truncsfbf2",)


@functools.cache
def openmp_library() -> str | None:
    """The OpenMP runtime (libiomp5.so from the intel-openmp wheel) that threaded code calls."""
    try:
        files = importlib.metadata.files("intel-openmp") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == "libiomp5.so":
            path = os.path.realpath(file.locate())
            if os.path.exists(path):
                return path
    return None


# OpenMP settings shlo's generated code runs best with, unless the user's
# environment names them. Spin-waiting threads that call sched_yield (the
# runtime's default, KMP_USE_YIELD=1) were often left by the scheduler on one
# core with the thread they wait for: on the 2-core machine, 21 of 40
# layernorm calls made right after an XLA call were preempted 8 times each and
# took up to 2.6 ms instead of 0.25. Yielding only when the process asks for
# more threads than cores, no call in 40 was.
OPENMP_DEFAULTS = {"KMP_USE_YIELD": "2"}


@functools.cache
def load_openmp() -> str | None:
    """Load the OpenMP runtime once per process, with OPENMP_DEFAULTS; its path, if any."""
    path = openmp_library()
    if path is None:
        return None
    library = ctypes.CDLL(path)
    for name, value in OPENMP_DEFAULTS.items():
        if name not in os.environ:
            library.kmp_set_defaults(f"{name}={value}".encode())
    return path


def _uses_openmp(code: bytes) -> bool:
    return b"__kmpc_fork_call" in code


_ARCHIVE_MAGIC = object_loader.ARCHIVE_MAGIC


def object_archive(objects: Sequence[bytes]) -> bytes:
    """The objects of a module's shards in one ar archive (without a symbol index),
    which the host links whole: joining them into one object first (``ld -r``)
    took 2-4 ms."""
    parts = [_ARCHIVE_MAGIC]
    for index, data in enumerate(objects):
        fields = [(f"{index}.o/", 16), ("0", 12), ("0", 6), ("0", 6), ("644", 8)]
        fields.append((str(len(data)), 10))
        header = "".join(text.ljust(width) for text, width in fields) + "`\n"
        parts += [header.encode(), data, b"\n" * (len(data) % 2)]
    return b"".join(parts)


def _whole_archive(path: str, through_driver: bool) -> list[str]:
    """Linker arguments for every object in the archive at ``path``, or for the object."""
    if not path.endswith(".a"):
        return [path]
    if through_driver:
        return ["-Wl,--whole-archive", path, "-Wl,--no-whole-archive"]
    return ["--whole-archive", path, "--no-whole-archive"]


def _written(code: bytes, directory: str) -> str:
    """The path of a file in ``directory`` holding ``code``, named for what it is."""
    path = os.path.join(directory, "code.a" if code.startswith(_ARCHIVE_MAGIC) else "code.o")
    with open(path, "wb") as file:
        file.write(code)
    return path


def single_object(code: bytes, joined_with: Sequence[str] = ()) -> bytes:
    """``code`` as one relocatable object: the objects of an archive, and the object
    files ``joined_with``, joined (``ld -r``)."""
    if not code.startswith(_ARCHIVE_MAGIC) and not joined_with:
        return code
    driver = linker()
    if driver is None:
        raise ShloError("no C compiler (cc, gcc or clang) to join the objects; set CC")
    direct = _direct_link(driver)
    joiner = direct[0] if direct is not None else driver
    with tempfile.TemporaryDirectory(prefix="shlo-") as directory:
        joined = os.path.join(directory, "joined.o")
        inputs = _whole_archive(_written(code, directory), direct is None)
        command = [joiner, "-r", "-nostdlib", "-o", joined, *inputs, *joined_with]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise ShloError(f"joining the objects failed: {result.stderr.strip()}")
        with open(joined, "rb") as file:
            return file.read()


def _engine(module: ir.Module, opt_level: int) -> ExecutionEngine:
    """An ExecutionEngine for ``module`` that resolves the symbols of its runtime libraries."""
    runtime = openmp_library()
    shared_libs = [runtime] if runtime is not None else []
    apply_llvm_options()
    return ExecutionEngine(module, opt_level=opt_level, shared_libs=shared_libs)


def _allocation_functions() -> dict[str, int]:
    """The generic allocation functions for in-process JIT code: the C library's, unchecked."""
    libc = ctypes.CDLL(None)
    return {
        name: ctypes.cast(getattr(libc, symbol), ctypes.c_void_p).value
        for name, symbol in (
            ("_mlir_memref_to_llvm_alloc", "malloc"),
            ("_mlir_memref_to_llvm_aligned_alloc", "aligned_alloc"),
            ("_mlir_memref_to_llvm_free", "free"),
        )
    }


def _register_runtime_functions(engine: ExecutionEngine) -> None:
    """Give the engine the allocation functions and the guard's GUARD_FUNCTIONS."""
    for name, address in _allocation_functions().items():
        engine.raw_register_runtime(name, ctypes.c_void_p(address))
    driver = linker()
    if driver is not None:
        for name in GUARD_FUNCTIONS:
            address = _symbol_address(_shared_guard(driver), name)
            engine.raw_register_runtime(name, ctypes.c_void_p(address))


def compile_object(llvm_module: ir.Module | bytes, opt_level: int = 2) -> bytes:
    """The ELF object code LLVM generates for an LLVM-dialect module (or its bytecode).

    Runs in the worker, where a crash in the code generator is a ShloError.
    A large module is compiled in shards on every core the process may use
    (``parallel_codegen``), and its code is then an archive of their objects
    (``object_archive``).
    """
    from shlo.backends.cpu import parallel_codegen
    from shlo.backends.cpu.pipeline import default_threads

    module = (
        llvm_module
        if isinstance(llvm_module, ir.Module)
        else ir.Module.parse(llvm_module, new_context())
    )
    if linker() is not None:  # which links the shards' objects

        def compile_shard(
            shard: ir.Operation, symbol: str, elsewhere: list[str], exported: set[str]
        ) -> bytes:
            return _object_code(shard, opt_level, symbol, elsewhere, exported)

        jobs = default_threads()
        archive = parallel_codegen.compile_in_parallel(module, compile_shard, jobs)
        if archive is not None:
            return archive
    return _object_code(module, opt_level, "main")


def object_code(
    module: ir.Module | ir.Operation,
    symbol: str,
    elsewhere: Sequence[str] = (),
    exported: Collection[str] = (),
) -> bytes:
    """The object code of a shard of a module, at the default optimization level
    (``_object_code``)."""
    return _object_code(module, 2, symbol, elsewhere, exported)


def _object_code(
    module: ir.Module | ir.Operation,
    opt_level: int,
    symbol: str,
    elsewhere: Sequence[str] = (),
    exported: Collection[str] = (),
) -> bytes:
    """The object code of a module that defines ``symbol`` (its lookup starts LLVM).

    ``elsewhere``: functions it calls that another object defines. The JIT
    links what it compiles, so it gets a placeholder address for each; the
    object keeps the unresolved references for the real link. ``exported``:
    the functions it defines that another object calls. Every other function
    it defines gets internal linkage (``internalize``), in ``module`` itself.
    A module that is only glue skips the JIT where ``glue_codegen`` can take it.
    """
    internalize(module, {symbol, *exported})
    glue = glue_codegen.object_code(module, symbol)
    if glue is not None:
        return glue
    symbols = _allocation_functions()
    placeholder = ctypes.cast(ctypes.CDLL(None).abort, ctypes.c_void_p).value
    symbols.update(
        (name, placeholder) for name in (*elsewhere, *precompiled.SYMBOLS, *GUARD_FUNCTIONS)
    )
    _openmp_visible_to_the_jit()
    with tempfile.TemporaryDirectory(prefix="shlo-") as directory:
        path = os.path.join(directory, "code.o")
        write_object_file(module.operation, path, symbol, opt_level, [], symbols)
        with open(path, "rb") as file:
            return file.read()


def internalize(module: ir.Module | ir.Operation, keep: Collection[str]) -> None:
    """Give every function ``module`` defines, but those in ``keep``, internal linkage.

    The JIT adds a packed wrapper (``_mlir_<name>``) to every function with
    external linkage, which LLVM then optimizes and compiles: the kernels'
    wrappers, never called, were 3% of the training step's LLVM time (1062
    -> 1029 ms on one thread; the host calls ``_mlir_main`` alone).
    """
    context = module.context
    external = ir.Attribute.parse("#llvm.linkage<external>", context)
    internal = ir.Attribute.parse("#llvm.linkage<internal>", context)
    for op in module.operation.regions[0].blocks[0].operations:
        op = op.operation
        if (
            op.name == "llvm.func"
            and len(op.regions[0].blocks)
            and op.attributes["linkage"] == external
            and string_value(op.attributes["sym_name"]) not in keep
        ):
            op.attributes["linkage"] = internal


@functools.cache
def _openmp_visible_to_the_jit() -> None:
    """Load the OpenMP runtime, if any, where the JIT finds the process's symbols.

    Given as a shared library instead, every engine read the symbol table of
    libiomp5.so (2.8 MB): 0.7 of the 5.9 ms an engine takes for a module of 30
    instructions. The object code is the same.
    """
    path = openmp_library()
    if path is not None:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)


def linker() -> str | None:
    """The C compiler driver that links object code into a shared library, if any."""
    return _first_on_path(os.environ.get("CC", ""), os.environ.get("PATH"))


@functools.cache
def _first_on_path(cc: str, path: str | None) -> str | None:
    # Cached: three searches of PATH took 0.3 ms of every compile.
    for name in (cc, "cc", "gcc", "clang"):
        if name and shutil.which(name, path=path):
            return name
    return None


def _allocation_guard_object(driver: str) -> str:
    """``_ALLOCATION_GUARD`` compiled once per driver (``build_once``; 40 ms off every load)."""
    return build_once(driver, _ALLOCATION_GUARD, "allocation_guard.o", ["-c", "-O2", "-fPIC"])


def _needed_stub(driver: str, library: str) -> str:
    """An empty shared library whose name is ``library``'s absolute path.

    Linked against it, the code needs ``library`` as linking against the real
    one would, and the loader resolves the code's references there, as it
    does the C library's, which is never on the link line. ld reads the
    whole symbol table of a library it links against: OpenMP's (2.8 MB) took
    5 of softmax's 11 ms link, the stub none.
    """
    flags = ["-shared", "-nostdlib", "-Xlinker", "-soname", "-Xlinker", library]  # commas too
    return build_once(driver, "", "needed.so", flags)


def _stub_or_itself(driver: str, library: str) -> str:
    """A stub of the shared library behind ``library`` (``_needed_stub``), else ``library``."""
    behind = _shared_library_behind(library) if library.endswith(".so") else None
    return library if behind is None else _needed_stub(driver, behind)


@functools.cache
def _shared_library_behind(linked: str) -> str | None:
    """The absolute path of the shared library that ``linked`` stands for, if it says.

    glibc's libm.so is a linker script naming libm.so.6 (and libmvec); ld
    read both libraries' symbol tables on every link: half of it (a small
    program's link 5.2 -> 2.7 ms with a stub of libm.so.6).
    """
    try:
        with open(linked, "rb") as file:
            head = file.read(4096)
    except OSError:
        return None
    if head.startswith(b"\x7fELF"):
        return os.path.realpath(linked)
    named = re.search(rb"(/[^\s()]+\.so[.0-9]*)", head)  # the script's first library
    path = named.group(1).decode() if named else None
    return path if path is not None and os.path.isfile(path) else None


@functools.cache
def _direct_link(driver: str) -> tuple[str, list[str]] | None:
    """The linker ``driver`` runs, and the libraries it links in: C math and libgcc.

    A link through the driver spawns it, collect2 and ld: 16 ms for a small
    program where ld alone takes 6. None when the driver does not say.
    """

    def ask(flag: str) -> str:
        answer = subprocess.run([driver, flag], capture_output=True, text=True, check=False)
        return answer.stdout.strip() if answer.returncode == 0 else ""

    ld = shutil.which(ask("-print-prog-name=ld"))
    libraries = [ask("-print-file-name=libm.so"), ask("-print-libgcc-file-name")]
    if ld is None or not all(os.path.isabs(library) for library in libraries):
        return None
    return ld, libraries


def _link_commands(driver: str, obj: str, lib: str, openmp: str | None) -> list[list[str]]:
    """Commands that link ``obj`` into the shared library ``lib``, in the order to try them.

    ``ld`` directly first; the driver when ld fails (say, when it cannot
    find a library the driver would). The JIT's large code model uses
    absolute relocations (text relocations in a shared library);
    -Bsymbolic binds the library's own symbols (its function is named
    main) to itself, never to the host's.
    """
    guard = _allocation_guard_object(driver)
    rpath = [] if openmp is None else [openmp, "-rpath", os.path.dirname(openmp)]
    commands = []
    direct = _direct_link(driver)
    if direct is not None:
        ld, libraries = direct
        shared = [ld, "-shared", "-Bsymbolic", "-o", lib, *_whole_archive(obj, False), guard]
        try:
            stubbed = [_stub_or_itself(driver, library) for library in libraries]
            if openmp is not None:
                stubbed.append(_needed_stub(driver, openmp))
            if stubbed != libraries:
                commands.append([*shared, *stubbed])
        except ShloError:
            pass  # no stubs: the real libraries below
        commands.append([*shared, *rpath, *libraries])
    through_driver = [driver, "-shared", "-fPIC", "-o", lib, *_whole_archive(obj, True), guard]
    through_driver += ["-lm", "-Wl,-Bsymbolic"]
    if openmp is not None:
        through_driver += [openmp, f"-Wl,-rpath,{os.path.dirname(openmp)}"]
    return [*commands, through_driver]


_link_setup: threading.Thread | None = None
_link_setup_lock = threading.Lock()


def prepare_linking_in_background() -> None:
    """Make what linking needs (the allocation guard's object, the stub libraries: what
    ``_link_commands`` makes) and load the kernels, in a thread, once per process,
    while the worker compiles.

    Each is made once and kept (``shlo.c_build.build_once``); made on demand,
    they took 90 of the 500 ms of a process's first compilation (``shlo-run``
    on a small program). A failure here is left for the link itself to report.
    """
    global _link_setup
    with _link_setup_lock:
        if _link_setup is None:
            _link_setup = threading.Thread(target=_prepare_linking, name="shlo-link-setup")
            _link_setup.daemon = True
            _link_setup.start()


def _prepare_linking() -> None:
    driver = linker()
    if driver is None:
        return
    try:
        # The commands themselves are dropped; making them makes and keeps the helpers.
        _link_commands(driver, "code.o", "code.so", openmp_library())
        _shared_guard_path(driver)
        precompiled.shared_library_path(driver)
        # Loaded too (with the OpenMP runtime): 4 ms of the first program's load
        # that calls a kernel, the first matmul after a warm-up compilation.
        precompiled.library()
    except (ShloError, OSError, RuntimeError, subprocess.SubprocessError):
        pass


def _shared_guard_path(driver: str) -> str:
    """``_ALLOCATION_GUARD`` as a shared library for the code ``object_loader`` loads:
    one per process, whose entry takes the code's ``_mlir_main`` as an argument."""
    flags = ["-shared", "-fPIC", "-O2", "-DSHLO_SHARED_GUARD"]
    return build_once(driver, _ALLOCATION_GUARD, "allocation_guard.so", flags)


@functools.cache
def _shared_guard(driver: str) -> ctypes.CDLL:
    guard = ctypes.CDLL(_shared_guard_path(driver))
    guard.shlo_call_entry.restype = ctypes.c_int
    guard.shlo_call_entry.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    return guard


@functools.cache
def _libraries_to_resolve_from(openmp: str | None) -> list[ctypes.CDLL]:
    """Where the symbols the code does not define come from, in order: after the
    guard, what this process has loaded (the C library), then what ld would link."""
    libraries = [ctypes.CDLL(None)]
    if openmp is not None:
        libraries.append(ctypes.CDLL(openmp))
    for name in ("libm.so.6", "libgcc_s.so.1"):
        try:
            libraries.append(ctypes.CDLL(name))
        except OSError:
            pass
    return libraries


def _symbol_address(library: ctypes.CDLL, name: str) -> int | None:
    try:
        return ctypes.cast(getattr(library, name), ctypes.c_void_p).value
    except AttributeError:
        return None


def _load_without_linker(
    object_code: bytes, driver: str, openmp: str | None, kernels: ctypes.CDLL | None
) -> tuple[Callable[[Any], int], Callable[[], None]] | None:
    """``object_code`` loaded by ``object_loader``: the call of its entry through the
    shared guard, and what unloads it; None where the loader cannot. ``kernels``: the
    precompiled kernels, when the code calls them."""
    try:
        guard = _shared_guard(driver)
    except (ShloError, OSError, subprocess.SubprocessError):
        return None
    libraries = [guard, *_libraries_to_resolve_from(openmp), *([kernels] if kernels else [])]

    def resolve(name: str) -> int | None:
        return next(filter(None, (_symbol_address(lib, name) for lib in libraries)), None)

    image = object_loader.load(object_code, resolve)
    if image is None:
        return None
    entry = image.symbols.get("_mlir_main")
    if entry is None:
        image.release()
        return None

    def unload() -> None:
        image.release()
        guard.shlo_release_kept()

    return functools.partial(guard.shlo_call_entry, entry), unload


# Tests turn it off to check the linked path.
_LOAD_WITHOUT_LINKER = True


def _load_object(object_code: bytes) -> tuple[Callable[[Any], int], Callable[[], None]]:
    """Load ``object_code`` (an object, or an archive of them): the call of its entry
    (``int shlo_call(void **args)``) and what unloads it. Without a linker where
    ``object_loader`` can; else linked into a shared library by ld."""
    driver = linker()
    if driver is None:
        raise ShloError("no C compiler (cc, gcc or clang) to link the generated code; set CC")
    openmp = None
    if _uses_openmp(object_code):
        openmp = load_openmp()
        if openmp is None:
            raise ShloError("the code runs on threads, but intel-openmp is not installed")
    # Where the code's references to the kernels resolve (linked: by the global scope).
    kernels = precompiled.library() if precompiled.uses_kernels(object_code) else None
    if _LOAD_WITHOUT_LINKER:
        loaded = _load_without_linker(object_code, driver, openmp, kernels)
        if loaded is not None:
            return loaded
    return _link_and_load(object_code, driver, openmp)


def _link_and_load(
    object_code: bytes, driver: str, openmp: str | None
) -> tuple[Callable[[Any], int], Callable[[], None]]:
    with tempfile.TemporaryDirectory(prefix="shlo-") as directory:
        obj, lib = _written(object_code, directory), os.path.join(directory, "code.so")
        for command in _link_commands(driver, obj, lib, openmp):
            linked = subprocess.run(command, capture_output=True, text=True, check=False)
            if linked.returncode == 0:
                break
        else:
            raise ShloError(f"linking the generated code failed: {linked.stderr.strip()}")
        try:
            library = ctypes.CDLL(lib)  # stays mapped once the file is removed
        except OSError as error:
            raise ShloError(f"loading the generated code failed: {error}") from None
    address = ctypes.cast(library.shlo_call, ctypes.c_void_p).value
    assert address is not None
    call = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(address)
    return call, functools.partial(_ctypes.dlclose, library._handle)


# Result arrays start on a cache line: DLPack consumers such as jax take
# such memory without a copy, and the generated code stores whole vectors.
RESULT_ALIGNMENT = 64


def _interface_data_pointer(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _data_pointer_reader() -> Callable[[np.ndarray], int]:
    """The fastest correct way to read an ndarray's data pointer here.

    ``__array_interface__`` builds a dict: 1 us an array, and a small Flax
    BERT passes 43 arrays a call, which took longer than its compiled code.
    numpy's C macro ``PyArray_DATA`` reads the ``data`` field that follows
    the object header, so every compiled extension depends on where it is;
    it is read there with ctypes (0.14 us) once probes of several arrays
    (views, read-only, 0-d, empty) find it at the same offset, else through
    ``__array_interface__``.
    """
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    read_only = base[1:, 2:]
    read_only.flags.writeable = False
    probes = [base, base[2:], read_only, np.array(2.5), np.empty((0, 3))]
    want = [_interface_data_pointer(p) for p in probes]
    read = ctypes.c_void_p.from_address
    for offset in range(ctypes.sizeof(ctypes.c_void_p), 129, ctypes.sizeof(ctypes.c_void_p)):
        if [read(id(p) + offset).value or 0 for p in probes] == want:
            return lambda array: read(id(array) + offset).value or 0
    return _interface_data_pointer


data_pointer = _data_pointer_reader()


def aligned_empty(
    shape: tuple[int, ...], dtype: np.dtype[Any], nbytes: int, raw: np.ndarray | None = None
) -> np.ndarray:
    """An uninitialized array of ``nbytes`` whose data starts on a RESULT_ALIGNMENT boundary.

    ``raw``: the bytes it views (``nbytes + RESULT_ALIGNMENT`` of them); new ones by default.
    """
    # On the path of every call: plain ints and one ndarray over the buffer
    # (np.prod and .ctypes took 4 of a 12 us call).
    if raw is None:
        raw = np.empty(nbytes + RESULT_ALIGNMENT, np.uint8)
    start = -data_pointer(raw) % RESULT_ALIGNMENT
    return np.ndarray(shape, dtype, raw, start)


def _reference_counts(buffers: list[np.ndarray]) -> list[int]:
    return [sys.getrefcount(buffer) for buffer in buffers]


# What _reference_counts says of a buffer that only its list refers to.
_UNREFERENCED = _reference_counts([np.empty(1, np.uint8)])[0]


class ResultBuffers:
    """The buffers one result of a compiled function is written to, reused once released.

    A new result in memory that malloc takes back from the kernel (glibc
    returns chunks above its mmap threshold and the top of its heap when
    they are freed) page-faults on every first write: the elementwise chain
    on 4M floats took 1.8 ms instead of 0.73 when its caller had held two
    results (487 faults a call). This keeps up to ``KEEP`` buffers of
    ``MIN_BYTES`` to ``MAX_BYTES`` and hands one out again only when nothing else
    refers to it: each array viewing it (the result, a slice of it, the
    array behind a memoryview or a DLPack capsule) holds a reference.
    """

    # Results below this come from malloc, whose small chunks stay mapped.
    MIN_BYTES = 1 << 16
    # Above this a released buffer goes back to malloc: keeping it would hold
    # memory its caller gave up.
    MAX_BYTES = 1 << 26
    # A caller that keeps the last result while it makes the next needs two.
    KEEP = 2

    def __init__(self, nbytes: int) -> None:
        self._size = nbytes + RESULT_ALIGNMENT
        self._kept: list[np.ndarray] = []

    @classmethod
    def reused(cls, nbytes: int) -> bool:
        return cls.MIN_BYTES <= nbytes <= cls.MAX_BYTES

    def take(self) -> np.ndarray:
        """A buffer that no array refers to: a kept one, else a new one."""
        counts = _reference_counts(self._kept)
        for buffer, count in zip(self._kept, counts):
            if count == _UNREFERENCED:
                return buffer
        buffer = np.empty(self._size, np.uint8)
        if len(self._kept) < self.KEEP:
            self._kept.append(buffer)
        return buffer


class LoadedFunction:
    """A compiled entry function with static input and result types."""

    def __init__(
        self,
        code: bytes,
        input_types: Sequence[str],
        result_types: Sequence[str],
        opt_level: int = 2,
    ) -> None:
        """``code``: object code from ``compile_object`` (an object or an archive of
        them, linked and loaded here), or LLVM-dialect bytecode (JIT-compiled in this
        process); types as ``Lowered`` holds them.
        """
        self.inputs = [ArrayType.parse(t) for t in input_types]
        self.results = [ArrayType.parse(t) for t in result_types]
        self._unload: Callable[[], None] | None = None
        self._engine: ExecutionEngine | None = None
        if code.startswith((_ELF_MAGIC, _ARCHIVE_MAGIC)):
            # int shlo_call(void **args): 1 when an allocation failed.
            self._function, self._unload = _load_object(code)
        else:
            self._context = new_context()
            module = ir.Module.parse(code, self._context)
            load_openmp()
            self._engine = _engine(module, opt_level)
            _register_runtime_functions(self._engine)
            if precompiled.uses_kernels(code):
                for name in precompiled.SYMBOLS:
                    address = _symbol_address(precompiled.library(), name)
                    self._engine.raw_register_runtime(name, ctypes.c_void_p(address))
            # raw_lookup finds the packed wrapper: void _mlir_main(void **args).
            address = self._engine.raw_lookup("main")
            if not address:
                raise RuntimeError("the JIT has no symbol main")
            self._function = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        self._buffer_count = len(self.inputs) + len(self.results)
        self._result_specs = [
            (t.shape, t.dtype, math.prod(t.shape) * t.dtype.itemsize) for t in self.results
        ]
        self._sub_byte = any(t.element_type in _SUB_BYTE_BITS for t in self.results)
        self._per_thread = threading.local()

    def __del__(self) -> None:
        # Evicted from a cache: unmap the code (nothing else refers to it).
        unload = getattr(self, "_unload", None)
        # At interpreter exit the process unmaps everything anyway, and
        # module globals such as sys and _ctypes may already be None.
        if unload is not None and sys is not None and not sys.is_finalizing():
            self._function = None
            unload()

    def _argument_buffers(self) -> tuple[ctypes.Array[ctypes.c_void_p], int]:
        """This thread's data pointers, and the packed argument list that points at them."""
        buffers = getattr(self._per_thread, "buffers", None)
        if buffers is None:
            data = (ctypes.c_void_p * max(self._buffer_count, 1))()
            # _mlir_main(void **arguments) reads main's one argument from arguments[0].
            argument = ctypes.c_void_p(ctypes.addressof(data))
            packed = (ctypes.c_void_p * 1)(ctypes.addressof(argument))
            buffers = self._per_thread.buffers = (data, ctypes.addressof(packed), argument, packed)
        return buffers[0], buffers[1]

    def _result_arrays(self) -> list[np.ndarray]:
        """Arrays for this call's results, in this thread's reused buffers where large."""
        kept = getattr(self._per_thread, "results", None)
        if kept is None:
            kept = self._per_thread.results = [
                ResultBuffers(nbytes) if ResultBuffers.reused(nbytes) else None
                for _, _, nbytes in self._result_specs
            ]
        return [
            aligned_empty(*spec, None if buffers is None else buffers.take())
            for spec, buffers in zip(self._result_specs, kept)
        ]

    def __call__(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Run on C-contiguous arrays of the input types; returns new result arrays."""
        outputs = self._result_arrays()
        data, packed = self._argument_buffers()
        for index, array in enumerate([*arrays, *outputs]):
            data[index] = data_pointer(array)
        if self._function(packed):
            raise MemoryError(
                "the compiled code could not allocate a buffer: not enough memory "
                "(the buffers it had allocated are lost)"
            )
        if self._sub_byte:
            return [fix_sub_byte(out, t.element_type) for out, t in zip(outputs, self.results)]
        return outputs
