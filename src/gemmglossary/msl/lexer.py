"""A small C++ tokenizer for Metal Shading Language sources: the project's only one.

It understands comments, string and character literals (including raw strings),
preprocessor lines with continuations, numbers, identifiers and punctuators. Every token
keeps its exact text, so joining the texts of all tokens reproduces the input; the
rewriter relies on that to keep line numbers unchanged.

Why not Pygments' ``CppLexer``, installed with the site? It reproduces every kernel,
vendored header and shim file too, but it splits a preprocessor directive into several
tokens and folds newlines into its other tokens, where the emulator's rewriter needs a
directive as one token and each newline as its own (to follow linemarkers); it took four
times as long on the same files (0.30 s against 0.07 s for 240 KB); and the emulator's
output would then depend on a documentation dependency's version, which the compile
cache's key does not cover.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PUNCT3 = {"<<=", ">>=", "...", "->*"}
PUNCT2 = {"::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=",
          "%=", "&=", "|=", "^=", ".*", "##"}
_NUM = re.compile(r"(?:\d|\.\d)(?:[eEpP][+-]|[0-9A-Za-z_.'])*")
_ID = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_WS = re.compile(r"[ \t\r\f\v]+")


@dataclass
class Tok:
    kind: str  # ws nl comment pp id num str chr punct
    text: str
    line: int = 0  # line in the original file (after linemarkers)
    file: str = ""

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Tok({self.kind},{self.text!r},{self.line})"


def tokenize(src: str) -> list[Tok]:
    toks: list[Tok] = []
    i, n = 0, len(src)
    at_line_start = True
    while i < n:
        c = src[i]
        if c == "\n":
            toks.append(Tok("nl", "\n"))
            i += 1
            at_line_start = True
            continue
        m = _WS.match(src, i)
        if m:
            toks.append(Tok("ws", m.group()))
            i = m.end()
            continue
        if c == "\\" and src.startswith("\\\n", i):
            toks.append(Tok("ws", "\\\n"))
            i += 2
            continue
        if c == "#" and at_line_start:
            j = i
            while j < n:
                if src[j] == "\\" and j + 1 < n and src[j + 1] == "\n":
                    j += 2
                    continue
                if src[j] == "\n":
                    break
                if src.startswith("/*", j):
                    k = src.find("*/", j + 2)
                    j = n if k < 0 else k + 2
                    continue
                j += 1
            toks.append(Tok("pp", src[i:j]))
            i = j
            continue
        at_line_start = False
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            toks.append(Tok("comment", src[i:j]))
            i = j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            toks.append(Tok("comment", src[i:j]))
            i = j
            continue
        m = _ID.match(src, i)
        if m:
            word = m.group()
            j = m.end()
            # string prefixes (u8"", L'', R"()")
            if j < n and src[j] in "\"'" and word in {"u8", "u", "U", "L", "R", "u8R", "uR", "UR", "LR"}:
                if "R" in word and src[j] == '"':
                    k = src.find("(", j)
                    delim = src[j + 1:k]
                    end = src.find(")" + delim + '"', k)
                    end = n if end < 0 else end + len(delim) + 2
                    toks.append(Tok("str", src[i:end]))
                    i = end
                    continue
                i = j  # fall through to the quoted literal below, prefix included
                q = src[j]
                k = _skip_quoted(src, j, q)
                toks.append(Tok("str" if q == '"' else "chr", word + src[j:k]))
                i = k
                continue
            toks.append(Tok("id", word))
            i = j
            continue
        m = _NUM.match(src, i)
        if m:
            toks.append(Tok("num", m.group()))
            i = m.end()
            continue
        if c in "\"'":
            k = _skip_quoted(src, i, c)
            toks.append(Tok("str" if c == '"' else "chr", src[i:k]))
            i = k
            continue
        for p in (src[i:i + 3], src[i:i + 2]):
            if p in PUNCT3 or p in PUNCT2:
                toks.append(Tok("punct", p))
                i += len(p)
                break
        else:
            toks.append(Tok("punct", c))
            i += 1
    return toks


def _skip_quoted(src: str, i: int, q: str) -> int:
    j = i + 1
    n = len(src)
    while j < n:
        if src[j] == "\\":
            j += 2
            continue
        if src[j] == q or src[j] == "\n":
            return j + 1
        j += 1
    return n


_MARKER = re.compile(r'#\s*(?:line\s+)?(\d+)\s+"((?:[^"\\]|\\.)*)"')


def assign_lines(toks: list[Tok], default_file: str) -> None:
    """Give every token the original file and line, following linemarkers."""
    file, line = default_file, 1
    for t in toks:
        if t.kind == "pp":
            m = _MARKER.match(t.text)
            if m:
                t.file, t.line = file, line
                file = m.group(2).encode().decode("unicode_escape")
                line = int(m.group(1)) - 1  # the newline after the marker brings it to N
                continue
        t.file, t.line = file, line
        line += t.text.count("\n")


def join(toks: list[Tok]) -> str:
    return "".join(t.text for t in toks)
