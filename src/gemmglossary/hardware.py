"""Apple GPUs by chip, and the limits a kernel writer meets, each figure with its source.

Two tables, said once here and rendered on the pages by the facts extension
(``{{fact hardware.chips}}``, ``{{fact hardware.limits}}``, ``{{fact hardware.value ...}}``):

- :data:`CHIPS`: which Apple GPU family each chip belongs to (Apple's own table, the Metal
  feature set tables, and the ``MTLGPUFamily`` reference), and which architecture
  generation MLX reads from it (the two digits of the Metal architecture name,
  ``applegpu_g13s`` -> 13, :meth:`gemmglossary.mlx.matmul.Device.from_architecture`). Apple
  does not publish the architecture names; a generation is given only where a public
  report ties it to the chip, and is ``None`` otherwise. The class letter is not given per
  chip: MLX's own comments name what each letter stands for (:data:`CLASS_LETTERS`), and
  we found no linkable report for every chip.
- :data:`LIMITS`: the numeric limits side by side with CUDA's, each side with its source;
  where Apple documents nothing, the figure is a community measurement and says so.

Every row carries its source link; tests/test_hardware.py checks the rows against each
other (families in order, generations rising with the family) and against MLX's parser.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Apple's Metal feature set tables (the June 2024 edition lists Apple7 to Apple9 with
#: their chips: "Apple GPUs" table, page 1).
FEATURE_SET_TABLES = "https://developer.apple.com/metal/Metal-Feature-Set-Tables.pdf"
#: Dougall Johnson's reverse-engineered description of the M1's GPU, which he names G13.
G13_DOCS = "https://dougallj.github.io/applegpu/docs.html"
#: "M3 is G15, M4 is G16", in a thread on the same disassembler.
G15_G16 = "https://github.com/dougallj/applegpu/issues/62"
#: An M5 Max read from the IORegistry as AGXG17X (architecture generation 17).
G17 = "https://github.com/0xBakeer/inference-atlas/pull/194"
#: philipturner/metal-benchmarks at the commit read (its README's on-chip memory table).
METAL_BENCHMARKS = ("https://github.com/philipturner/metal-benchmarks/blob/"
                    "dc2adc640a1588246f4471d415aa6873cb6e3499/README.md")
CUDA_GUIDE = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html"
CUDA_LIMITS = CUDA_GUIDE + "#features-and-technical-specifications"


@dataclass(frozen=True)
class Chip:
    """One chip (or a chip family whose members Apple lists together)."""

    name: str
    family: int | None           # Apple GPU family N (MTLGPUFamily.appleN), where Apple's tables give it
    family_source: str | None
    generation: int | None       # MLX's architecture generation, where a report gives it
    generation_source: str | None
    kind: str                    # "Mac" (M series) or "iPhone/iPad" (A series)

    def __post_init__(self):
        for what, value, source in (("family", self.family, self.family_source),
                                    ("generation", self.generation, self.generation_source)):
            if (value is None) != (source is None):
                raise ValueError(f"{self.name}: a {what} needs its source, and a source its {what}")


CHIPS: tuple[Chip, ...] = (
    Chip("A14", 7, FEATURE_SET_TABLES, None, None, "iPhone/iPad"),
    Chip("M1, M1 Pro, M1 Max, M1 Ultra", 7, FEATURE_SET_TABLES, 13, G13_DOCS, "Mac"),
    Chip("A15, A16", 8, FEATURE_SET_TABLES, None, None, "iPhone/iPad"),
    Chip("M2, M2 Pro, M2 Max, M2 Ultra", 8, FEATURE_SET_TABLES, None, None, "Mac"),
    Chip("A17 Pro", 9, FEATURE_SET_TABLES, None, None, "iPhone/iPad"),
    Chip("M3, M3 Pro, M3 Max", 9, FEATURE_SET_TABLES, 15, G15_G16, "Mac"),
    Chip("M4", 9, FEATURE_SET_TABLES, 16, G15_G16, "Mac"),
    # The tables we could read end at Apple9; Apple's MTLGPUFamily reference lists later
    # families without naming their chips.
    Chip("M5 Max", None, None, 17, G17, "Mac"),
)

#: What MLX's Device constructor says each class letter is (its comments at the pinned
#: tag, linked by the page through ``{{fact mlx.url rule=device_class}}``). ``c`` has no
#: comment there; MLX's tile rules treat it with ``s`` and ``d`` as a large device.
CLASS_LETTERS: dict[str, str] = {"p": "phone", "g": "base, pro", "s": "max", "d": "ultra"}


@dataclass(frozen=True)
class Limit:
    """One limit, Metal's beside CUDA's."""

    key: str
    what: str
    metal: str
    metal_source: str
    metal_documented: bool       # False: a community measurement, not an Apple figure
    cuda: str
    cuda_source: str


LIMITS: tuple[Limit, ...] = (
    Limit("threads", "Threads per threadgroup (block)", "1024", FEATURE_SET_TABLES, True,
          "1024", CUDA_LIMITS),
    Limit("tg_memory", "Threadgroup (shared) memory per threadgroup", "32 KB", FEATURE_SET_TABLES, True,
          "48 KB static; up to 227 KB opted in (compute capability 9.0)", CUDA_LIMITS),
    Limit("simd_width", "Threads per simdgroup (warp)", "32 on Apple GPUs (query `threadExecutionWidth`)",
          "https://developer.apple.com/documentation/metal/mtlcomputepipelinestate/threadexecutionwidth", True,
          "32", CUDA_LIMITS),
    Limit("buffers", "Buffer arguments per kernel", "31", FEATURE_SET_TABLES, True,
          "kernel parameters up to 32,764 bytes (CUDA 12.1 and later)", CUDA_GUIDE + "#global-function-argument-processing"),
    Limit("registers", "Register file per core (SM)", "about 208 KB (Apple7 and Apple8)",
          METAL_BENCHMARKS + "#L82-L85", False, "64 K 32-bit registers (256 KB); at most 255 per thread", CUDA_LIMITS),
    Limit("resident", "Threads resident on one core (SM)", "384 to 3072, by registers per thread",
          METAL_BENCHMARKS + "#L82-L84", False, "2048 (compute capability 8.0 and 9.0)", CUDA_LIMITS),
    Limit("core_shared", "Threadgroup memory per core (SM)", "about 60 KB",
          METAL_BENCHMARKS + "#L82-L86", False, "up to 228 KB (compute capability 9.0)", CUDA_LIMITS),
    Limit("l1", "L1 data cache per core (SM)", "8 KB",
          METAL_BENCHMARKS + "#L82-L88", False, "combined with shared memory: 256 KB (compute capability 9.0)",
          CUDA_LIMITS),
)

LIMIT = {limit.key: limit for limit in LIMITS}


def chips_table() -> str:
    """The chip table as Markdown: chip, Apple GPU family, MLX generation, each with its link."""
    out = ["| Chip | Apple GPU family | MLX architecture generation |", "|---|---|---|"]
    for c in CHIPS:
        family = f"[Apple{c.family}]({c.family_source})" if c.family is not None else "not in the tables we read"
        gen = f"[{c.generation}]({c.generation_source})" if c.generation is not None else "no public report found"
        out.append(f"| {c.name} | {family} | {gen} |")
    return "\n".join(out)


def limits_table() -> str:
    """The limits as Markdown: Metal beside CUDA, each value linked to its source."""
    out = ["| Limit | Apple GPU (Metal) | NVIDIA (CUDA) |", "|---|---|---|"]
    for limit in LIMITS:
        mark = "" if limit.metal_documented else " (measured, not documented by Apple)"
        out.append(f"| {limit.what} | [{limit.metal}]({limit.metal_source}){mark} | "
                   f"[{limit.cuda}]({limit.cuda_source}) |")
    return "\n".join(out)


def classes_table(device_cpp_url: str) -> str:
    """The class letters as Markdown: each with what MLX's comment calls it, linked to the
    comments (``device_cpp_url``, the pinned lines of MLX's device.cpp)."""
    out = ["| Class letter | MLX's comment |", "|---|---|"]
    out += [f"| `{letter}` | [{what}]({device_cpp_url}) |" for letter, what in CLASS_LETTERS.items()]
    return "\n".join(out)


def family_of(generation: int) -> int | None:
    """The Apple GPU family of the chips whose architecture generation is ``generation``,
    where a sourced row gives it (None otherwise)."""
    families = {c.family for c in CHIPS if c.generation == generation and c.family is not None}
    return families.pop() if len(families) == 1 else None


@dataclass(frozen=True)
class Level:
    """One level of an Apple GPU's memory, from the thread outwards."""

    name: str
    scope: str                   # who shares it
    size: str
    spaces: str                  # the MSL address spaces that live there
    source: str
    documented: bool             # False: only measurements exist (the source's)


M5_GEMM_README = "https://github.com/yaroslavvb/m5-gemm/blob/29414bebb522ddacaa009959f2bcdad9f5b3e5cf/README.md"

HIERARCHY: tuple[Level, ...] = (
    Level("Registers", "one thread", "about 208 KB per core, split among its threads",
          "thread", METAL_BENCHMARKS + "#L82-L85", False),
    Level("Threadgroup memory", "one threadgroup", "32 KB per threadgroup",
          "threadgroup", FEATURE_SET_TABLES, True),
    Level("L1 data cache", "one core", "8 KB per core", "device, constant (cached)", METAL_BENCHMARKS + "#L82-L88",
          False),
    Level("L2 cache", "the whole GPU", "256 KB to 1 MB (M1 family)", "device, constant (cached)",
          METAL_BENCHMARKS + "#L57-L73", False),
    Level("System level cache", "GPU, CPU and the other engines", "8 to 96 MB (M1 family)",
          "device, constant (cached)", METAL_BENCHMARKS + "#L57-L73", False),
    Level("Unified memory", "GPU and CPU", "the machine's RAM; 494.8 GB/s read on an M5 Max",
          "device, constant", M5_GEMM_README + "#L70-L77", False),
)
