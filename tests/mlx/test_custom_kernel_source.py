"""The source ``gg.metal_kernel`` generates is the source ``mx.fast.metal_kernel`` generates.

Rules: MLX at the pinned tag (gemmglossary.mlx.matmul.MLX_TAG; the installed wheel of that
release is the oracle below), ``mlx/backend/common/metal_kernel.cpp`` (``write_signature``,
``write_template``, ``make_template_hash``, ``metal_kernel``) and
``mlx/backend/common/compiled.cpp`` (``get_type_string``); docs
``docs/src/dev/custom_metal_kernels.rst`` (whose example kernel name predates the
template hash and the per-input suffixes: the code is what counts).

Two kinds of check:

* pinned texts, written out by hand from those rules, so the tests hold on a machine
  without mlx and fail if the generator drifts;
* an oracle: the installed mlx wheel (pyproject pins the same release) prints the source it would compile with
  ``verbose=True``.  Without a Metal back-end mlx refuses to run the kernel, but it
  still builds (and prints) the source while tracing ``mx.export_function``; we run
  that in a subprocess and compare byte for byte.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from gemmglossary.mlx import custom_kernel as ms
from gemmglossary.mlx.matmul import MLX_VERSION

EXP_BODY = """
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
"""


def gen(name, input_names, output_names, source, inputs, output_dtypes, **kw):
    specs = [ms.InputSpec(d, tuple(s)) for d, s in inputs]
    return ms.generate(name, input_names, output_names, source, specs, output_dtypes, **kw)


def test_docs_example_exact_text():
    g = gen("myexp", ["inp"], ["out"], EXP_BODY, [("float16", (4, 16))], ["float16"],
            template=[("T", "float32")])
    name = "custom_kernel_myexp__float_float16_t_float16_t"
    assert g.name == name
    assert g.source == (
        "template <typename T>\n"
        f"[[kernel]] void {name}(\n"
        "  const device float16_t* inp [[buffer(0)]],\n"
        "  device float16_t* out [[buffer(1)]],\n"
        "  uint3 thread_position_in_grid [[thread_position_in_grid]]) {\n"
        f"{EXP_BODY}\n}}\n"
        f'\ntemplate [[host_name("{name}")]] [[kernel]] decltype({name}<float>) {name}<float>;\n'
    )


def test_constant_vs_device_and_scalar_reference():
    # 7 elements -> constant pointer ("c" suffix); 8 -> device; 0-d -> constant reference ("s").
    g = gen("k", ["a", "b", "s"], ["o"], "o[0] = a[0] + b[0] + s;",
            [("float32", (7,)), ("float32", (2, 4)), ("int32", ())], ["float32"])
    assert g.name == "custom_kernel_k_floatc_float_int32_ts_float"
    assert g.source == (
        "[[kernel]] void custom_kernel_k_floatc_float_int32_ts_float(\n"
        "  const constant float* a [[buffer(0)]],\n"
        "  const device float* b [[buffer(1)]],\n"
        "  const constant int32_t& s [[buffer(2)]],\n"
        "  device float* o [[buffer(3)]]) {\n"
        "o[0] = a[0] + b[0] + s;\n}\n"
    )


def test_shape_strides_ndim_atomic_and_attributes():
    body = "uint i = thread_index_in_threadgroup + x_shape[0] * x_ndim + x_strides[0] + s_ndim; atomic_fetch_add_explicit(&y[0], 1, memory_order_relaxed); (void)simdgroup_index_in_threadgroup;"
    g = gen("at", ["x", "s"], ["y"], body, [("uint32", (3, 5)), ("float32", ())], ["int32"],
            atomic_outputs=True, header="#define FOO 1\n")
    assert g.source == (
        "#define FOO 1\n"
        "[[kernel]] void custom_kernel_at_uint32_t_floats_int32_t(\n"
        "  const device uint32_t* x [[buffer(0)]],\n"
        "  const constant int* x_shape [[buffer(1)]],\n"
        "  const constant int64_t* x_strides [[buffer(2)]],\n"
        "  const constant int& x_ndim [[buffer(3)]],\n"
        "  const constant float& s [[buffer(4)]],\n"  # 0-d: no s_ndim buffer even though mentioned
        "  device atomic<int32_t>* y [[buffer(5)]],\n"
        "  uint simdgroup_index_in_threadgroup [[simdgroup_index_in_threadgroup]],\n"
        "  uint thread_index_in_threadgroup [[thread_index_in_threadgroup]]) {\n"
        f"{body}\n}}\n"
    )
    assert [(b.kind, b.position) for b in g.layout] == [
        ("input", 0), ("shape", 0), ("strides", 0), ("ndim", 0), ("input", 1), ("output", 0)
    ]


def test_template_int_bool_and_hash():
    g = gen("t", ["a"], ["b"], "b[0] = a[0] * N + B;", [("float32", (16,))], ["bfloat16"],
            template=[("T", "float16"), ("N", 3), ("B", True)])
    name = "custom_kernel_t__float16_t_3_1_float_bfloat16_t"
    assert g.name == name
    assert g.source.startswith(f"template <typename T, int N, bool B>\n[[kernel]] void {name}(\n")
    assert g.source.endswith(
        f'template [[host_name("{name}")]] [[kernel]] decltype({name}<float16_t, 3, 1>) {name}<float16_t, 3, 1>;\n'
    )


def test_negative_template_ints_in_the_host_name():
    # The '-' stays in the name (tested against the wheel below).
    g = gen("neg", ["a"], ["b"], "b[0] = a[0] * N;", [("float32", (16,))], ["float32"],
            template=[("N", -3), ("T", "float16"), ("B", False)])
    name = "custom_kernel_neg__-3_float16_t_0_float_float"
    assert g.name == name
    assert g.source.endswith(f"decltype({name}<-3, float16_t, 0>) {name}<-3, float16_t, 0>;\n")


def test_early_close_quirk_kept():
    # One input with a shape buffer, two outputs, no attributes: MLX closes the
    # parameter list after the first output (its index is compared with n_in+n_out-1).
    g = gen("q", ["a"], ["o1", "o2"], "o1[0] = a_shape[0];", [("float32", (9,))], ["float32", "float32"])
    assert "  device float* o1 [[buffer(2)]]) {\n  device float* o2 [[buffer(3)]]) {\n" in g.source


def test_errors():
    with pytest.raises(ValueError, match="at least one output"):
        gen("e", ["a"], [], "", [("float32", (8,))], [])
    with pytest.raises(ValueError, match="Invalid template argument"):
        gen("e", ["a"], ["o"], "", [("float32", (8,))], ["float32"], template=[("T", 1.5)])
    with pytest.raises(ValueError, match="Invalid template argument"):
        ms.template_arguments([("N", 2**31)])
    assert ms.template_arguments([("N", -(2**31)), ("B", True)]) == [("N", -(2**31)), ("B", True)]
    with pytest.raises(ValueError, match="Unknown compile option `mathmode`"):
        ms.math_mode({"mathmode": "fast"})
    assert ms.math_mode(None) == "safe" and ms.math_mode({"math_mode": "relaxed"}) == "relaxed"
    with pytest.raises(ValueError, match="Expected `inputs` to have size 1 but got size 2"):
        gen("e", ["a"], ["o"], "", [("float32", (8,)), ("float32", (8,))], ["float32"])


# --- oracle: the installed mlx wheel -------------------------------------------------

ORACLE = textwrap.dedent(
    """
    import json, sys
    import mlx.core as mx
    spec = json.loads(sys.argv[1])
    def dt(x):
        return getattr(mx, "bool_" if x == "bool" else x)
    k = mx.fast.metal_kernel(name=spec["name"], input_names=spec["input_names"],
        output_names=spec["output_names"], source=spec["source"], header=spec["header"],
        atomic_outputs=spec["atomic"])
    arrays = [mx.zeros(tuple(s), dtype=dt(d)) for d, s in spec["inputs"]]
    template = [(n, dt(v["dtype"]) if isinstance(v, dict) else v) for n, v in spec["template"]]
    def f(*xs):
        return k(inputs=list(xs), output_shapes=[(4,)] * len(spec["output_names"]),
                 output_dtypes=[dt(d) for d in spec["output_dtypes"]], grid=(4, 1, 1),
                 threadgroup=(4, 1, 1), template=template or None, verbose=True)
    mx.export_function(spec["path"], f, *arrays)
    """
)

CASES = [
    dict(name="myexp", input_names=["inp"], output_names=["out"], source=EXP_BODY, header="",
         atomic=False, inputs=[["float16", [4, 16]]], output_dtypes=["float16"],
         template=[["T", {"dtype": "float32"}]]),
    dict(name="k", input_names=["a", "b", "s"], output_names=["o"], source="o[0] = a[0] + b[0] + s;",
         header="", atomic=False, inputs=[["float32", [7]], ["float32", [2, 4]], ["int32", []]],
         output_dtypes=["float32"], template=[]),
    dict(name="at", input_names=["x", "s"], output_names=["y"],
         source="uint i = thread_index_in_threadgroup + x_shape[0] * x_ndim + x_strides[0] + s_ndim + threads_per_grid.x + grid_size.y;",
         header="#define FOO 1\n", atomic=True, inputs=[["uint32", [3, 5]], ["float32", []]],
         output_dtypes=["int32"], template=[]),
    dict(name="t", input_names=["a"], output_names=["b"], source="b[0] = a[0] * N + B;", header="",
         atomic=False, inputs=[["bfloat16", [16]]], output_dtypes=["bfloat16"],
         template=[["T", {"dtype": "float16"}], ["N", 3], ["B", True], ["C", False]]),
    dict(name="q", input_names=["a"], output_names=["o1", "o2"], source="o1[0] = a_shape[0];",
         header="", atomic=False, inputs=[["int8", [9]]], output_dtypes=["uint8", "bool"], template=[]),
    dict(name="neg", input_names=["a"], output_names=["b"], source="b[0] = a[0] * N + M;", header="",
         atomic=False, inputs=[["float32", [16]]], output_dtypes=["float32"],
         template=[["N", -3], ["M", -2147483648], ["T", {"dtype": "float16"}], ["B", False]]),
    dict(name="many", input_names=["a", "b"], output_names=["o"],
         source="o[thread_position_in_grid.x] = a[0] + b_strides[1] + simdgroup_index_in_threadgroup + thread_index_in_simdgroup + threads_per_threadgroup.x + threadgroup_position_in_grid.x + quadgroup_index_in_threadgroup;",
         header="", atomic=False, inputs=[["int64", [1, 1, 1]], ["uint16", [4, 4]]],
         output_dtypes=["float32"], template=[]),
]


def _mlx_version():
    try:
        import mlx.core as mx
    except ImportError:
        return None
    return mx.__version__


NEEDS_WHEEL = pytest.mark.skipif(_mlx_version() != MLX_VERSION,
                                 reason=f"needs the pinned mlx {MLX_VERSION} wheel as the oracle "
                                        f"(installed: {_mlx_version()}; `pip install -e .` installs it)")


@NEEDS_WHEEL
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_matches_installed_mlx(case, tmp_path):
    spec = dict(case, path=str(tmp_path / "k.mlxfn"))
    proc = subprocess.run([sys.executable, "-c", ORACLE, json.dumps(spec)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    template = [(n, v["dtype"] if isinstance(v, dict) else v) for n, v in case["template"]]
    g = gen(case["name"], case["input_names"], case["output_names"], case["source"],
            case["inputs"], case["output_dtypes"], header=case["header"],
            atomic_outputs=case["atomic"], template=template)
    assert proc.stdout == ms.verbose_text(case["name"], g.source)


# --- what the binding accepts, against the wheel's own checks ---------------------------

def _mlx_outcome(call):
    """'ok', or the exception type and message MLX raised."""
    try:
        call()
    except RuntimeError as exc:
        if "No Metal back-end" in str(exc):  # accepted; it only cannot run here
            return "ok"
        return (RuntimeError, None)  # std::bad_cast: the message is C++'s
    except ValueError as exc:
        return (ValueError, str(exc))
    return "ok"


def _our_outcome(call):
    try:
        call()
    except RuntimeError:
        return (RuntimeError, None)
    except ValueError as exc:
        return (ValueError, str(exc))
    return "ok"


def _template_candidates():
    import enum

    import mlx.core as mx
    import numpy as np

    class Small(enum.IntEnum):
        FOUR = 4

    return [("int", 3), ("negative int", -3), ("int min", -(2**31)), ("int max", 2**31 - 1),
            ("int too big", 2**31), ("int too small", -(2**31) - 1), ("bool", True), ("mx dtype", mx.float16),
            ("np.int64", np.int64(3)), ("np.True_", np.True_), ("np.float32", np.float32),
            ("np.dtype", np.dtype("float32")), ("str", "float32"), ("float", 3.0), ("None", None),
            ("IntEnum", Small.FOUR)]


@NEEDS_WHEEL
def test_template_values_accepted_and_refused_as_mlx_does():
    import mlx.core as mx

    kernel = mx.fast.metal_kernel(name="t", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
    for label, value in _template_candidates():
        theirs = _mlx_outcome(lambda: kernel(
            inputs=[mx.zeros((4,))], output_shapes=[(4,)], output_dtypes=[mx.float32],
            grid=(4, 1, 1), threadgroup=(4, 1, 1), template=[("N", value)]))
        ours = _our_outcome(lambda: ms.template_arguments([("N", value)]))
        assert ours == theirs, label


@NEEDS_WHEEL
def test_compile_options_accepted_and_refused_as_mlx_does():
    import mlx.core as mx

    candidates = [None, {}, {"math_mode": "safe"}, {"math_mode": "relaxed"}, {"math_mode": "fast"},
                  {"math_mode": "wrong"}, {"mathmode": "fast"}, {"math_mode": "fast", "extra": 1},
                  [("math_mode", "fast")], {"math_mode": 1}, {1: "fast"}]
    for options in candidates:
        theirs = _mlx_outcome(lambda: mx.fast.metal_kernel(
            name="c", input_names=["a"], output_names=["b"], source="b[0] = a[0];", compile_options=options))
        ours = _our_outcome(lambda: ms.math_mode(options))
        assert ours == theirs, options


CONVERSIONS = textwrap.dedent(
    """
    import sys
    import mlx.core as mx
    import numpy as np
    exprs = sys.argv[2:]
    names = [f"x{i}" for i in range(len(exprs))]
    k = mx.fast.metal_kernel(name="conv", input_names=names, output_names=["o"], source="o[0] = 0;")
    def f(dummy):
        return k(inputs=[eval(e) for e in exprs], output_shapes=[(1,)], output_dtypes=[mx.float32],
                 grid=(1, 1, 1), threadgroup=(1, 1, 1), verbose=True)
    mx.export_function(sys.argv[1], f, mx.zeros((1,)))
    """
)

#: Inputs as Python expressions: scalars of every kind, numpy arrays and views.
CONVERTED = ["3", "2**31", "-2**31 - 1", "1.5", "True", "np.int64(2)", "np.float64(2.0)", "np.bool_(True)",
             "np.arange(3)", "np.zeros((2, 6))[:, ::2]", "np.zeros(8, np.float16)", "1 + 2j"]


@NEEDS_WHEEL
def test_inputs_are_converted_as_mlx_converts_them(tmp_path):
    """The generated source names each input's dtype, shape class and address space."""
    import numpy as np

    from gemmglossary.runtime.custom_kernels import _Input

    proc = subprocess.run([sys.executable, "-c", CONVERSIONS, str(tmp_path / "c.mlxfn"), *CONVERTED],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    names = [f"x{i}" for i in range(len(CONVERTED))]
    specs = [_Input(eval(e, {"np": np}), n, True).spec for e, n in zip(CONVERTED, names)]
    ours = ms.generate("conv", names, ["o"], "o[0] = 0;", specs, ["float32"])
    assert proc.stdout == ms.verbose_text("conv", ours.source)
