"""The rewriter's pass for conditional expressions over the software half type (part of
rewrite.Rewriter; run only when the host compiler has no 16-bit float, mslemu.h's `f16`).

`il < 2 ? xb->d : xb->d / 16.f` mixes a `half` and a `float` (llama.cpp's dequantize_q5_K).
Metal's `half` is arithmetic, so the usual arithmetic conversions give the expression the
type `float`; the shim's class converts to `float` and from it, so C++ finds the expression
ambiguous. Each arm is cast to the type Metal gives the expression,
`mslemu::cond_t<decltype(a), decltype(b)>` (mslemu_f16.h): that of C++'s own conditional
unless one arm is a half and the other another arithmetic type. The arms stay tokens in
place, so the later passes still rewrite them."""

from __future__ import annotations

from ..msl.lexer import Tok
from ..msl.tokens import match as _match
from ..msl.tokens import next_sig as _sig
from ..msl.tokens import text as _text

_STOPS = {",", ";", ")", "]", "}"}
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}


class SoftHalfConditionals:
    """Mixed into rewrite.Rewriter: uses its `toks`."""

    def pass_soft_half_conditionals(self) -> None:
        toks = self.toks
        spans = []
        for q, t in enumerate(toks):
            if t.text != "?" or t.kind != "punct":
                continue
            colon = self._arm_end(q + 1, stop_at_colon=True)
            if colon is None or toks[colon].text != ":":
                continue
            a0, a1 = _sig(toks, q + 1), colon - 1
            b0 = _sig(toks, colon + 1)
            b1 = self._arm_end(b0, stop_at_colon=False)
            if b1 is None or a0 > a1 or b0 >= b1:
                continue
            spans.append([a0, a1, b0, b1 - 1])
        # inner conditionals first, so that an outer one's decltype holds their casts; the
        # casts are tokens of their own (copies of the arms in the decltype), which every later
        # pass rewrites as it rewrites the arms
        spans.sort(key=lambda e: e[3] - e[0])
        for n, span in enumerate(spans):
            a0, a1, b0, b1 = span
            cast = [*_punct("(", toks[a0]), Tok("id", "::mslemu::cond_t", toks[a0].line, toks[a0].file),
                    *_punct("<", toks[a0]), *self._decltype(a0, a1), *_punct(",", toks[a0]),
                    *self._decltype(b0, b1), *_punct(">", toks[a0]), *_punct(")", toks[a0]), *_punct("(", toks[a0])]
            # insertions from the last position back, each moving the spans after it
            for at, new in ((b1 + 1, _punct(")", toks[b1])), (b0, cast), (a1 + 1, _punct(")", toks[a1])), (a0, cast)):
                toks[at:at] = [Tok(t.kind, t.text, t.line, t.file) for t in new]
                for other in spans[n + 1:]:
                    for k in range(4):
                        # an arm that starts where a cast goes in starts with the cast; one that
                        # ends where a closing parenthesis goes in after it ends with it
                        if other[k] > at or (k % 2 and other[k] == at - 1) or (k % 2 and other[k] == at):
                            other[k] += len(new)

    def _decltype(self, a: int, b: int) -> list[Tok]:
        """`decltype((arm))` for the arm a..b, its tokens copied without their newlines (which
        would move the lines after them)."""
        toks = self.toks
        copies = [Tok(t.kind, " " if "\n" in t.text else t.text, t.line, t.file) for t in toks[a:b + 1]
                  if t.kind not in ("comment", "pp")]
        return [Tok("id", "decltype", toks[a].line, toks[a].file), *_punct("(", toks[a]), *_punct("(", toks[a]),
                *copies, *_punct(")", toks[a]), *_punct(")", toks[a])]

    def _arm_end(self, i: int, stop_at_colon: bool) -> int | None:
        """The index of the token that ends an arm starting at i: its ':' (the second arm,
        nested conditionals skipped) or the first token after it (the third arm)."""
        toks = self.toks
        pending = 0
        k = i
        while k < len(toks):
            x = toks[k]
            if x.kind == "punct" and x.text in ("(", "[", "{"):
                k = _match(toks, k) + 1
                continue
            if x.kind == "punct":
                if x.text == "?":
                    pending += 1
                elif x.text == ":":
                    if pending:
                        pending -= 1
                    else:
                        return k
                elif x.text in _STOPS or (x.text in _ASSIGN and not pending):
                    return None if stop_at_colon else k
            elif x.kind == "pp":
                return None
            k += 1
        return None


def _punct(text: str, at: Tok) -> list[Tok]:
    return [Tok("punct", text, at.line, at.file)]
