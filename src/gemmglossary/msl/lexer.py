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
# One pattern for every token but a directive and a prefixed literal, its alternatives in the
# order they are tried: a match per token, not a test per kind (every rewrite tokenizes its
# preprocessed source, 215 KB for an MLX file: this took two thirds of the time a loop over
# the characters did). A quoted literal ends at its quote, at a newline (which it keeps) or
# at the end of the text.
_TOKEN = re.compile(r"""
 (?P<nl>\n)
|(?P<ws>[ \t\r\f\v]+|\\\n)
|(?P<comment>//[^\n]*|/\*[\s\S]*?(?:\*/|\Z))
|(?P<id>[A-Za-z_][A-Za-z_0-9]*)
|(?P<num>(?:\d|\.\d)(?:[eEpP][+-]|[0-9A-Za-z_.'])*)
|(?P<str>"(?:\\[\s\S]?|[^"\\\n])*["\n]?)
|(?P<chr>'(?:\\[\s\S]?|[^'\\\n])*['\n]?)
|(?P<punct>""" + "|".join(re.escape(p) for p in sorted(PUNCT3) + sorted(PUNCT2)) + r"""|[\s\S])
""", re.VERBOSE)
# a directive, from a `#` first on its line (after blanks) to the newline that is not
# escaped; a block comment in it may span lines
_DIRECTIVE = re.compile(r"\#(?:\\\n|/\*[\s\S]*?(?:\*/|\Z)|[^\n])*")
_PREFIXES = {"u8", "u", "U", "L", "R", "u8R", "uR", "UR", "LR"}  # of u8"", L'', R"()"


@dataclass(slots=True)  # a third less time to make: a 215 KB source is some 80,000 tokens
class Tok:
    kind: str  # ws nl comment pp id num str chr punct
    text: str
    line: int = 0  # line in the original file (after linemarkers)
    file: str = ""

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Tok({self.kind},{self.text!r},{self.line})"


def tokenize(src: str) -> list[Tok]:
    toks: list[Tok] = []
    append = toks.append
    n = len(src)
    at_line_start = True  # only blanks since the last newline: a `#` starts a directive
    pos = 0
    while pos < n:
        for m in _TOKEN.finditer(src, pos):
            kind = m.lastgroup
            text = m.group()
            if kind == "nl":
                at_line_start = True
            elif kind == "ws":
                pass
            elif at_line_start and text[0] == "#":
                pos = _DIRECTIVE.match(src, m.start()).end()
                append(Tok("pp", src[m.start():pos]))
                break  # go on after the directive
            else:
                at_line_start = False
                if kind == "id" and text in _PREFIXES and m.end() < n and src[m.end()] in "\"'":
                    pos = _prefixed_literal(src, m.start(), m.end())
                    append(Tok("chr" if src[m.end()] == "'" else "str", src[m.start():pos]))
                    break  # go on after the literal
            append(Tok(kind, text))
        else:
            break  # the text is all tokens
    return toks


def _prefixed_literal(src: str, i: int, j: int) -> int:
    """The end of the literal whose prefix is src[i:j] (u8, L, R...) and quote src[j]."""
    n = len(src)
    if "R" in src[i:j] and src[j] == '"':
        k = src.find("(", j)
        delim = src[j + 1:k]
        end = src.find(")" + delim + '"', k)
        return n if end < 0 else end + len(delim) + 2
    return _skip_quoted(src, j, src[j])


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
