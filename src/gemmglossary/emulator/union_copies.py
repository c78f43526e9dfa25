"""The rewriter's pass for structs that hold an anonymous union (part of rewrite.Rewriter).

Every Metal type copies bytewise, and so does a union of them (llama.cpp's quantized blocks,
`typedef struct { union { struct { half d, m; }; half2 dm; }; uint8_t qs[16]; } block_q4_1;`,
are assigned whole). The shim's vectors assign through their components (their swizzles are
members of an inner union), which makes C++ delete the assignment of a union that holds one,
and of the struct around it. The struct gets its assignment back, written as the bytewise
copy a union's is: an unnamed struct is named first, so that the operator can name it; a
named union at namespace or class scope gets its own."""

from __future__ import annotations

from ..msl.lexer import Tok
from ..msl.tokens import match as _match
from ..msl.tokens import match_back as _match_back
from ..msl.tokens import next_sig as _sig
from ..msl.tokens import prev_sig as _prev_sig


def _copy(name: str) -> str:
    return (f" {name}& operator=(const {name}& __mslemu_o) {{ __builtin_memcpy((void*)this, (const void*)&__mslemu_o, "
            f"sizeof(*this)); return *this; }} ")


class UnionCopies:
    """Mixed into rewrite.Rewriter: uses its `toks`."""

    def pass_union_copies(self) -> None:
        toks = self.toks
        done: set[int] = set()  # the '{' of each class body given its assignment
        inserts: list[tuple[int, Tok]] = []
        count = 0
        for u, t in enumerate(toks):
            if t.kind != "id" or t.text != "union":
                continue
            nxt = _sig(toks, u + 1)
            if nxt < len(toks) and toks[nxt].kind == "id":  # a named union: its own assignment
                lb = _sig(toks, nxt + 1)
                if lb < len(toks) and toks[lb].text == "{" and lb not in done:
                    done.add(lb)
                    inserts.append((lb + 1, Tok("ws", _copy(toks[nxt].text), toks[lb].line, toks[lb].file)))
                continue
            if nxt >= len(toks) or toks[nxt].text != "{":
                continue
            body = self._enclosing_class(u)
            if body is None or body[0] in done:
                continue
            lb, kw = body
            done.add(lb)
            name_i = _sig(toks, kw + 1)
            if toks[name_i].text == "{":  # an unnamed struct: named here
                name = f"__mslemu_struct_{count}"
                count += 1
                inserts.append((kw + 1, Tok("id", f" {name}", toks[kw].line, toks[kw].file)))
            else:
                name = toks[name_i].text
            inserts.append((lb + 1, Tok("ws", _copy(name), toks[lb].line, toks[lb].file)))
        for at, tok in sorted(inserts, key=lambda x: x[0], reverse=True):
            toks[at:at] = [tok]

    def _enclosing_class(self, i: int) -> tuple[int, int] | None:
        """(its '{', its struct/class keyword) of the class body directly around token i, or None."""
        toks = self.toks
        k = i - 1
        while k >= 0:
            if toks[k].kind == "punct" and toks[k].text == "}":
                k = _match_back(toks, k) - 1
                continue
            if toks[k].kind == "punct" and toks[k].text == "{":
                break
            k -= 1
        if k < 0:
            return None
        # the head: `[typedef] struct|class [NAME] [: bases] {`
        h = _prev_sig(toks, k - 1)
        while h >= 0 and toks[h].text not in (";", "{", "}", "struct", "class"):
            h = _prev_sig(toks, h - 1)
        if h >= 0 and toks[h].text in ("struct", "class") and _match(toks, k) > i:
            return k, h
        return None
