#!/usr/bin/env python3
"""Generate python/shlo/data/upstream_passes.tsv for `shlo-opt --list-passes`.

The MLIR Python bindings can run a pass pipeline but cannot enumerate the
pass registry, nor return a pass's description.  So we take candidate names
from the string table of the wheel's native library, keep those that
PassManager.parse() accepts, and recover summaries from neighbouring strings:
tablegen'd passes leave "ClassName", "pass-argument", "Description" adjacent
when the compiler keeps all three in one string section (it moves literals of
30+ characters to an aligned one).  When no summary is found reliably, one is
derived from the pass name.

Usage: python tools/gen_upstream_passes.py [output.tsv]
"""

from __future__ import annotations

import re
import struct
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "python/shlo/data/upstream_passes.tsv"
NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
TAIL = re.compile(r"[a-z0-9-]{3,}$")  # the linker may tail-merge string literals
SENTENCE = re.compile(r'[A-Z][^%{}\t"]*\s[^%{}\t"]*')
EXCLUDED = ("torch", "convert-torch-", "refback-", "tm-tensor-")  # torch dialect
STABLEHLO = ("stablehlo-", "chlo-", "vhlo-", "shape-legalize-to-stablehlo")
UNKNOWN = "does not refer to a registered pass or pass pipeline"
STOP = {"to", "and", "for", "of", "the", "in", "on", "op", "ops", "pass", "convert"}
DIALECT = {
    "acc": "OpenACC",
    "affine": "Affine",
    "amdgpu": "AMDGPU",
    "amx": "AMX",
    "arith": "Arith",
    "arm-neon": "ArmNeon",
    "arm-sme": "ArmSME",
    "arm-sve": "ArmSVE",
    "async": "Async",
    "bufferization": "Bufferization",
    "cf": "ControlFlow",
    "chlo": "CHLO",
    "complex": "Complex",
    "emitc": "EmitC",
    "func": "Func",
    "gpu": "GPU",
    "index": "Index",
    "linalg": "Linalg",
    "llvm": "LLVM",
    "math": "Math",
    "memref": "MemRef",
    "mlprogram": "MLProgram",
    "mpi": "MPI",
    "nvgpu": "NVGPU",
    "nvvm": "NVVM",
    "omp": "OpenMP",
    "openacc": "OpenACC",
    "openmp": "OpenMP",
    "pdl": "PDL",
    "pdl-interp": "PDLInterp",
    "rocdl": "ROCDL",
    "scf": "SCF",
    "shape": "Shape",
    "shard": "Shard",
    "spirv": "SPIR-V",
    "stablehlo": "StableHLO",
    "tensor": "Tensor",
    "tosa": "TOSA",
    "transform": "Transform",
    "ub": "UB",
    "vector": "Vector",
    "vhlo": "VHLO",
    "xegpu": "XeGPU",
    "xevm": "XeVM",
}
VOCAB = DIALECT | {
    "2d": "2-D",
    "abi": "ABI",
    "apfloat": "APFloat",
    "arm": "Arm",
    "c": "C",
    "cse": "common subexpression elimination",
    "datalayout": "data layout",
    "dce": "dead code elimination",
    "debuginfo": "debug info",
    "fma": "FMA",
    "int": "integer",
    "intr": "intrinsics",
    "ir": "IR",
    "llvm-spv": "LLVM SPIR-V",
    "mlgo": "MLGO",
    "mlir": "MLIR",
    "qdq": "QDQ",
    "scalrep": "scalar replacement",
    "sg": "subgroup",
    "std": "standard",
    "vce": "VCE",
    "wasm": "Wasm",
    "webgpu": "WebGPU",
    "wg": "workgroup",
}
# Single-word passes whose names say too little to derive a summary from.
KNOWN = {
    "canonicalize": "Canonicalize operations",
    "cse": "Eliminate common sub-expressions",
    "inline": "Inline function calls",
    "mem2reg": "Promote memory slots into values",
    "sccp": "Sparse conditional constant propagation",
    "sroa": "Scalar replacement of aggregates",
    "sparsifier": "Lower sparse tensor code to LLVM IR",
    "sparsification": "Generate sparse tensor code from sparse tensor types",
}


def load_mlir():
    """Return (PassManager class, Context, native library) with all passes registered."""
    # MLIR is imported only through shlo's compatibility layer.
    from shlo._mlir_compat import ir, new_context, passmanager

    # The bindings' native code: the largest shared library next to `ir`.
    lib = max(
        (Path(ir.__file__).parent / "_mlir_libs").glob("*.so"), key=lambda f: f.stat().st_size
    )
    return passmanager.PassManager, new_context(), lib


def read_strings(lib: Path) -> list[str]:
    """Printable runs of >= 3 chars (like `strings -n 3`) from the ELF .rodata section."""
    data = lib.read_bytes()
    if data[:4] == b"\x7fELF":  # 64-bit little-endian; else scan the whole file
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        entsize, count, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        heads = [struct.unpack_from("<I4xQQQQ", data, shoff + i * entsize) for i in range(count)]
        base = heads[shstrndx][3]  # (name, flags, addr, offset, size) of the names table
        for name, _, _, offset, length in heads:
            if data[base + name : base + name + 8] == b".rodata\0":
                data = data[offset : offset + length]
                break
    return [m.decode() for m in re.findall(rb"[\x20-\x7e\t]{3,}", data)]


def probe(pm_cls, ctx, pipeline: str) -> tuple[str | None, str]:
    """Parse a pipeline; return (printed pipeline or None, error text)."""
    try:
        with ctx:
            return str(pm_cls.parse(pipeline)), ""
    except ValueError as e:
        return None, str(e)


def classify(pm_cls, ctx, name: str) -> dict | None:
    """Return anchor/pipeline/options info if `name` is registered."""
    printed, err = probe(pm_cls, ctx, f"builtin.module({name})")
    if printed is None:
        if UNKNOWN in err:
            return None
        m = re.search(r"restricted to '([^']+)'", err)
        anchor = m.group(1) if m else ""
        if anchor:
            printed, _ = probe(pm_cls, ctx, f"builtin.module({anchor}({name}))")
        return {"anchor": anchor, "pipeline": False, "printed": printed or ""}
    if not re.match(rf"builtin\.module\({re.escape(name)}[{{)]", printed):
        # A registered pipeline expands into its passes; never nest it (a
        # pipeline adding module passes to a nested manager aborts).
        return {"anchor": "builtin.module", "pipeline": True, "printed": ""}
    nested, _ = probe(pm_cls, ctx, f"builtin.module(func.func({name}))")
    return {"anchor": "" if nested else "builtin.module", "pipeline": False, "printed": printed}


def stem_match(name: str, text: str) -> bool:
    """Whether `text` shares a word (4-letter stem) with the pass name."""
    toks = [t for t in name.split("-") if len(t) >= 3 and t not in STOP]
    words = [w for w in re.split(r"[^a-z0-9]+", text.lower()) if len(w) >= 3]
    return any(w[:4] == t[:4] for t in toks for w in words)


def adjacent_summary(name: str, info: dict, lines: list[str], at: list[int]) -> str:
    """The string right after the pass argument, if it reads as its summary."""
    options = re.findall(r"([a-z0-9-]+)=", info["printed"])
    for i in at:
        s = lines[i + 1] if i + 1 < len(lines) else ""
        if (
            SENTENCE.fullmatch(s)
            and len(s) <= 200
            and ": " not in s
            and not s.endswith((":", " ", "'", "`", ",", "@"))
            and stem_match(name, s)
            # Option/statistic descriptions usually restate their name.
            and not any(o.replace("-", " ") in s.lower() for o in options)
        ):
            return s
    return ""


def phrase(part: str, lead: bool = True) -> str:
    """Readable words for a dash-separated name fragment."""
    toks, out = part.split("-"), []
    while toks:
        key = "-".join(toks[:2]) if "-".join(toks[:2]) in VOCAB else toks[0]
        toks = toks[key.count("-") + 1 :]
        word = VOCAB.get(key, key)
        plain = word == key.capitalize() and (out or not lead)  # e.g. "shape" mid-sentence
        out.append(key if plain else word)
    text = re.sub(r"(\d) (?=\d)", r"\1.", " ".join(out))  # "1 1" -> "1.1"
    return text[0].upper() + text[1:] if lead else text


def derived_summary(name: str, pipeline: bool) -> str:
    """A few words derived from the pass name."""
    text = KNOWN.get(name)
    if text is None:
        base = name.removesuffix("-pipeline")
        src, sep, dst = base.removeprefix("convert-").partition("-to-")
        both = src in DIALECT and dst in DIALECT
        if sep and "-to-" not in dst and (base.startswith("convert-") or both):
            a = f"{DIALECT[src]} dialect" if src in DIALECT else phrase(src, lead=False)
            a += "" if a.endswith("s") else " ops"
            b = f"the {DIALECT[dst]} dialect" if dst in DIALECT else phrase(dst, lead=False)
            text = f"Convert {a} to {b}"
        else:
            text = phrase(base)
    return f"Pass pipeline: {text}" if pipeline else text


def main() -> None:
    start = time.perf_counter()
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    pm_cls, ctx, lib = load_mlir()
    lines = read_strings(lib)
    candidates = set()
    for tail in {m.group() for s in lines if (m := TAIL.search(s))}:
        candidates.update(tail[i:] for i in range(len(tail) - 2))
    candidates = {c for c in candidates if NAME.fullmatch(c) and not c.startswith(EXCLUDED)}
    passes = {}
    for name in sorted(candidates):
        info = classify(pm_cls, ctx, name)
        if info is not None:
            passes[name] = info
    where: dict[str, list[int]] = {}
    for i, s in enumerate(lines):
        if s in passes:
            where.setdefault(s, []).append(i)
    rows, found = ["name\tanchor\tgroup\tsummary"], 0
    for name, info in sorted(passes.items()):
        summary = adjacent_summary(name, info, lines, where.get(name, []))
        found += bool(summary)
        if summary and info["pipeline"]:
            summary = f"Pass pipeline: {summary}"
        summary = summary or derived_summary(name, info["pipeline"])
        group = "stablehlo" if name.startswith(STABLEHLO) else "mlir"
        rows.append(f"{name}\t{info['anchor']}\t{group}\t{summary}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(rows) + "\n")
    print(
        f"{len(passes)} passes ({sum(p['pipeline'] for p in passes.values())}"
        f" pipelines) from {len(candidates)} candidates; {found} summaries "
        f"from strings, {len(passes) - found} derived; "
        f"{time.perf_counter() - start:.1f}s -> {out}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
