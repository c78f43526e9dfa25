"""MLX's own documented ``mx.fast.metal_kernel`` example, run unchanged through ``gg.metal_kernel``.

The example is MLX's, not ours to copy into this repository: it is read when the test runs
from the docstring of the installed mlx's ``mx.fast.metal_kernel`` (its "Example:" block,
the elementwise ``exp`` kernel that is also the first example of MLX's "Custom Metal
Kernels" guide, https://ml-explore.github.io/mlx/build/html/dev/custom_metal_kernels.html),
and executed as it is written. Nothing in its text changes; around it, the name ``mx`` it
uses is ``mlx.core`` itself except that ``mx.fast.metal_kernel`` is ``gg.metal_kernel``.

Imported by the suite (the pinned mlx) and run as a script in a fresh environment with
another mlx version (tests/linux_ci/test_wheel.py), where it prints one JSON line.
"""

from __future__ import annotations

import contextlib
import io
import json
import textwrap
import types


def documented_example(mx) -> str:
    """The code of the "Example:" block of ``mx.fast.metal_kernel.__doc__``."""
    lines = (mx.fast.metal_kernel.__doc__ or "").splitlines()
    text = [(i, ln.strip()) for i, ln in enumerate(lines) if ln.strip()]  # the lines that are not blank
    starts = [b for (_, a), (b, directive) in zip(text, text[1:])
              if a == "Example:" and directive == ".. code-block:: python"]
    if not starts:
        raise LookupError("the installed mlx's mx.fast.metal_kernel has no 'Example:' code block in its docstring")
    indent = len(lines[starts[0]]) - len(lines[starts[0]].lstrip())
    block = []
    for ln in lines[starts[0] + 1:]:
        if ln.strip() and len(ln) - len(ln.lstrip()) <= indent:
            break  # the block ends where the text comes back to the directive's indentation
        block.append(ln)
    return textwrap.dedent("\n".join(block)).strip() + "\n"


def with_emulated_fast(mx, metal_kernel):
    """``mx`` for the example: mlx.core, but ``fast.metal_kernel`` is ``metal_kernel``."""
    class Fast:
        def __getattr__(self, name):
            return metal_kernel if name == "metal_kernel" else getattr(mx.fast, name)

    class Mx(types.ModuleType):
        def __getattr__(self, name):
            return Fast() if name == "fast" else getattr(mx, name)

    return Mx("mlx.core")


def run(mx, metal_kernel) -> dict:
    """Execute the documented example; what it printed (``verbose=True``: the source)."""
    code = documented_example(mx)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "mx.fast.metal_kernel.__doc__ (Example)", "exec"), {"mx": with_emulated_fast(mx, metal_kernel)})
    return {"code": code, "printed": out.getvalue()}


if __name__ == "__main__":
    import importlib.metadata

    import mlx.core as mx

    import gemmglossary as gg
    from gemmglossary.runtime import mlx_headers

    result = run(mx, gg.metal_kernel)
    print(json.dumps(dict(result, mlx=importlib.metadata.version("mlx"), reproduces=mlx_headers.version(),
                          backend=gg.backend())))
