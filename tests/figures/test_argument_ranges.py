"""Every figure and fact argument is range-checked from its generator's own annotation
(text_args.Int, a Literal), so a typo in a page is one line, not minutes at gigabytes
(issue #36)."""

from __future__ import annotations

import time
import typing

import pytest

from gemmglossary import text_args
from gemmglossary.docs_hooks import facts
from gemmglossary.figures import FIGURES, FigureError, generate


def _all():
    yield from ((f"figure {n}", FIGURES[n]) for n in FIGURES)
    yield from ((f"fact {n}", f) for n, f in facts.FACTS.items())


def test_every_integer_argument_declares_its_range():
    unbounded = [f"{what}: {k}" for what, func in _all()
                 for k, hint in typing.get_type_hints(func, include_extras=True).items() if hint is int]
    assert not unbounded, unbounded


def test_a_bare_int_is_the_authors_mistake():
    def figure(*, n: int = 1):
        return n

    with pytest.raises(TypeError, match="argument n is annotated int without a range"):
        text_args.keyword_arguments("figure x", figure, {}, ValueError)


def test_a_size_typo_is_refused_at_once():
    t0 = time.monotonic()
    with pytest.raises(FigureError, match=r"argument M= must be 1 to 256, got 100000000"):
        generate("gemv-rows", {"kernel": "gemv", "M": "100000000", "K": "300"}, use_cache=False)
    assert time.monotonic() - t0 < 5


@pytest.mark.parametrize("name, args, why", [
    ("tile-pyramid", {"M": "0"}, "argument M= must be 1 to 4096, got 0"),
    ("swizzle-order", {"swizzle_log": "9"}, "argument swizzle_log= must be 0 to 3, got 9"),
    ("double-buffer", {"steps": "1"}, "argument steps= must be 2 to 8, got 1"),
    ("k-step-timeline", {"schedule": "chaos"}, "argument schedule= must be one of random, lockstep, simdgroup-major"),
    ("matmul-route", {"max_k": "40"}, "argument max_k= must be 1 to 16, got 40"),
    ("matmul-route", {"min_k": "8", "max_k": "8"}, "min_k= must be below max_k="),
    ("quantized-word", {"groups": "100000"}, "argument groups= must be 1 to 8"),
    ("masked-edge", {"M": "100000"}, "argument M= must be 1 to 512"),
])
def test_figure_ranges(name, args, why):
    with pytest.raises(FigureError, match=why):
        generate(name, args, use_cache=False)


def test_the_pyramid_lists_every_kernel_it_draws():
    with pytest.raises(FigureError) as info:
        generate("tile-pyramid", {"kernel": "nope"}, use_cache=False)
    message = str(info.value)
    assert "mlx-steel" in message and "mlx-nax" in message and "tiled_gemm" in message, message


@pytest.mark.parametrize("body, why", [
    ("mlx.tile M=0", "argument M= must be 1 to 2147483647, got 0"),
    ("mlx.route M=1 N=1 K=4294967296", "argument K= must be 1 to 2147483647"),
    ("mlx.tile gen=100", "argument gen= must be 1 to 99"),
    ("mlx.qformat bits=64", "argument bits= must be 1 to 8"),
])
def test_fact_ranges(body, why):
    with pytest.raises(facts.FactError, match=why):
        facts.evaluate(body)
