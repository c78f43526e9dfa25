"""Facts: values a page computes at build time instead of typing them (a Python-Markdown extension).

Numbers about MLX's host choices (tile configurations, thresholds, thread counts, the
lines of ``matmul.cpp`` they come from) are said once, in :mod:`gemmglossary.mlx.matmul`,
and tested there. A page asks for one with::

    {{fact NAME key=value key=value ...}}

anywhere in its Markdown, also inside code spans and fenced blocks. ``NAME`` is one of
:data:`FACTS`; each argument is ``key=value`` with no spaces (booleans are ``true`` or
``false``; integers within the range the fact declares, :func:`gemmglossary.text_args.Int`). The text is replaced by the value before any other Markdown processing, so
``[matmul.cpp]({{fact mlx.url rule=tile_macro}})`` is an ordinary link. An unknown name,
an unknown, missing or malformed argument, or a value the fact rejects fails the build
with the page and line of the fact.

It is a Markdown extension (``markdown_extensions: [gemmglossary.docs_hooks.facts]`` in
mkdocs.yml), not an MkDocs hook, so any engine that runs Python-Markdown extensions
(Zensical too, issue #21) expands facts the same way. Errors name the page's own line
when the engine says which page it is converting (:mod:`.page`: MkDocs and Zensical
do); elsewhere, the line of the text being converted.
"""

from __future__ import annotations

import contextvars
import re
from pathlib import Path
from typing import Literal

import numpy as np
from markdown import Extension
from markdown.preprocessors import Preprocessor

from .. import settings, traffic, vendor
from ..mlx import matmul as mm
from ..mlx import affine
from ..mlx import quantized as mq
from ..text_args import Int, keyword_arguments

#: The ranges of the facts' integer arguments: MLX's shapes and sizes are C ints; device
#: generations have two digits; line numbers of a source file.
Size = Int(1, 2 ** 31 - 1)
SizeOrNone = Int(0, 2 ** 31 - 1)  # 0: not given
Generation = Int(1, 99)
Line = Int(0, 10 ** 6)  # 0: not given
Bits = Int(1, 8)
GroupSize = Int(1, 1024)
from .page import current_page
from .page_errors import PageError

#: A fact: ``{{fact`` NAME then ``key=value`` words, closed by ``}}`` on the same line.
FACT = re.compile(r"\{\{fact\b(?P<body>[^{}\n]*)\}\}")
#: Anything that opens a fact, well formed or not (a typo must not pass as text).
OPENER = re.compile(r"\{\{\s*fact\b")
NAME = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*$")
ARG = re.compile(r"(?P<key>[A-Za-z][A-Za-z0-9_]*)=(?P<value>\S+)$")


class FactError(ValueError):
    """A fact that cannot be computed; the message names the page and line."""


class FactTagError(PageError, FactError):
    """A page's fact that cannot be computed, raised by the extension: one message under
    MkDocs too, no traceback."""


# ----------------------------------------------------------------------------- formatting

def times(*values: int) -> str:
    return "×".join(str(v) for v in values)


def either(values) -> str:
    """``a``, ``a or b``, ``a, b or c``: a set of values in the order given."""
    values = [str(v) for v in values]
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " or " + values[-1]


def triple(t: tuple[int, int, int]) -> str:
    return "(" + ", ".join(str(v) for v in t) + ")"


def config_field(c: mm.TileConfig, field: str) -> str:
    fields = {
        "tile": lambda: times(c.bm, c.bn, c.bk), "ctile": lambda: times(c.bm, c.bn),
        "bm": lambda: c.bm, "bn": lambda: c.bn, "bk": lambda: c.bk, "wm": lambda: c.wm,
        "wn": lambda: c.wn, "simdgroups": lambda: times(c.wm, c.wn), "tm": lambda: c.tm,
        "tn": lambda: c.tn, "block": lambda: times(c.tm, c.tn), "threads": lambda: c.threads,
        "fragment": lambda: times(c.fragment, c.fragment), "label": c.label,
        "threadgroup": lambda: triple((32, c.wn, c.wm)),
    }
    if field not in fields:
        raise mm.HostError(f"field must be one of {', '.join(fields)}, got {field!r}")
    return str(fields[field]())


CONFIG_FIELDS = Literal["tile", "ctile", "bm", "bn", "bk", "wm", "wn", "simdgroups", "tm", "tn",
                        "block", "threads", "fragment", "label", "threadgroup"]


def _device(device: str, gen: int) -> mm.Device:
    return mm.Device(device, gen)


def _config(text: str) -> mm.TileConfig:
    """``64x64x16x2x2``: BM, BN, BK, WM, WN."""
    parts = text.split("x")
    if len(parts) != 5 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise mm.HostError(f"config must be BMxBNxBKxWMxWN, e.g. 64x64x16x2x2, got {text!r}")
    return mm.TileConfig(*(int(p) for p in parts))


# ----------------------------------------------------------------------------- the facts

def fact_tile(*, dtype: str = "float32", device: str = "g", gen: Generation = 15, ta: bool = False,
              tb: bool = False, M: Size = 1024, N: Size = 1024, K: Size = 1024, batch: Size = 1,
              routed: bool = True, field: CONFIG_FIELDS = "tile") -> str:
    """The fused steel kernel's configuration (GEMM_TPARAM_MACRO) for one case. The product
    must be one MLX sends to the fused kernel (:func:`gemmglossary.mlx.matmul.route`), or
    the tile would be shown for a product that never uses it; ``routed=false`` asks for the
    configuration the macro would give anyway (for a page that says so)."""
    dev = _device(device, gen)
    if routed:
        r = mm.route(mm.Problem(M, N, K, dtype, ta, tb, batch), dev)
        if r.kernel != "fused":
            raise mm.HostError(f"MLX sends {M}×{N}×{K} ({dtype}, class {device}, generation {gen}) to "
                               f"{r.kernel}, not to the fused kernel whose tile this is: pick a product "
                               "that reaches it, or say so on the page and pass routed=false")
    return config_field(mm.regular_config(dtype, dev, ta, tb, M, N, K, batch), field)


def fact_nax_tile(*, device: str = "g", gen: Generation = 17, M: Size = 1024, N: Size = 1024,
                  K: Size = 1024, dtype: str = "float16", field: CONFIG_FIELDS = "tile") -> str:
    """The NAX fused kernel's configuration for one case, a product MLX sends to that kernel
    (not to the NAX split-K, whose tile is its own)."""
    dev = _device(device, gen)
    r = mm.route(mm.Problem(M, N, K, dtype), dev)
    if r.kernel != "fused_nax":
        raise mm.HostError(f"MLX sends {M}×{N}×{K} ({dtype}, class {device}, generation {gen}) to "
                           f"{r.kernel}, not to the NAX fused kernel whose tile this is")
    return config_field(mm.nax_config(dev, M, N, K), field)


ROUTE_FIELDS = Literal["kernel", "kernel_name", "threads", "threadgroup", "threadgroups",
                       "swizzle_log", "partitions", "tile", "simdgroups", "block"]


def fact_route(*, M: Size, N: Size, K: Size, dtype: str = "float32", device: str = "g", gen: Generation = 15,
               ta: bool = False, tb: bool = False, batch: Size = 1, shared_b: bool = False,
               tf32: bool = mm.TF32_DEFAULT, field: ROUTE_FIELDS = "kernel") -> str:
    """Where ``Matmul::eval_gpu`` sends one product, and what it dispatches."""
    r = mm.route(mm.Problem(M, N, K, dtype, ta, tb, batch, shared_b), _device(device, gen), tf32)
    if field == "kernel":
        return r.kernel
    if field == "kernel_name":
        return r.kernel_name
    if field == "threads":
        return str(r.threads)
    if field == "threadgroup":
        return triple(r.threads_per_threadgroup)
    if field == "threadgroups":
        return triple(r.threadgroups)
    if field == "swizzle_log":
        return str(r.swizzle_log)
    if field == "partitions":
        if r.splitk is None:
            raise mm.HostError(f"this product goes to {r.kernel}, not to split-K")
        return str(r.splitk.partitions)
    if r.config is None:
        raise mm.HostError(f"this product goes to {r.kernel}, which has no tile configuration")
    return config_field(r.config, field)


def fact_configs(*, kind: Literal["regular", "nax"] = "regular",
                 field: Literal["simdgroups", "threads", "tiles", "count", "deeper"] = "threads") -> str:
    """Every configuration one kind of fused kernel can use, summarised (``deeper``: those
    whose BK is above the default configuration's)."""
    if kind == "regular":
        default = mm.regular_config("float32", mm.Device("s", 15), False, False, 1, 1, 1)
        configs = sorted(mm.regular_configs(),
                         key=lambda c: (c != default, -c.threads, -c.wm, -c.bm, c.as_tuple))
    else:
        seen = {mm.nax_config(mm.Device(d, 17), M, N, K)
                for d in "gsd" for (M, N, K) in ((1024, 1024, 1024), (256, 256, 16384))}
        configs = sorted(seen, key=lambda c: (-c.threads, c.as_tuple))
    if field == "count":
        return str(len(configs))
    if field == "deeper":
        configs = [c for c in configs if c.bk > configs[0].bk]
        field = "tiles"
    if field == "tiles":
        return either(dict.fromkeys(f"{times(c.bm, c.bn, c.bk)} ({times(c.wm, c.wn)})" for c in configs))
    if field == "simdgroups":
        return either(dict.fromkeys(times(c.wm, c.wn) for c in configs))
    return either(dict.fromkeys(c.threads for c in configs))


def fact_loader(*, config: str = "64x64x16x2x2", operand: Literal["a", "b"] = "a",
                dtype: str = "float32", ta: bool = False, tb: bool = False,
                field: Literal["n_reads", "tcols", "trows", "rows", "cols", "threads", "passes",
                               "bytes", "tile"] = "n_reads") -> str:
    """How ``BlockLoader`` splits one operand's tile over the threadgroup."""
    if dtype not in mm.ITEMSIZE:
        raise mm.HostError(f"dtype must be one of {', '.join(mm.ITEMSIZE)}, got {dtype!r}")
    a, b = mm.gemm_loaders(_config(config), ta, tb)
    shape = a if operand == "a" else b
    if field == "bytes":
        return str(shape.n_reads * mm.ITEMSIZE[dtype])
    if field == "tile":
        return times(shape.rows, shape.cols)
    return str(getattr(shape, field))


def fact_threadgroup_memory(*, config: str = "64x64x16x2x2", dtype: str = "float32",
                            ta: bool = False, tb: bool = False,
                            unit: Literal["bytes", "KiB"] = "bytes") -> str:
    """``GEMMKernel::tgp_mem_size`` of one configuration, in bytes or KiB."""
    if dtype not in mm.ITEMSIZE:
        raise mm.HostError(f"dtype must be one of {', '.join(mm.ITEMSIZE)}, got {dtype!r}")
    n = mm.threadgroup_bytes(_config(config), dtype, ta, tb)
    return str(n) if unit == "bytes" else f"{n / 1024:g}"


def fact_url(*, rule: str = "", path: str = "mlx/backend/metal/matmul.cpp", start: Line = 0,
             end: Line = 0, lines: bool = True) -> str:
    """Permalink to lines of MLX's source at the pinned tag (the one release whose headers are
    quoted and whose host code is restated): a named rule (``LINES`` and ``OTHER_LINES`` of
    :mod:`gemmglossary.mlx.matmul`), or ``path`` from ``start`` to ``end``, or the whole file
    ``path`` with ``lines=false``."""
    if rule:
        return mm.rule_url(rule)
    if not lines:
        if start or end:
            raise mm.HostError("lines=false links the whole file: no start= or end=")
        return mm.source_url(None, path=path)
    if start < 1 or (end and end < start):
        raise mm.HostError("needs rule=NAME, or start= (and end= not before it), or lines=false")
    return mm.source_url(start, end or None, path=path)


def fact_host(*, field: Literal["tag", "version", "tree"] = "tag") -> str:
    """Which MLX release the host restatement follows: the pinned tag (``kernels/vendor.toml``)."""
    return {"tag": lambda: mm.MLX_TAG, "version": lambda: mm.MLX_VERSION,
            "tree": lambda: vendor.load_pins().mlx.tree_url()}[field]()


def fact_host_sources() -> str:
    """A Markdown table: every module of :mod:`gemmglossary.mlx`, the MLX host functions and
    files it restates (linked at the pinned tag), and the tag they were read at."""
    from .. import mlx as mlx_package

    rows = ["| Module | Restates | MLX files | Read at |", "|---|---|---|---|"]
    for module, functions, files in mlx_package.HOST_SOURCES:
        links = ", ".join(f"[`{f.rsplit('/', 1)[-1]}`]({mm.source_url(None, path=f)})" for f in files)
        names = ", ".join(f"`{f}`" for f in functions)
        rows.append(f"| `gemmglossary.mlx.{module}` | {names} | {links} | {mm.MLX_TAG} |")
    return "\n".join(rows)


CONSTANTS = {
    "large_matmul": lambda: f"2^{mm.LARGE_MATMUL.bit_length() - 1}",
    "splitk_max_tiles": lambda: str(mm.SPLITK_MAX_TILES),
    "splitk_max_tiles_sd": lambda: str(mm.SPLITK_MAX_TILES_SD),
    "splitk_min_k": lambda: str(16 * mm.SPLITK_MIN_K_STEPS),
    "nax_min_gen": lambda: str(mm.NAX_MIN_GENERATION),
    "nax_min_gen_p": lambda: str(mm.NAX_MIN_GENERATION_P),
    "gemv_wide_min_gen": lambda: str(mm.GEMV_WIDE_MIN_GENERATION),
    "gemv_wide_max_rows": lambda: str(mm.GEMV_WIDE_ROWS_PER_PASS * mm.GEMV_WIDE_MAX_PASSES),
    "tf32_default": lambda: "1" if mm.TF32_DEFAULT else "0",
    "splitk_narrow": lambda: str(mm.SPLITK_NARROW),
    "splitk_min_partitions": lambda: str(mm.SPLITK_MIN_PARTITIONS),
    "splitk_max_partitions": lambda: str(mm.SPLITK_MAX_PARTITIONS),
    "nax_splitk_ratio": lambda: str(mm.NAX_SPLITK_RATIO),
    "nax_splitk_small": lambda: str(mm.NAX_SPLITK_SMALL),
    "nax_splitk_small_ratio": lambda: str(mm.NAX_SPLITK_SMALL_RATIO),
    "nax_swizzle_few_rows": lambda: str(mm.NAX_SWIZZLE_FEW_ROWS),
    "nax_swizzle_scd": lambda: str(mm.NAX_SWIZZLE_SCD),
}


def fact_const(*, name: Literal[tuple(CONSTANTS)]) -> str:  # type: ignore[valid-type]
    """A threshold of MLX's routing, as the tested rules in gemmglossary.mlx.matmul use it."""
    return CONSTANTS[name]()


def fact_pins(*, source: Literal["mlx", "llama_cpp"] = "mlx",
              field: Literal["version", "rev", "archive", "tree", "count", "table"] = "version") -> str:
    """A pinned upstream source (``kernels/vendor.toml``): its distribution's version, the
    tag or commit the site links (``rev``), the distribution file (``archive``), a link to
    the repository at ``rev`` (``tree``), how many files it pins, or a Markdown table of
    them with their sha256 (first 16 hex digits) and permalinks."""
    pinned = vendor.load_pins().source(source)
    if field == "table":
        rows = [f"| File (under `{pinned.vendor_root}/`) | sha256 (first 16 hex digits) |", "|---|---|"]
        rows += [f"| [`{f.path}`]({pinned.permalink(f.path)}) | `{f.sha256[:16]}` |" for f in pinned.files]
        return "\n".join(rows)
    return {"version": lambda: pinned.version, "rev": lambda: pinned.rev, "archive": lambda: pinned.archive,
            "tree": pinned.tree_url, "count": lambda: str(len(pinned.files))}[field]()


def fact_llama_pins(*, field: Literal["version", "rev", "archive", "tree", "count", "table"] = "rev") -> str:
    """The pinned llama.cpp source: :func:`fact_pins` of ``[llama_cpp]`` (by default the commit)."""
    return fact_pins(source="llama_cpp", field=field)


# ----------------------------------------------------------------------------- llama.cpp's host

def _llama_rules() -> dict:
    from ..llama import mul_mat as lmm
    from ..llama import rows as lrows

    return {**{f"mul_mat.{k}": v for k, v in lmm.LINES.items()}, **{f"rows.{k}": v for k, v in lrows.LINES.items()}}


def fact_llama_url(*, rule: str) -> str:
    """Permalink, at the pinned llama.cpp commit, to the lines a rule of gemmglossary.llama
    follows (``mul_mat.use_mm``, ``rows.soft_max_buffers``...)."""
    from ..llama import source as lsource

    rules = _llama_rules()
    if rule not in rules:
        raise FactError(f"rule must be one of {', '.join(sorted(rules))}, got {rule!r}")
    return lsource.url(*rules[rule])


def fact_llama_block(*, name: Literal["q4_0", "q8_0", "q4_K"] = "q4_0",
                     field: Literal["weights", "bytes", "bits"] = "bits") -> str:
    """A llama.cpp block format (gemmglossary.llama.blocks, from ggml-common.h): weights per
    block, bytes per block, bits per weight."""
    from ..llama import blocks as lblocks

    f = lblocks.fmt(name)
    return {"weights": str(f.weights), "bytes": str(f.bytes_per_block), "bits": number(f.bits_per_weight)}[field]


def fact_llama_route(*, type: Literal["f32", "f16", "q4_0", "q8_0", "q4_K"] = "q4_0", M: Size = 1, N: Size = 4096,
                     K: Size = 4096, field: Literal["branch", "kernel", "nsg", "nr0", "nr1", "smem", "grid",
                                                    "threads"] = "kernel") -> str:
    """What llama.cpp's host picks for ``mul_mat`` of an N x K ``type`` weight and M float32
    activation rows (gemmglossary.llama.mul_mat.route)."""
    from ..llama import mul_mat as lmm
    from ..llama.launch import Tensor

    if type in ("f32", "f16"):
        w = Tensor(np.zeros((N, K), np.float32 if type == "f32" else np.float16), type, (K, N, 1, 1))
    else:
        from ..llama import blocks as lblocks

        f = lblocks.fmt(type)
        if K % f.weights:
            raise FactError(f"K = {K} is not a whole number of {type} blocks ({f.weights})")
        w = Tensor(np.zeros((N, K // f.weights * f.bytes_per_block), np.uint8), type, (K, N, 1, 1))
    x = Tensor(np.zeros((M, K), np.float32), "f32", (K, M, 1, 1))
    c = lmm.route(w, x)
    return {"branch": c.branch, "kernel": c.host_name, "nsg": str(c.nsg), "nr0": str(c.nr0), "nr1": str(c.nr1),
            "smem": str(c.smem), "grid": triple(c.grid), "threads": str(32 * c.nsg)}[field]


def fact_llama_mlx_bits(*, bits: Bits = 4, group_size: GroupSize = 64, scale_bits: Int(8, 32) = 16) -> str:
    """Bits per weight of MLX's affine format beside llama.cpp's blocks: the code plus a
    scale and a bias per group (in the weights' float type, float16 by default)."""
    _check_quantization(bits, group_size)
    return number(bits + 2 * scale_bits / group_size)


def fact_llama_const(*, name: str) -> str:
    """An integer ``#define`` of llama.cpp's ggml-metal-impl.h (``N_R0_Q4_0``, ``N_MM_SIMD_GROUP_X``...)."""
    from ..llama import source as lsource

    try:
        return str(lsource.impl_constant(name))
    except KeyError as exc:
        raise FactError(f"ggml-metal-impl.h: {exc}") from None


# ----------------------------------------------------------------------------- what the tests saw warn

#: How the emulator page names each kind of PortabilityWarning.
WARNING_KINDS = {
    "barrier-without-memory-order": "a threadgroup write and another thread's read ordered only by a "
                                    "barrier without `mem_threadgroup`",
    "divergent-barrier": "a barrier that live lanes of a simdgroup skip",
    "returned-before-barrier": "threads that return before a barrier the others wait at",
    "uninitialized-read": "a read of threadgroup memory no thread wrote",
    "oob-read": "a read outside a buffer, allowed by `oob_reads=\"warn\"`",
    "inactive-lane-read": "a simdgroup shuffle that reads a lane that is not active",
    "tensor-layout": "a cooperative tensor filled element by element, whose layout Apple leaves to the "
                     "implementation",
    "library": "a Metal library call whose result the specification leaves open",
    # found only by the opt-in device race check (device_races=True)
    "same-value-write-race": "two threads writing the same value to one element of a device buffer with "
                             "nothing ordering them (found with `device_races=True`)",
    "device-barrier-without-memory-order": "a device write and another thread's read ordered only by a barrier "
                                           "without `mem_device` (found with `device_races=True`)",
    "integer-division-by-zero": "an integer division or remainder by zero, whose value the specification leaves "
                                "undefined (the emulator gives 0)",
}
#: Kinds the emulator's runtime gives a finding that are not warnings (an error's facts).
ERROR_KINDS = {"fixed-size-array"}


def _warning_site(file: str, line: int) -> str:
    """``gemv.h, line 219`` linked upstream for a vendored file, else the path and line."""
    if not file:
        return "(no line)"
    pinned = vendor.load_pins()
    source = pinned.source_of(file)
    if source is None:
        return f"`{file}:{line}`"
    rel = file[len(source.prefix):]
    return f"[`{rel.rsplit('/', 1)[-1]}`, line {line}]({source.permalink(rel, line)})"


#: True while a page is being converted (the extension); a fact evaluated elsewhere (a test
#: reading the pages' links) does not start a coverage run.
_IN_BUILD: contextvars.ContextVar[bool] = contextvars.ContextVar("gemmglossary_facts_in_build", default=False)


def fact_warnings(*, tests: str = "tests/mlx/") -> str:
    """Every kernel that met a PortabilityWarning in the coverage run of the tests under
    ``tests`` (the run that executes MLX's kernel families against numpy), by what it relies
    on and where: a Markdown list, from the run's report (:mod:`gemmglossary.coverage.warnings_record`).
    A page build gets the report as its excerpts do (made by a coverage run if there is none);
    anywhere else only an existing report is read."""
    from ..coverage import collect
    from ..coverage import site as coverage_site

    why = ""
    report = None
    if settings.value(coverage_site.ENV) == "off":
        why = f"not measured in this build ({coverage_site.ENV}=off)"
    elif not collect.available():
        why = "not measured: this project has no coverage run"
    else:
        try:
            report = collect.current(collect=_IN_BUILD.get() and coverage_site.may_run)
            if report is None:
                why = (coverage_site.SERVE_NOTE if not coverage_site.may_run
                       else "not measured yet (no run of the tests for these sources)")
        except collect.CoverageUnavailable:
            why = "not measured in this build (the test dependencies are not installed)"
        except collect.CoverageRunError as exc:
            raise mm.HostError(f"the tests' coverage run failed: {exc}") from None
    if report is None:
        return f"*The list of kernels that warn comes from a run of the tests; {why}.*"
    if "warnings" not in report:
        raise mm.HostError("the coverage report records no warnings (made by an older gemmglossary): "
                           "delete it and build again")
    groups: dict[tuple, set] = {}
    for w in report["warnings"]:
        if w["test"].startswith(tests) and w["file"].startswith(vendor.VENDOR_PREFIX):
            groups.setdefault((w["kind"], w["file"], w["line"]), set()).add(w["kernel"])
    if not groups:
        return f"*No kernel of the tests under `{tests}` warned.*"
    rows = []
    for (kind, file, line), kernels in sorted(groups.items()):
        names = ", ".join(f"`{k}`" for k in sorted(kernels))
        rows.append(f"- {WARNING_KINDS.get(kind, kind)}, at {_warning_site(file, line)}: {names}")
    return "\n".join(rows)


# ----------------------------------------------------------------------------- the decode path

def number(x: float) -> str:
    """A computed quantity for prose: whole numbers from 100 up with thousands separators,
    smaller ones to three significant digits."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


GEMV_FIELDS = Literal["bm", "bn", "sm", "sn", "tm", "tn", "outputs", "threads", "simdgroups",
                      "threadgroup", "threadgroups"]


def fact_gemv(*, K: Size, outputs: Size, transpose: bool = False, field: GEMV_FIELDS = "outputs") -> str:
    """``gemv_axbpy``'s block for a vector of ``K`` elements and ``outputs`` results: ``gemv``,
    or ``gemv_t`` with ``transpose=true`` (:func:`gemmglossary.mlx.matmul.gemv_plan`)."""
    mm._check_sizes(K=K, outputs=outputs)
    g = mm.gemv_plan(K, outputs, transpose)
    values = {"bm": g.bm, "bn": g.bn, "sm": g.sm, "sn": g.sn, "tm": g.tm, "tn": g.tn,
              "outputs": g.outputs_per_threadgroup, "threads": 32 * g.bm * g.bn,
              "simdgroups": g.bm * g.bn, "threadgroup": triple(g.threads_per_threadgroup),
              "threadgroups": g.threadgroups[0]}
    return str(values[field])


def _quantized(call):
    """A quantized-routing call, its ValueErrors reported as facts' errors."""
    try:
        return call()
    except ValueError as exc:
        raise mm.HostError(str(exc)) from None


def _check_quantization(bits: int, group_size: int = 64) -> None:
    if bits not in affine.BITS or group_size not in affine.GROUP_SIZES:
        raise mm.HostError(f"bits must be {either(affine.BITS)} and group_size {either(affine.GROUP_SIZES)} "
                           f"(MLX's affine mode), got bits={bits}, group_size={group_size}")


def fact_qkernel(*, M: Size, N: Size, K: Size, transpose: bool = True, bits: Bits = 4, group_size: GroupSize = 64,
                 batch: Size = 1, device: str = "g", gen: Generation = 13) -> str:
    """The affine kernel ``QuantizedMatmul::eval_gpu`` runs for ``x @ Wᵀ`` (``transpose``) or
    ``x @ W``, x with M rows (:func:`gemmglossary.mlx.quantized.choose_kernel`)."""
    mm._check_sizes(M=M, N=N, K=K, batch=batch)
    _check_quantization(bits, group_size)
    return _quantized(lambda: mq.choose_kernel(mq.Problem(M, N, K, batch), transpose=transpose, bits=bits,
                                               group_size=group_size, device=_device(device, gen)))


def fact_qlimit(*, K: Size, N: Size, device: str = "g", gen: Generation = 13) -> str:
    """From how many rows of x MLX leaves the matrix-vector kernels for ``x @ Wᵀ``
    (``get_qmv_batch_limit``)."""
    mm._check_sizes(K=K, N=N)
    return str(mq.vector_limit(_device(device, gen), K, N))


def fact_qlimits() -> str:
    """A Markdown table of ``get_qmv_batch_limit``: the row count from which ``x @ Wᵀ`` takes a
    matrix-matrix kernel, per generation range and device class, by the size of K and N."""
    sizes = [(2048, 2048), (4096, 4096), (8192, 8192)]
    cols = ["K, N ≤ 2048", "K, N ≤ 4096", "larger"]
    rows = [("before 13", "g", 12), ("before 13", "d", 12), ("13 and 14", "g", 13), ("13 and 14", "d", 13),
            ("15 and 16", "g", 15), ("15 and 16", "d", 15), ("17 and later", "g", 17), ("17 and later", "d", 17)]
    out = ["| Generation | Device class | " + " | ".join(cols) + " |", "|---|---|" + "---|" * len(cols)]
    for label, letter, gen in rows:
        d = mm.Device(letter, gen)
        cls = "`d`" if letter == "d" else "every other class"
        out.append(f"| {label} | {cls} | " + " | ".join(str(mq.vector_limit(d, K, N)) for K, N in sizes) + " |")
    return "\n".join(out)


def fact_qformat(*, bits: Bits = 4,
                 field: Literal["pack_factor", "fast_block", "bits", "group_sizes"] = "pack_factor") -> str:
    """MLX's affine format: weights per 32-bit pack (``pack_factor``), the K one ``qmv_fast``
    step covers (``qmv_fast_k_alignment``), or the bit widths and group sizes
    :mod:`gemmglossary.mlx.affine` restates (``bits``, ``group_sizes``)."""
    if field == "bits":
        return either(affine.BITS)
    if field == "group_sizes":
        return either(affine.GROUP_SIZES)
    _check_quantization(bits)
    return str(mq.pack_factor(bits) if field == "pack_factor" else mq.qmv_fast_block(bits))


QUANTIZED_CONSTANTS = {
    "qmv_rows": lambda: str(mq.QMV_ROWS),
    "qmv_quad_k": lambda: either(mq.QMV_QUAD_K),
    "qmv_wide_min_gen": lambda: str(mq.QMV_WIDE_MIN_GENERATION),
    "qvm_matrix_rows": lambda: str(mq.QVM_MATRIX_ROWS),
    "qvm_split_k": lambda: str(mq.QVM_SPLIT_K),
    "qmm_nax_k": lambda: str(mq.QMM_NAX_K),
}


def fact_qconst(*, name: Literal[tuple(QUANTIZED_CONSTANTS)]) -> str:  # type: ignore[valid-type]
    """A threshold of MLX's quantized routing, as gemmglossary.mlx.quantized.choose_kernel uses it."""
    return QUANTIZED_CONSTANTS[name]()


def fact_qurl(*, rule: str) -> str:
    """Permalink to the lines of ``quantized.cpp`` (at the pinned tag) a routing rule follows."""
    return _quantized(lambda: mq.rule_url(rule))


TRAFFIC_FIELDS = Literal["flops", "bytes", "MiB", "flop_per_byte", "bytes_per_flop", "us", "gflops", "tflops"]


def fact_traffic(*, op: Literal["gemv", "gemm", "qmv"], K: Size, M: SizeOrNone = 0, N: SizeOrNone = 0,
                 dtype: str = "float16", bits: Bits = 4, group_size: GroupSize = 64, field: TRAFFIC_FIELDS = "flop_per_byte") -> str:
    """FLOPs and the fewest bytes of one product (:mod:`gemmglossary.traffic`): ``gemv`` (M × K
    matrix), ``gemm`` (M × K times K × N) or ``qmv`` (quantized N × K); ``us`` is the time those
    bytes take at the measured read bandwidth of ``traffic.MACHINE``, ``gflops``/``tflops`` the
    FLOP rate that bandwidth allows (capped at its measured GEMM rate)."""
    def build():
        if op == "gemv":
            return traffic.gemv(M, K, dtype)
        if op == "gemm":
            return traffic.gemm(M, N, K, dtype)
        return traffic.qmv(N, K, bits, group_size, dtype)
    t = _quantized(build)
    values = {"flops": lambda: number(t.flops), "bytes": lambda: number(t.bytes),
              "MiB": lambda: number(t.bytes / 2**20), "flop_per_byte": lambda: number(t.flop_per_byte),
              "bytes_per_flop": lambda: number(t.bytes_per_flop), "us": lambda: number(t.seconds_at() * 1e6),
              "gflops": lambda: number(t.flop_rate_at() / 1e9), "tflops": lambda: number(t.flop_rate_at() / 1e12)}
    return values[field]()


def fact_machine(*, field: Literal["name", "read_gbps", "gemm_tflops", "ridge", "read_url", "gemm_url"]) -> str:
    """The measured figures the decode pages compare against (``traffic.MACHINE``, from m5-gemm)."""
    m = traffic.MACHINE
    return {"name": lambda: m.name, "read_gbps": lambda: f"{m.read_bytes_per_s / 1e9:g}",
            "gemm_tflops": lambda: f"{m.gemm_flop_per_s / 1e12:g}", "ridge": lambda: number(m.ridge),
            "read_url": lambda: m.read_url, "gemm_url": lambda: m.gemm_url}[field]()
def fact_kernel_value(*, file: str, expr: str, define: str = "", unit: Literal["", "KiB"] = "") -> str:
    """Integer arithmetic over the constants of a first-party kernel file (``kernels/FILE``),
    as :mod:`gemmglossary.msl.declarations` reads them, built with the ``-D`` overrides of
    ``define`` (``BK:32,TM:2``): ``expr=2*(BM*BK+BK*BN)*4`` is that kernel's tile bytes.
    With ``unit=KiB`` the value, a number of bytes, is shown in KiB."""
    from .. import paths
    from ..msl import declarations
    from ..msl.expressions import ExpressionError, evaluate as evaluate_expression

    path = paths.kernels_dir() / file
    if "/" in file or not file.endswith(".metal") or not path.is_file():
        raise mm.HostError(f"file must name a kernel file in kernels/, got {file!r}")
    defines: dict[str, int] = {}
    for item in filter(None, define.split(",")):
        name, sep, value = item.partition(":")
        if not sep or not value.lstrip("-").isdigit():
            raise mm.HostError(f"define must be NAME:VALUE[,NAME:VALUE...], got {item!r}")
        defines[name] = int(value)
    known = declarations.macro_defaults(path.read_text(encoding="utf-8"))
    unknown = sorted(set(defines) - set(known))
    if unknown:
        raise mm.HostError(f"{file} has no -D constant {', '.join(unknown)}; it has {', '.join(known)}")
    values = declarations.constants(path.read_text(encoding="utf-8"), defines).values
    try:
        n = evaluate_expression(expr, values)
    except ExpressionError as exc:
        raise mm.HostError(f"expr {expr!r} over the constants of {file}: {exc}") from None
    return str(n) if unit == "" else f"{n / 1024:g}"


# ----------------------------------------------------------------------------- the emulator

_FILL_TYPES = {"float": np.float32, "half": np.float16, "int": np.int32, "uint": np.uint32, "short": np.int16,
               "ushort": np.uint16, "char": np.int8, "uchar": np.uint8, "long": np.int64, "ulong": np.uint64}


def fact_tg_fill(*, as_type: Literal[("byte", "bfloat", *_FILL_TYPES)] = "byte") -> str:  # type: ignore[valid-type]
    """What unwritten threadgroup memory holds on the emulator (mslemu_abi.h's
    MSLEMU_TG_FILL_BYTE): the byte itself, or what an element of a type reads from it."""
    from ..emulator.abi import abi

    b = abi()["MSLEMU_TG_FILL_BYTE"]
    if as_type == "byte":
        return f"0x{b:02X}"
    if as_type == "bfloat":  # the top half of a float
        value = (np.frombuffer(bytes([b]) * 2, np.uint16).astype(np.uint32) << 16).view(np.float32)[0]
    else:
        dt = np.dtype(_FILL_TYPES[as_type])
        value = np.frombuffer(bytes([b]) * dt.itemsize, dt)[0]
    return "NaN" if np.isnan(value) else str(value.item())


def fact_exercise(*, name: str, field: Literal["position", "number", "count"] = "position") -> str:
    """Where an exercise stands in the sequence (``exercise.toml``'s ``order``, as
    ``gemmglossary exercise list`` shows them): "Exercise 3 of 14", its number, or how many
    there are (:func:`gemmglossary.exercises.spec.place`)."""
    from ..exercises import spec

    try:
        return spec.place(name, field)
    except spec.SpecError as exc:
        raise mm.HostError(str(exc)) from None


#: Every fact a page may use, by name.
def fact_settings() -> str:
    """A Markdown table of the GEMMGLOSSARY_* variables a user may set, what each accepts and
    does (:mod:`gemmglossary.settings`, where each is parsed)."""
    from .. import settings

    return settings.describe()


def fact_hardware(*, table: Literal["chips", "limits", "classes"]) -> str:
    """A Markdown table of :mod:`gemmglossary.hardware`: Apple chips by GPU family and MLX
    architecture generation (``chips``), Metal's limits beside CUDA's (``limits``), or MLX's
    device class letters with what its comments call them (``classes``), every value linked
    to its source."""
    from .. import hardware

    if table == "classes":
        return hardware.classes_table(fact_url(rule="device_class"))
    return hardware.chips_table() if table == "chips" else hardware.limits_table()


def fact_hardware_limit(*, key: str, side: Literal["metal", "cuda"] = "metal", link: bool = True) -> str:
    """One limit of :data:`gemmglossary.hardware.LIMITS` (``key``), Metal's or CUDA's value,
    as a Markdown link to its source unless ``link=false``."""
    from .. import hardware

    if key not in hardware.LIMIT:
        raise mm.HostError(f"key must be one of {', '.join(hardware.LIMIT)}, got {key!r}")
    limit = hardware.LIMIT[key]
    value, url = (limit.metal, limit.metal_source) if side == "metal" else (limit.cuda, limit.cuda_source)
    return f"[{value}]({url})" if link else value


FACTS = {
    "hardware.table": fact_hardware,
    "hardware.limit": fact_hardware_limit,
    "mlx.tile": fact_tile,
    "mlx.nax_tile": fact_nax_tile,
    "mlx.route": fact_route,
    "mlx.configs": fact_configs,
    "mlx.loader": fact_loader,
    "mlx.threadgroup_memory": fact_threadgroup_memory,
    "mlx.url": fact_url,
    "mlx.host": fact_host,
    "mlx.host_sources": fact_host_sources,
    "emulator.warnings": fact_warnings,
    "mlx.const": fact_const,
    "mlx.pins": fact_pins,
    "llama.pins": fact_llama_pins,
    "llama.url": fact_llama_url,
    "llama.block": fact_llama_block,
    "llama.route": fact_llama_route,
    "llama.const": fact_llama_const,
    "llama.mlx_bits": fact_llama_mlx_bits,
    "mlx.gemv": fact_gemv,
    "mlx.qkernel": fact_qkernel,
    "mlx.qlimit": fact_qlimit,
    "mlx.qlimits": fact_qlimits,
    "mlx.qformat": fact_qformat,
    "mlx.qurl": fact_qurl,
    "mlx.qconst": fact_qconst,
    "traffic": fact_traffic,
    "traffic.machine": fact_machine,
    "kernel.value": fact_kernel_value,
    "settings.table": fact_settings,
    "emulator.tg_fill": fact_tg_fill,
    "exercise": fact_exercise,
}


# ----------------------------------------------------------------------------- evaluation

def evaluate(body: str) -> str:
    """The value of one fact, from the text between ``{{fact`` and ``}}``."""
    words = body.split()
    if not words:
        raise FactError("a fact needs a name: {{fact NAME key=value ...}}")
    name, args = words[0], words[1:]
    if not NAME.match(name):
        raise FactError(f"{name!r} is not a fact name")
    if name not in FACTS:
        raise FactError(f"unknown fact {name!r}; known facts: {', '.join(sorted(FACTS))}")
    func = FACTS[name]
    args_text: dict[str, str] = {}
    for word in args:
        m = ARG.match(word)
        if not m:
            raise FactError(f"fact {name}: {word!r} is not key=value")
        if m["key"] in args_text:
            raise FactError(f"fact {name}: argument {m['key']!r} given twice")
        args_text[m["key"]] = m["value"]
    kwargs = keyword_arguments(f"fact {name}", func, args_text, FactError)
    try:
        return str(func(**kwargs))
    except (mm.HostError, vendor.VendorError) as exc:
        raise FactError(f"fact {name}: {exc}") from None


def expand_line(line: str) -> str:
    """One line with every fact replaced; a malformed fact raises FactError."""
    out, pos = [], 0
    for opener in OPENER.finditer(line):
        if opener.start() < pos:
            continue
        m = FACT.match(line, opener.start())
        if not m:
            raise FactError(f"malformed fact at column {opener.start() + 1}: "
                            "write {{fact NAME key=value ...}} on one line")
        out.append(line[pos:m.start()])
        out.append(evaluate(m["body"]))
        pos = m.end()
    out.append(line[pos:])
    return "".join(out)


class FactsPreprocessor(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        out = []
        seen = 0  # facts before this line, to find the same fact in the page's source
        token = _IN_BUILD.set(True)
        try:
            for index, line in enumerate(lines):
                try:
                    out.extend(expand_line(line).split("\n"))  # a fact may be a block (a table)
                except FactError as exc:
                    raise FactTagError(f"{self._where(index, seen, line)}: {exc}") from None
                seen += len(OPENER.findall(line))
        finally:
            _IN_BUILD.reset(token)
        return out

    def _where(self, index: int, seen: int, line: str) -> str:
        """``docs/page.md:LINE``, the line in the page's own file when it can be found."""
        page = _page_file(self.md)
        if page is None:
            return f"<markdown>:{index + 1}"
        label, path = page
        try:
            source = Path(path).read_text(encoding="utf-8").split("\n")
        except OSError:
            return f"{label} (text line {index + 1})"
        count = 0
        for number, text in enumerate(source, 1):
            found = len(OPENER.findall(text))
            if count + found > seen:
                return f"{label}:{number}"
            count += found
        return f"{label} (text line {index + 1})"


def _page_file(md) -> tuple[str, str] | None:
    """(``docs/<page>``, path of its file) of the page being converted, or None
    (:mod:`.page` reads it from MkDocs or Zensical)."""
    page = current_page(md)
    if page is None or page.path is None:
        return None
    return page.label, str(page.path)


class FactsExtension(Extension):
    def extendMarkdown(self, md):
        # Before everything else (whitespace normalisation is 30, snippets 32), so a fact
        # inside a code span or a fence is expanded too.
        md.preprocessors.register(FactsPreprocessor(md), "gemmglossary_facts", 40)


def makeExtension(**kwargs):
    return FactsExtension(**kwargs)
