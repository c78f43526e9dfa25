"""How MLX chooses the kernel that computes ``a @ b``, and its dispatch: its host decisions, restated.

This is our own restatement, for the pages and the tests, of the choices MLX's C++ host
code makes before it encodes a matrix product: which kernel (``dot_product``,
``gemv_wide``, ``gemv``/``gemv_t``, split-K, the fused steel kernel or its NAX variant),
which tile configuration, which ``swizzle_log``, and how many threads and threadgroups.

Source and version. The functions follow ``mlx/backend/metal/matmul.cpp`` (and the few
helpers it calls in ``device.cpp``, ``utils.cpp`` and ``mlx/utils.h``) at the MLX release tag
pinned in ``kernels/vendor.toml`` (:data:`MLX_TAG`), the release whose Metal headers the
kernels compile and the pages quote: host rules and headers are read from one tag. Each
function names the lines it follows (:func:`source_url`).

What is modelled. :class:`Problem` is ``Matmul::eval_gpu`` for dense operands: each
matrix row-contiguous or a transposed view of one (``transpose_a``/``transpose_b`` are
what MLX's ``check_transpose`` reports, which for a matrix with a dimension of 1 is
"not transposed"), batch dimensions that collapse to one, no offsets. ``AddMM`` (α, β)
is not routed here; :mod:`.steel` plans its fused-kernel dispatch.

What a device is, to MLX. MLX reads one thing from the GPU: the Metal architecture name.
Its last character is the device class letter and the two characters before it the
architecture generation (``device.cpp``, ``Device::Device``). :class:`Device` holds those
two values; nothing here maps them to chip names, because MLX does not.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ..tiles import cdiv


def _pinned_mlx():
    from ..vendor import load_pins

    return load_pins().mlx


def __getattr__(name: str):
    """``MLX_VERSION``, ``MLX_TAG`` (``v`` and the version) and ``MLX_REPO``: the MLX release
    every module of this package restates, read from ``kernels/vendor.toml`` (``[mlx]``) when
    asked, so the version is written in one place."""
    if name == "MLX_VERSION":
        return _pinned_mlx().version
    if name == "MLX_TAG":
        return _pinned_mlx().rev
    if name == "MLX_REPO":
        return _pinned_mlx().repository
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Lines of ``mlx/backend/metal/matmul.cpp`` at :data:`MLX_TAG` that each rule follows.
LINES = {
    "tile_macro": (90, 171),            # GEMM_TPARAM_MACRO
    "nax_config": (205, 216),           # steel_matmul_regular_axpby_nax: bm..wn
    "nax_swizzle": (276, 284),
    "nax_grid": (302, 308),
    "regular_config": (370, 375),       # steel_matmul_regular_axpby: defaults + macro
    "axpby_constants": (392, 393),      # use_out_source, do_axpby
    "regular_swizzle": (435, 440),
    "regular_grid": (458, 464),
    "splitk_config": (523, 537),        # steel_gemm_splitk_axpby
    "splitk_grid": (599, 600),
    "splitk_accum_grid": (646, 649),
    "nax_splitk_config": (680, 701),    # steel_gemm_splitk_axpby_nax
    "nax_splitk_grid": (753, 784),
    "route_steel": (910, 1038),         # steel_matmul_axpby: split-K, NAX, regular
    "use_nax": (917, 919),
    "splitk_rule": (920, 926),
    "nax_splitk_rule": (947, 950),
    "dot_product": (1044, 1090),
    "gemv_config": (1134, 1182),        # gemv_axbpy
    "gemv_grid": (1210, 1212),
    "gemv_wide_config": (1299, 1354),
    "gemv_wide_grid": (1396, 1397),
    "route_matmul": (1451, 1587),       # Matmul::eval_gpu
    "batch_collapse": (1492, 1502),
}

#: Lines of other MLX files at :data:`MLX_TAG` that the rules rely on.
OTHER_LINES = {
    "device_class": ("mlx/backend/metal/device.cpp", 589, 624),    # Device::Device: name parsed, letters
    "nax_available": ("mlx/backend/metal/device.cpp", 947, 965),   # is_nax_available()
    "nax_build": ("mlx/backend/metal/kernels/CMakeLists.txt", 161, 185),  # NAX kernels built, or MLX_METAL_NO_NAX
    "tf32": ("mlx/utils.h", 214, 217),                             # env::enable_tf32, default 1
    "next_power_of_2": ("mlx/utils.h", 161, 170),
    "block_dims": ("mlx/backend/common/utils.cpp", 117, 146),       # get_block_dims_common
}
DEVICE_CLASSES = {"p": "phone", "g": "base, pro", "s": "max", "d": "ultra"}

DTYPES = ("float32", "float16", "bfloat16", "complex64")
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "complex64": 8}

#: ``MLX_ENABLE_TF32`` defaults to 1 (``mlx/utils.h``, ``env::enable_tf32``), so float32
#: takes the NAX path wherever NAX is available unless the variable is set to 0.
TF32_DEFAULT = True

# Thresholds of the rules below, each used by the function that applies it.
LARGE_MATMUL = 1 << 20          # GEMM_TPARAM_MACRO: batch·M·N from which a "large matmul"
SPLITK_MAX_TILES = 1024         # split-K: at most this many 16×16 tiles of C ...
SPLITK_MAX_TILES_SD = 2048      # ... or this many on classes s and d
SPLITK_MIN_K_STEPS = 8          # ... and K // 16 at least this
SPLITK_NARROW = 40              # split-K tiles: 16 rows (columns) when M (N) is below this, else 32
SPLITK_MIN_PARTITIONS = 2       # split-K partitions: a power of two at least this ...
SPLITK_MAX_PARTITIONS = 32      # ... and at most this
NAX_SPLITK_RATIO = 3            # NAX split-K: K at least this times max(M, N) ...
NAX_SPLITK_SMALL = 1024         # ... or, when max(M, N) is at most this,
NAX_SPLITK_SMALL_RATIO = 2      # ... K more than this times max(M, N)
NAX_SWIZZLE_FEW_ROWS = 3        # NAX swizzle_log: 0 for at most this many tile rows, else 1
NAX_SWIZZLE_SCD = 2             # ... and this on classes s, c and d
NAX_MIN_GENERATION = 17         # is_nax_available(): generation at least this ...
NAX_MIN_GENERATION_P = 18       # ... or this for class p
GEMV_WIDE_MIN_GENERATION = 15   # gemv_wide_config: "pre-M3 generations" keep the old kernels
GEMV_WIDE_ROWS_PER_PASS = 5     # rows of x per register tile ...
GEMV_WIDE_MAX_PASSES = 3        # ... and at most this many passes over the matrix


def source_url(start: int | None, end: int | None = None, path: str = "mlx/backend/metal/matmul.cpp") -> str:
    """Permalink to lines of an MLX source file at :data:`MLX_TAG` (the whole file for no start)."""
    mlx = _pinned_mlx()
    anchor = "" if start is None else f"#L{start}" + (f"-L{end}" if end is not None and end != start else "")
    return f"{mlx.repository}/blob/{mlx.rev}/{path}{anchor}"


def rule_url(rule: str) -> str:
    """Permalink to a named rule: a range of matmul.cpp (LINES) or of another file (OTHER_LINES)."""
    if rule in LINES:
        return source_url(*LINES[rule])
    if rule in OTHER_LINES:
        path, start, end = OTHER_LINES[rule]
        return source_url(start, end, path=path)
    raise HostError(f"rule must be one of {', '.join([*LINES, *OTHER_LINES])}, got {rule!r}")


def rule_label(rule: str) -> str:
    """A named rule's lines in words: ``matmul.cpp 1044–1090``."""
    if rule in LINES:
        path, (start, end) = "mlx/backend/metal/matmul.cpp", LINES[rule]
    elif rule in OTHER_LINES:
        path, start, end = OTHER_LINES[rule]
    else:
        raise HostError(f"rule must be one of {', '.join([*LINES, *OTHER_LINES])}, got {rule!r}")
    name = path.rsplit("/", 1)[-1]
    return f"{name} {start}" if start == end else f"{name} {start}–{end}"


class HostError(ValueError):
    """A problem or device this restatement cannot describe."""


# ----------------------------------------------------------------------------- devices

@dataclass(frozen=True)
class Device:
    """The two things MLX reads from the Metal architecture name, plus NAX support.

    ``letter``: the device class letter (MLX's comments: p phone, g base/pro, s max,
    d ultra; any other letter is treated as medium by the tile rules). ``generation``:
    the architecture generation. ``nax_runtime``: MLX was built with its NAX kernels
    (SDK 26.2 or later) and runs on macOS 26.2 or later, the two conditions besides the
    generation that ``is_nax_available`` checks.
    """

    letter: str
    generation: int
    nax_runtime: bool = True

    def __post_init__(self):
        if len(self.letter) != 1 or not self.letter.isalpha():
            raise HostError(f"a device class is one letter, got {self.letter!r}")
        if not 0 <= self.generation <= 99:
            raise HostError(f"an architecture generation is two digits, got {self.generation}")

    @classmethod
    def from_architecture(cls, name: str, nax_runtime: bool = True) -> "Device":
        """Parse a Metal architecture name the way ``Device::Device`` does: the last
        character is the letter, the two before it the generation digits (a character
        that is not a digit counts as 0)."""
        if not name:
            raise HostError("empty architecture name")
        tens = ones = 0
        if len(name) >= 3:
            d1, d2 = ord(name[-3]) - ord("0"), ord(name[-2]) - ord("0")
            tens = d1 if 0 <= d1 < 10 else 0
            ones = d2 if 0 <= d2 < 10 else 0
        return cls(name[-1], tens * 10 + ones, nax_runtime)

    @property
    def nax_available(self) -> bool:
        """``is_nax_available()``: generation 17 or later (18 for class ``p``)."""
        return self.nax_runtime and self.generation >= (
            NAX_MIN_GENERATION_P if self.letter == "p" else NAX_MIN_GENERATION)

    @property
    def size_class(self) -> str:
        """How GEMM_TPARAM_MACRO groups the letters: small, large or medium."""
        return "small" if self.letter in "gp" else "large" if self.letter == "d" else "medium"


# ----------------------------------------------------------------------------- configurations

@dataclass(frozen=True)
class TileConfig:
    """One steel configuration: the C tile BM×BN, the K step BK, WM×WN simdgroups."""

    bm: int
    bn: int
    bk: int
    wm: int
    wn: int
    fragment: int = 8  # 8×8 simdgroup_matrix fragments; 16 for the NAX kernels (nax.h)

    @property
    def as_tuple(self) -> tuple[int, int, int, int, int]:
        return (self.bm, self.bn, self.bk, self.wm, self.wn)

    @property
    def simdgroups(self) -> int:
        return self.wm * self.wn

    @property
    def threads(self) -> int:
        """Threads per threadgroup: WM·WN simdgroups of 32 (the kernels'
        ``max_total_threads_per_threadgroup(WM * WN * 32)``, the host's ``(32, WN, WM)``)."""
        return self.wm * self.wn * 32

    @property
    def tm(self) -> int:
        """Fragments per simdgroup along M (``BlockMMA``: ``TM = BM / (8 * WM)``)."""
        return self.bm // (self.fragment * self.wm)

    @property
    def tn(self) -> int:
        return self.bn // (self.fragment * self.wn)

    def label(self) -> str:
        return f"{self.bm}×{self.bn}×{self.bk}, {self.wm}×{self.wn} simdgroups"


def regular_config(dtype: str, device: Device, transpose_a: bool, transpose_b: bool,
                   M: int, N: int, K: int, batch: int = 1) -> TileConfig:
    """The fused steel kernel's tile: 64×64×16 with 2×2 simdgroups unless
    GEMM_TPARAM_MACRO picks another for this dtype, device class, transposition and size."""
    _check_dtype(dtype)
    _check_sizes(M=M, N=N, K=K, batch=batch)
    nt = not transpose_a and transpose_b
    half = dtype != "float32"  # "half and bfloat" in MLX's comments; complex64 also != float32
    c = (64, 64, 16, 2, 2)
    if device.size_class == "small":
        if dtype == "complex64":
            c = (64, 32, 8, 4, 1)
        elif nt:
            c = (64, 32, 32, 2, 2)
        elif half:
            c = (64, 64, 16, 1, 2)
    elif device.size_class == "large":
        if batch * M * N >= LARGE_MATMUL:
            if half:
                if 2 * max(M, N) > K:
                    c = (64, 64, 16, 1, 2)
                elif nt:
                    c = (64, 32, 32, 2, 2)
                else:
                    c = (32, 64, 16, 1, 2)
            # float32 keeps the default
        else:
            if half:
                c = (64, 32, 32, 2, 2) if nt else (64, 64, 16, 1, 2)
            else:
                c = (32, 64, 16, 1, 2) if nt else (64, 32, 32, 2, 2)
    # medium: the default for every dtype
    return TileConfig(*c)


def nax_config(device: Device, M: int, N: int, K: int) -> TileConfig:
    """``steel_matmul_regular_axpby_nax``: 128×128×512 with 4×4 simdgroups, or 64 rows,
    2×4 simdgroups and a BK of 64 or 256 on classes ``s``, ``c`` and ``d``."""
    _check_sizes(M=M, N=N, K=K)
    bm, bn, bk, wm, wn = 128, 128, 512, 4, 4
    if device.letter in "scd":
        bk = 64 if (K >= 8192 and K > M + N) else 256
        bm, wm = 64, 2
    return TileConfig(bm, bn, bk, wm, wn, fragment=16)


def regular_swizzle_log(tiles_m: int, device: Device | None = None) -> int:
    """The fused steel kernel's ``swizzle_log``: always 0 in this MLX (a commented-out
    rule and a TODO about device-based tuning sit next to it)."""
    return 0


def nax_swizzle_log(tiles_m: int, device: Device) -> int:
    """The NAX kernel's: 0 for at most 3 tile rows, else 1; 2 on classes ``s``, ``c``, ``d``."""
    return NAX_SWIZZLE_SCD if device.letter in "scd" else (0 if tiles_m <= NAX_SWIZZLE_FEW_ROWS else 1)


def fused_grid(M: int, N: int, batch: int, config: TileConfig | tuple,
               swizzle_log: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Threadgroups and threads per threadgroup of the fused kernel (regular and NAX):
    the tile grid with x multiplied and y divided by ``2**swizzle_log``, and ``(32, WN, WM)``."""
    bm, bn, _, wm, wn = config.as_tuple if isinstance(config, TileConfig) else config
    tn, tm = cdiv(N, bn), cdiv(M, bm)
    tile = 1 << swizzle_log
    return (tn * tile, cdiv(tm, tile), batch), (32, wn, wm)


def fused_kernel_name(transpose_a: bool, transpose_b: bool, in_type: str, out_type: str,
                      config: TileConfig | tuple, nax: bool = False) -> str:
    """MLX's base name of a fused steel kernel (the function constants are not part of it)."""
    bm, bn, bk, wm, wn = config.as_tuple if isinstance(config, TileConfig) else config
    code = ("t" if transpose_a else "n") + ("t" if transpose_b else "n")
    prefix = "steel_gemm_fused_nax_" if nax else "steel_gemm_fused_"
    return f"{prefix}{code}_{in_type}_{out_type}_bm{bm}_bn{bn}_bk{bk}_wm{wm}_wn{wn}"


# ----------------------------------------------------------------------------- split-K

def next_power_of_2(n: int) -> int:
    """``mlx/utils.h``: n if it is a power of 2, else 2**ceil(log2 n); 0 for n = 0 (where
    the C++ computes pow(2, -inf))."""
    if n <= 0:
        return 0
    return n if n & (n - 1) == 0 else 1 << math.ceil(math.log2(n))


def block_dims(dim0: int, dim1: int, dim2: int, pow2: int = 10) -> tuple[int, int, int]:
    """``get_block_dims_common`` (mlx/backend/common/utils.cpp): grow each power of two in
    turn while the dimension allows, up to ``2**pow2`` threads in all."""
    pows, total = [0, 0, 0], 0
    dims = (dim0, dim1, dim2)
    while True:
        before = total
        stop = False
        for i in range(3):
            if dims[i] >= 1 << (pows[i] + 1):
                pows[i] += 1
                total += 1
            if i < 2 and total == 10:
                stop = True
                break
        if stop or total == before or total == pow2:
            break
    return (1 << pows[0], 1 << pows[1], 1 << pows[2])


@dataclass(frozen=True)
class SplitK:
    """One split-K plan: a partial-product GEMM over ``partitions`` slices of K into a
    float32 (or complex64) buffer, then an accumulation kernel into the output."""

    config: TileConfig
    partitions: int
    partition_size: int          # K elements per partition (the last may be longer or shorter)
    k_iterations: int            # BK steps per partition (gemm_k_iterations_aligned)
    swizzle_log: int
    threadgroups: tuple[int, int, int]
    threads_per_threadgroup: tuple[int, int, int]
    accum_grid_threads: tuple[int, int, int]
    accum_threads_per_threadgroup: tuple[int, int, int]
    nax: bool = False


def splitk_plan(M: int, N: int, K: int) -> SplitK:
    """``steel_gemm_splitk_axpby``: 16- or 32-wide tiles, a power-of-two number of
    partitions between 2 and 32 that grows with K and shrinks with M·N."""
    tm32, tn32, tk = cdiv(M, 32), cdiv(N, 32), K // 16
    config = TileConfig(16 if M < SPLITK_NARROW else 32, 16 if N < SPLITK_NARROW else 32, 16, 2, 2)
    partitions = min(max(SPLITK_MIN_PARTITIONS, next_power_of_2(tk // (tm32 * tn32))), SPLITK_MAX_PARTITIONS)
    k_iterations = (K // config.bk) // partitions
    tn, tm = cdiv(N, config.bn), cdiv(M, config.bm)
    return SplitK(config, partitions, k_iterations * config.bk, k_iterations, 0,
                  (tn, tm, partitions), (32, config.wn, config.wm),
                  (N, M, 1), block_dims(N, M, 1))


def nax_splitk_plan(M: int, N: int, K: int) -> SplitK:
    """``steel_gemm_splitk_axpby_nax``: partitions of 4096 (fewer elements for K ≤ 4096),
    on a one-dimensional grid."""
    config = (128, 128, 512, 4, 4)
    size = 4096
    if (M + N) // 2 < 512 or K <= 4096:
        config = (64, 64, 256, 2, 2)
    if K <= 1024:
        size = K // 2
    elif K <= 2048:
        size = 1024
    elif K <= 4096:
        size = 2048
    cfg = TileConfig(*config, fragment=16)
    partitions = cdiv(K, size)
    tn, tm = cdiv(N, cfg.bn), cdiv(M, cfg.bm)
    swizzle = 0 if tm <= NAX_SWIZZLE_FEW_ROWS else 1
    tile = 1 << swizzle
    grid = (tn * tile * cdiv(tm, tile) * partitions, 1, 1)
    return SplitK(cfg, partitions, size, size // cfg.bk, swizzle, grid,
                  (32, cfg.wn, cfg.wm), (N, M, 1), block_dims(N, M, 1), nax=True)


# ----------------------------------------------------------------------------- GEMV

@dataclass(frozen=True)
class Gemv:
    """A matrix-vector kernel: ``gemv`` (matrix rows contiguous along K) or ``gemv_t``."""

    transposed: bool
    bm: int
    bn: int
    sm: int
    sn: int
    tm: int
    tn: int
    outputs_per_threadgroup: int
    threadgroups: tuple[int, int, int]
    threads_per_threadgroup: tuple[int, int, int]


def gemv_plan(in_len: int, out_len: int, transpose_mat: bool, batch: int = 1) -> Gemv:
    """``gemv_axbpy``'s block choice for a vector of length ``in_len`` (K) and
    ``out_len`` outputs. ``transpose_mat`` selects ``gemv_t``."""
    tm, tn, sm, sn, bm, bn = 4, 4, 1, 32, 1, 1
    if transpose_mat:
        sm, sn = (4, 8) if (in_len >= 8192 and out_len >= 2048) else (8, 4)
        bn = 16 if out_len >= 2048 else 4 if out_len >= 512 else 2
        tn = 1 if out_len < tn else tn
        per_tg = bn * sn * tn
    else:
        bm = 8 if out_len >= 4096 else 4
        sn = 32
        if in_len <= 64:
            bm, sm, sn = 1, 8, 4
        elif in_len >= 16 * out_len:
            bm, bn = 1, 8
        tm = 1 if out_len < tm else tm
        per_tg = bm * sm * tm
    return Gemv(transpose_mat, bm, bn, sm, sn, tm, tn, per_tg,
                (cdiv(out_len, per_tg), 1, batch), (32, bn, bm))


@dataclass(frozen=True)
class GemvWide:
    vecs_per_threadgroup: int
    k_lanes: int
    grid_x: int
    threadgroups: tuple[int, int, int]
    threads_per_threadgroup: tuple[int, int, int]


def gemv_wide_plan(dtype: str, device: Device, M: int, N: int, K: int, mat_ld: int,
                   vec_ld: int, batch_strides: tuple[int, ...] = (), batch: int = 1,
                   offsets: tuple[int, int] = (0, 0)) -> GemvWide | None:
    """``gemv_wide_config``: float16/bfloat16 ``x @ W.T`` with 2 to 15 rows in ``x``, on
    generation 15 and later, with K and the strides multiples of 4; None otherwise."""
    if device.generation < GEMV_WIDE_MIN_GENERATION:
        return None
    aligned = (offsets[0] % 8 == 0 and offsets[1] % 8 == 0 and mat_ld % 4 == 0
               and vec_ld % 4 == 0 and all(s % 4 == 0 for s in batch_strides))
    if M <= 1 or N <= 1 or K % 4 != 0 or dtype not in ("float16", "bfloat16") or not aligned:
        return None
    passes = cdiv(M, GEMV_WIDE_ROWS_PER_PASS)
    if passes > GEMV_WIDE_MAX_PASSES:
        return None
    full_simd = passes == 1 or N <= 64
    grid_x = 1 if N >= 65536 else passes
    k_lanes = 32 if full_simd else 16
    return GemvWide(cdiv(M, passes), k_lanes, grid_x, (grid_x, cdiv(N, 4), batch),
                    (32, k_lanes // 8, 1))


# ----------------------------------------------------------------------------- routing

@dataclass(frozen=True)
class Problem:
    """``a @ b`` as MLX's ``Matmul::eval_gpu`` meets it (see the module docstring)."""

    M: int
    N: int
    K: int
    dtype: str = "float32"
    transpose_a: bool = False
    transpose_b: bool = False
    batch: int = 1
    shared_b: bool = False  # one B for every batch entry (its batch stride is 0)

    def __post_init__(self):
        _check_dtype(self.dtype)
        _check_sizes(M=self.M, N=self.N, K=self.K, batch=self.batch)


@dataclass(frozen=True)
class Route:
    """Where a product goes, with what MLX computes for the dispatch."""

    kernel: str          # dot_product, gemv_wide, gemv, gemv_t, splitk, splitk_nax, fused, fused_nax
    M: int               # after folding the batch into M, when MLX does
    batch: int
    rule: str            # key of LINES: the branch of matmul.cpp that decided
    config: TileConfig | None = None
    swizzle_log: int = 0
    threadgroups: tuple[int, int, int] | None = None
    threads_per_threadgroup: tuple[int, int, int] | None = None
    kernel_name: str | None = None
    splitk: SplitK | None = None
    gemv: Gemv | None = None
    gemv_wide: GemvWide | None = None

    @property
    def threads(self) -> int:
        x, y, z = self.threads_per_threadgroup
        return x * y * z


def uses_nax(dtype: str, device: Device, tf32: bool = TF32_DEFAULT) -> bool:
    """``use_nax`` of ``steel_matmul_axpby``: NAX available, not complex, and float32
    only while TF32 is enabled (the default)."""
    return device.nax_available and dtype != "complex64" and (tf32 or dtype != "float32")


def takes_splitk(M: int, N: int, K: int, batch: int, device: Device, nax: bool) -> bool:
    """Case 1 of ``steel_matmul_axpby``: no NAX, one matrix, at most 1024 (2048 on
    classes ``s`` and ``d``) 16×16 tiles of C, and K at least 128 and at least max(M, N)."""
    return (not nax and batch == 1 and cdiv(M, 16) * cdiv(N, 16) <= splitk_max_tiles(device)
            and K // 16 >= SPLITK_MIN_K_STEPS and K >= max(M, N))


def splitk_max_tiles(device: Device) -> int:
    return SPLITK_MAX_TILES_SD if device.letter in "sd" else SPLITK_MAX_TILES


def takes_nax_splitk(M: int, N: int, K: int, batch: int, nax: bool) -> bool:
    """Case 2: NAX, one matrix, and K at least 3·max(M, N), or more than 2·max(M, N)
    when max(M, N) ≤ 1024."""
    big = max(M, N)
    return nax and batch == 1 and (K >= NAX_SPLITK_RATIO * big
                                   or (big <= NAX_SPLITK_SMALL and K > NAX_SPLITK_SMALL_RATIO * big))


@dataclass(frozen=True)
class Routing:
    """A product as the routing steps see it: the batch folded into M where MLX folds it,
    and whether the NAX kernels are in use."""

    p: Problem
    device: Device
    M: int
    batch: int
    a_batch_stride: int
    b_batch_stride: int
    nax: bool


#: What MLX does before its first test (``Matmul::eval_gpu``), in words for the flowchart.
FOLD = "a batch of untransposed A against one shared B is folded into M"


def routing(p: Problem, device: Device, tf32: bool = TF32_DEFAULT) -> Routing:
    M, batch = p.M, p.batch
    # Fold the batch into M: a dense, untransposed A against one shared B.
    if batch > 1 and not p.transpose_a and p.shared_b:
        M, batch = M * batch, 1
    folded = M != p.M
    return Routing(p, device, M, batch, a_batch_stride=0 if folded else M * p.K,
                   b_batch_stride=0 if (p.shared_b or folded) else p.N * p.K,
                   nax=uses_nax(p.dtype, device, tf32))


@dataclass(frozen=True)
class Step:
    """One test of MLX's host code, in the order it makes them (:data:`STEPS`): ``take``
    gives the product's Route when the test holds, None when the next step decides.
    ``question`` is the test in words, ``kernels`` the Route.kernel values it can give."""

    name: str
    question: str
    kernels: tuple[str, ...]
    rule: str  # key of LINES: the branch of matmul.cpp
    take: Callable[[Routing], "Route | None"]


def _dot_product(r: Routing) -> Route | None:
    if not (r.M == 1 and r.p.N == 1 and r.batch == 1 and r.p.dtype != "complex64"):
        return None
    threads = cdiv(r.p.K, 32)
    blocks = cdiv(threads, 512)
    return Route("dot_product", r.M, r.batch, "dot_product", threadgroups=(blocks, 1, 1),
                 threads_per_threadgroup=(512, 1, 1), kernel_name=f"dot_product_{r.p.dtype}_it32_tg512_sg16")


def _gemv_wide(r: Routing) -> Route | None:
    p = r.p
    if p.transpose_a or not p.transpose_b:
        return None
    wide = gemv_wide_plan(p.dtype, r.device, r.M, p.N, p.K, mat_ld=p.K, vec_ld=p.K,
                          batch_strides=(r.a_batch_stride, r.b_batch_stride), batch=r.batch)
    if wide is None:
        return None
    return Route("gemv_wide", r.M, r.batch, "gemv_wide_config", threadgroups=wide.threadgroups,
                 threads_per_threadgroup=wide.threads_per_threadgroup,
                 kernel_name=f"gemv_wide_{p.dtype}_nv{wide.vecs_per_threadgroup}_kl{wide.k_lanes}",
                 gemv_wide=wide)


def _gemv(r: Routing) -> Route | None:
    p, M = r.p, r.M
    if min(M, p.N) != 1:
        return None
    b_is_matrix = p.N != 1
    transpose_mat = (not p.transpose_b) if b_is_matrix else p.transpose_a
    g = gemv_plan(p.K, p.N if b_is_matrix else M, transpose_mat, r.batch)
    name = ("gemv_t_" if g.transposed else "gemv_") + p.dtype
    name += f"_bm{g.bm}_bn{g.bn}_sm{g.sm}_sn{g.sn}_tm{g.tm}_tn{g.tn}_nc0_axpby0"
    return Route("gemv_t" if g.transposed else "gemv", M, r.batch, "gemv_config",
                 threadgroups=g.threadgroups, threads_per_threadgroup=g.threads_per_threadgroup,
                 kernel_name=name, gemv=g)


def _splitk(r: Routing) -> Route | None:
    p, M = r.p, r.M
    if not takes_splitk(M, p.N, p.K, r.batch, r.device, r.nax):
        return None
    s = splitk_plan(M, p.N, p.K)
    acc = "complex64" if p.dtype == "complex64" else "float32"
    return Route("splitk", M, r.batch, "splitk_rule", config=s.config, threadgroups=s.threadgroups,
                 threads_per_threadgroup=s.threads_per_threadgroup,
                 kernel_name=_splitk_name(p, acc, s.config, M, p.N, p.K), splitk=s)


def _nax_splitk(r: Routing) -> Route | None:
    p, M = r.p, r.M
    if not takes_nax_splitk(M, p.N, p.K, r.batch, r.nax):
        return None
    s = nax_splitk_plan(M, p.N, p.K)
    bm, bn, bk, wm, wn = s.config.as_tuple
    code = ("t" if p.transpose_a else "n") + ("t" if p.transpose_b else "n")
    return Route("splitk_nax", M, r.batch, "nax_splitk_rule", config=s.config,
                 swizzle_log=s.swizzle_log, threadgroups=s.threadgroups,
                 threads_per_threadgroup=s.threads_per_threadgroup,
                 kernel_name=f"steel_gemm_splitk_nax_{code}_{p.dtype}_float32_bm{bm}_bn{bn}_bk{bk}_wm{wm}_wn{wn}",
                 splitk=s)


def _fused(r: Routing, nax: bool) -> Route | None:
    p, M = r.p, r.M
    if nax != r.nax:
        return None
    if nax:
        config = nax_config(r.device, M, p.N, p.K)
        swizzle = nax_swizzle_log(cdiv(M, config.bm), r.device)
        rule = "nax_config"
    else:
        config = regular_config(p.dtype, r.device, p.transpose_a, p.transpose_b, M, p.N, p.K, r.batch)
        swizzle = regular_swizzle_log(cdiv(M, config.bm), r.device)
        rule = "tile_macro"
    groups, threads = fused_grid(M, p.N, r.batch, config, swizzle)
    return Route("fused_nax" if nax else "fused", M, r.batch, rule, config=config, swizzle_log=swizzle,
                 threadgroups=groups, threads_per_threadgroup=threads,
                 kernel_name=fused_kernel_name(p.transpose_a, p.transpose_b, p.dtype, p.dtype, config, nax))


#: The tests of ``Matmul::eval_gpu`` and ``steel_matmul_axpby``, in MLX's order: the first
#: that holds picks the kernel. :func:`route` runs them; the flowchart on "How MLX picks a
#: GEMM" (gemmglossary.figures.flow) draws them, so the drawing is this sequence.
STEPS: tuple[Step, ...] = (
    Step("dot_product", "M = N = 1, no batch, not complex?", ("dot_product",), "dot_product", _dot_product),
    Step("gemv_wide", f"float16 or bfloat16 x @ W.T, 2 to {GEMV_WIDE_ROWS_PER_PASS * GEMV_WIDE_MAX_PASSES} rows "
                      f"of x, generation {GEMV_WIDE_MIN_GENERATION} or later, K and strides multiples of 4?",
         ("gemv_wide",), "gemv_wide_config", _gemv_wide),
    Step("gemv", "M or N is 1? (gemv when the matrix's rows run along K, else gemv_t)", ("gemv", "gemv_t"),
         "gemv_config", _gemv),
    Step("splitk", f"no NAX, no batch, at most {SPLITK_MAX_TILES} 16×16 tiles of C ({SPLITK_MAX_TILES_SD} on "
                   f"classes s, d), K ≥ {16 * SPLITK_MIN_K_STEPS} and K ≥ max(M, N)?",
         ("splitk",), "splitk_rule", _splitk),
    Step("splitk_nax", f"NAX, no batch, K ≥ {NAX_SPLITK_RATIO}·max(M, N), or K > {NAX_SPLITK_SMALL_RATIO}·max(M, N) "
                       f"when max(M, N) ≤ {NAX_SPLITK_SMALL}?", ("splitk_nax",), "nax_splitk_rule", _nax_splitk),
    Step("fused_nax", "NAX in use? (available, not complex, float32 only with TF32)", ("fused_nax",), "use_nax",
         lambda r: _fused(r, nax=True)),
    Step("fused", "everything else", ("fused",), "tile_macro", lambda r: _fused(r, nax=False)),
)


def decisions(p: Problem, device: Device, tf32: bool = TF32_DEFAULT) -> list[tuple[Step, Route | None]]:
    """Each step MLX tries for ``p``, in order, with the Route of the one that takes it
    (None for those that pass it on): the path through the flowchart."""
    r = routing(p, device, tf32)
    path = []
    for step in STEPS:
        taken = step.take(r)
        path.append((step, taken))
        if taken is not None:
            return path
    raise HostError(f"no routing step takes {p} on {device}: the last step must take every product")


def route(p: Problem, device: Device, tf32: bool = TF32_DEFAULT) -> Route:
    """The kernel MLX dispatches for ``p`` on ``device`` (``Matmul::eval_gpu``): the
    first of :data:`STEPS` whose test holds."""
    return decisions(p, device, tf32)[-1][1]


def _splitk_name(p: Problem, acc: str, c: TileConfig, M: int, N: int, K: int) -> str:
    code = ("t" if p.transpose_a else "n") + ("t" if p.transpose_b else "n")
    mn = "t" if (M % c.bm == 0 and N % c.bn == 0) else "n"
    k = "t" if K % c.bk == 0 else "n"
    return (f"steel_gemm_splitk_{code}_{p.dtype}_{acc}_bm{c.bm}_bn{c.bn}_bk{c.bk}_wm{c.wm}_wn{c.wn}"
            f"_MN_{mn}aligned_K_{k}aligned")


# ----------------------------------------------------------------------------- what the kernels derive

@dataclass(frozen=True)
class LoaderShape:
    """``BlockLoader``'s partition of one tile (loader.h, template defaults)."""

    rows: int     # BROWS
    cols: int     # BCOLS
    threads: int  # tgp_size
    n_reads: int  # contiguous elements per thread per pass
    tcols: int    # threads sharing one row
    trows: int    # rows covered by one pass of the threadgroup
    passes: int   # n_rows: ceil(BROWS / TROWS)


def block_loader(rows: int, cols: int, threads: int) -> LoaderShape:
    n_reads = (cols * rows) // threads
    if n_reads < 1:
        raise HostError(f"a {rows}×{cols} tile has fewer elements than {threads} threads")
    tcols = cols // n_reads
    trows = threads // tcols
    return LoaderShape(rows, cols, threads, n_reads, tcols, trows, cdiv(rows, trows))


def gemm_loaders(config: TileConfig, transpose_a: bool = False,
                 transpose_b: bool = False) -> tuple[LoaderShape, LoaderShape]:
    """The A and B loaders of ``GEMMKernel`` (gemm.h): A is BM×BK (BK×BM transposed),
    B is BK×BN (BN×BK transposed), both split over WM·WN·32 threads."""
    a = (config.bk, config.bm) if transpose_a else (config.bm, config.bk)
    b = (config.bn, config.bk) if transpose_b else (config.bk, config.bn)
    return block_loader(*a, config.threads), block_loader(*b, config.threads)


def threadgroup_bytes(config: TileConfig, dtype: str, transpose_a: bool = False,
                      transpose_b: bool = False) -> int:
    """``GEMMKernel::tgp_mem_size`` in bytes: both tiles, each row padded by 16 bytes."""
    item = ITEMSIZE[dtype]
    pad = 16 // item
    bm, bn, bk = config.bm, config.bn, config.bk
    a = bk * (bm + pad) if transpose_a else bm * (bk + pad)
    b = bn * (bk + pad) if transpose_b else bk * (bn + pad)
    return (a + b) * item


# ----------------------------------------------------------------------------- enumerations for the pages

def regular_configs() -> dict[TileConfig, list[tuple[str, str, str, str]]]:
    """Every configuration GEMM_TPARAM_MACRO can return, with the cases that reach it:
    (device size class, dtype, transposition, size)."""
    devices = {"small": Device("g", 15), "medium": Device("s", 15), "large": Device("d", 15)}
    sizes = {"M·N below 2^20": (256, 256, 256), "M·N at least 2^20, K < 2·max(M, N)": (1024, 1024, 1024),
             "M·N at least 2^20, K ≥ 2·max(M, N)": (1024, 1024, 4096)}
    out: dict[TileConfig, list[tuple[str, str, str, str]]] = {}
    for cls, dev in devices.items():
        for dtype in DTYPES:
            for ta in (False, True):
                for tb in (False, True):
                    for size, (M, N, K) in sizes.items():
                        c = regular_config(dtype, dev, ta, tb, M, N, K)
                        code = ("t" if ta else "n") + ("t" if tb else "n")
                        out.setdefault(c, []).append((cls, dtype, code, size))
    return out


def _check_sizes(**sizes: int) -> None:
    for name, value in sizes.items():
        if value < 1:
            raise HostError(f"{name} must be at least 1, got {value}")


def _check_dtype(dtype: str) -> None:
    if dtype not in DTYPES:
        raise HostError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
