"""The rewriter's pass for brace lists after a vector type (part of rewrite.Rewriter).

`float4 v = {1};` is (1, 0, 0, 0) in Metal, whose vectors take a brace list as an aggregate
does (clang's vector literals), where `float4(1)` is (1, 1, 1, 1); a C++ constructor cannot
tell braces from parentheses, so the list gets the shim's tag first (mslemu_vec.h)."""

from __future__ import annotations

import re

from ..msl.lexer import Tok
from ..msl.tokens import match as _match
from ..msl.tokens import next_sig as _sig
from ..msl.tokens import prev_sig as _prev_sig

# Metal's vector type names
VECTOR_TYPE = re.compile(r"(?:packed_)?(?:float|half|bfloat|int|uint|short|ushort|char|uchar|bool|long|ulong)[234]")


def angle_end(toks: list[Tok], lt: int) -> int:
    """The `>` that closes the template argument list opened at `lt` (len(toks) if none)."""
    depth, k = 0, lt
    while k < len(toks):
        x = toks[k].text
        if x == "<":
            depth += 1
        elif x in (">", ">>"):
            depth -= len(x)
            if depth <= 0:
                return k
        elif x in ("(", "[") and toks[k].kind == "punct":
            k = _match(toks, k)
        elif x in (";", "{", "}"):
            break
        k += 1
    return len(toks)


class VectorBraceLists:
    """Mixed into rewrite.Rewriter: uses its `toks` and records into its `text_edits`."""

    def pass_vector_brace_lists(self) -> None:
        """A brace list after a vector type (`float4 v = {1};`, `uint4 k{a, b, c}`,
        `float4{x}`, each element list of `float2 pts[2] = {{1}, {2, 3}}`) initializes the
        vector as an aggregate in Metal (clang's vector literals): the components it leaves out
        are zero, where `float4(1)` is (1, 1, 1, 1). A C++ constructor cannot tell braces from
        parentheses, so the list gets the shim's tag first (mslemu_vec.h). A brace list whose
        type is not written next to it (`return {1, 2};`, a struct's member) is not seen: it
        goes to the ordinary constructors, which take one scalar or every component."""
        toks, n = self.toks, len(self.toks)
        i = 0
        while i < n:
            t = toks[i]
            end = None
            if t.kind == "id" and VECTOR_TYPE.fullmatch(t.text):
                end = i
            elif t.kind == "id" and t.text in ("vec", "packed_vec"):
                lt = _sig(toks, i + 1)
                if lt < n and toks[lt].text == "<":
                    end = angle_end(toks, lt)
            if end is None:
                i += 1
                continue
            pv = _prev_sig(toks, i - 1)
            before = toks[pv].text if pv >= 0 else ""
            if before in (".", "->"):
                i += 1  # a member named like a type
                continue
            k = _sig(toks, end + 1)
            if k < n and toks[k].text == "{":
                # float4{...}; not a definition (`struct alignas(16) vec<T, 8> {`)
                # nor a list after a template argument list that vec<...> ends (`S<vec<T, 2>> {`)
                if before not in (")", ">", "struct", "class", "union", "enum", "typename", "operator") and \
                        toks[end].text != ">>":
                    self._tag_brace_list(k)
                i = k + 1
                continue
            # declarators: name [dims] (= {list} | {list}), ...
            while k < n and toks[k].kind == "id":
                k = _sig(toks, k + 1)
                dims = False
                while k < n and toks[k].text == "[":
                    dims = True
                    k = _sig(toks, _match(toks, k) + 1)
                if k < n and toks[k].text == "=":
                    k = _sig(toks, k + 1)
                if k >= n or toks[k].text != "{":
                    break
                if dims:  # an array of vectors: each element's list
                    j = _sig(toks, k + 1)
                    close = _match(toks, k)
                    while j < close:
                        if toks[j].text == "{":
                            self._tag_brace_list(j)
                            j = _match(toks, j)
                        elif toks[j].text in ("(", "["):
                            j = _match(toks, j)
                        j = _sig(toks, j + 1)
                else:
                    self._tag_brace_list(k)
                k = _sig(toks, _match(toks, k) + 1)
                if k >= n or toks[k].text != ",":
                    break
                k = _sig(toks, k + 1)
            i = end + 1

    def _tag_brace_list(self, lb: int) -> None:
        toks = self.toks
        first = _sig(toks, lb + 1)
        if first < len(toks) and toks[first].text != "}":  # `{}` is all zeros already
            self.text_edits.append([(lb, toks[lb], "", "::metal::__mslemu_brace_list{}, ", True)])
