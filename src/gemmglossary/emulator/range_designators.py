"""The rewriter's pass for array designators in initializers (part of rewrite.Rewriter).

Metal's clang accepts C99 array designators and GNU range designators in a C++ brace list
(`float S[NQ] = { [0 ... NQ-1] = 0.0f };`, llama.cpp's flash attention); g++ accepts
neither in C++, and a bound may be a template parameter, so the list cannot be expanded
here. The declaration keeps its type and is value-initialized (`= {}`: every element no
designator names is zero, as in the list), then a block assigns the elements in list
order: a range's value is computed once and stored in each element of the range (GCC's
documented meaning, which clang shares), `[k] = x` stores one element and moves the
position after it, a plain element is stored at the position. The element expressions
stay tokens in place, so that the later passes still rewrite them."""

from __future__ import annotations

from ..msl.lexer import Tok
from ..msl.tokens import match as _match
from ..msl.tokens import match_back as _match_back
from ..msl.tokens import next_sig as _sig
from ..msl.tokens import prev_sig as _prev_sig
from ..msl.tokens import text as _text


def _set(toks: list[Tok], a: int, b: int, repl: str) -> None:
    """Replace tokens a..b (inclusive) by `repl`, keeping their newlines."""
    nls = sum(toks[k].text.count("\n") for k in range(a, b + 1))
    toks[a] = Tok("id", repl + "\n" * nls, toks[a].line, toks[a].file)
    for k in range(a + 1, b + 1):
        toks[k] = Tok("ws", "", toks[k].line, toks[k].file)


class RangeDesignators:
    """Mixed into rewrite.Rewriter: uses its `toks` and `err`."""

    def pass_array_designators(self) -> None:
        toks = self.toks
        count = 0
        for lb in range(len(toks)):
            if toks[lb].text != "{" or toks[lb].kind != "punct":
                continue
            eq = _prev_sig(toks, lb - 1)
            if eq < 0 or toks[eq].text != "=":
                continue
            rb = _match(toks, lb)
            elements = self._list_elements(lb, rb)
            if not any(d is not None for d, _, _ in elements):
                continue
            self._assign_elements(eq, lb, rb, elements, count)
            count += 1

    def _list_elements(self, lb: int, rb: int) -> list[tuple[tuple[int, int] | None, int, int]]:
        """Each top-level element of the list lb..rb: (its designator's `[`..`=` tokens or
        None, first and last token of its value)."""
        toks = self.toks
        out = []
        k = _sig(toks, lb + 1)
        while k < rb:
            start, designator = k, None
            if toks[k].text == "[":
                close = _match(toks, k)
                eq = _sig(toks, close + 1)
                if eq < rb and toks[eq].text == "=":
                    designator = (k, eq)
                    start = _sig(toks, eq + 1)
            e = start
            while e < rb and toks[e].text != ",":
                e = _match(toks, e) + 1 if toks[e].text in ("(", "[", "{") and toks[e].kind == "punct" else e + 1
            if start < e:
                out.append((designator, start, _prev_sig(toks, e - 1)))
            k = _sig(toks, e + 1)
        return out

    def _assign_elements(self, eq: int, lb: int, rb: int, elements, n: int) -> None:
        toks = self.toks
        # the declarator: NAME[dims] before the '='
        d = _prev_sig(toks, eq - 1)
        if toks[d].text != "]":
            raise self.err(toks[lb], "array designators in the initializer of something that is not an array: "
                                     "the emulator rewrites them for arrays only")
        while toks[d].text == "]":
            lt = _match_back(toks, d)
            if _sig(toks, lt + 1) == d:
                raise self.err(toks[lb], "array designators in the initializer of an array of unstated size: "
                                         "the emulator needs the size written")
            d = _prev_sig(toks, lt - 1)
        name = toks[d].text
        semi = _sig(toks, rb + 1)
        if semi >= len(toks) or toks[semi].text != ";":
            raise self.err(toks[lb], f"array designators in the initializer of '{name}', declared with others in "
                                     "one statement: the emulator rewrites one declaration per statement")
        start = d
        while start > 0 and toks[_prev_sig(toks, start - 1)].text not in (";", "{", "}"):
            start = _prev_sig(toks, start - 1)
        words = {t.text for t in toks[start:d]}
        if words & {"constexpr", "static", "constant", "threadgroup"} or not self._in_function(start):
            raise self.err(toks[lb], f"array designators in the initializer of '{name}': the emulator rewrites them "
                                     "for arrays declared in a function, not constexpr, static or in another "
                                     "address space")
        at, v, k = f"__mslemu_at{n}", f"__mslemu_v{n}", f"__mslemu_k{n}"
        const = "const" in words
        if const:  # the elements are assigned after the declaration
            for i in range(start, d):
                if toks[i].text == "const":
                    _set(toks, i, i, " ")
        _set(toks, eq, lb, f"= {{}}; {{ int {at} = 0; (void){at}; ")
        for designator, first, last in elements:
            if toks[first].text == "{":
                raise self.err(toks[first], f"array designators in the initializer of '{name}' with a braced "
                                            "element: the emulator rewrites lists of single values only")
            if designator is None:
                toks[first] = Tok("id", f"{name}[{at}++] = (" + toks[first].text, toks[first].line, toks[first].file)
                toks[last] = Tok(toks[last].kind, toks[last].text + ");", toks[last].line, toks[last].file)
                continue
            lo_i, eq_i = designator
            inside = _text(toks, lo_i + 1, _match(toks, lo_i) - 1)
            if "..." in inside:
                lo, _, hi = inside.partition("...")
                _set(toks, lo_i, eq_i, f"{{ const auto {v} = (")
                toks[last] = Tok(toks[last].kind, toks[last].text + f"); for (int {k} = ({lo}); {k} <= ({hi}); "
                                 f"++{k}) {name}[{k}] = {v}; {at} = ({hi}) + 1; }}", toks[last].line, toks[last].file)
            else:
                _set(toks, lo_i, eq_i, f"{name}[{at} = ({inside})] = (")
                toks[last] = Tok(toks[last].kind, toks[last].text + f"); ++{at};", toks[last].line, toks[last].file)
        # the commas between elements are statement separators now
        k = _sig(toks, lb + 1)
        while k < rb:
            if toks[k].text == "," and toks[k].kind == "punct":
                _set(toks, k, k, " ")
            elif toks[k].text in ("(", "[", "{") and toks[k].kind == "punct":
                k = _match(toks, k)
            k += 1
        _set(toks, rb, rb, " }")

    def _in_function(self, i: int) -> bool:
        """Whether token i is inside a function body: the first enclosing brace that opens a
        code block (after a parameter list, a control statement or another statement)."""
        toks = self.toks
        k = i - 1
        while k >= 0:
            t = toks[k]
            if t.text == "}" and t.kind == "punct":
                k = _match_back(toks, k) - 1
                continue
            if t.text == "{" and t.kind == "punct":
                pv = _prev_sig(toks, k - 1)
                if pv < 0:
                    return False
                if toks[pv].text in (")", "const", "noexcept", ";", "{", "}", "else", "do", ":"):
                    return True
                if toks[pv].text == "=":
                    k = pv - 1
                    continue
                return False  # a namespace, class or enum body
            k -= 1
        return False
