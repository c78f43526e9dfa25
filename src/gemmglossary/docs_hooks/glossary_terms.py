"""The glossary's terms: what each page's front matter declares under ``terms:``.

An entry lists the lower-case phrases, plural forms included, whose first mention on any
other page must link to it (:mod:`.term_links` checks that)::

    ---
    terms: [split-k]
    ---

The terms are read from the page files of docs_dir, not from the engine, so MkDocs and
Zensical see the same index; it is read again whenever a page file changes (``mkdocs
serve``). A phrase claimed by two pages, or terms that are not a list of lower-case
phrases, stop the build naming the files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .page import PageRef

try:
    from mkdocs.exceptions import PluginError as _BuildError
except ImportError:  # pragma: no cover - mkdocs is a dependency of the package
    _BuildError = RuntimeError  # type: ignore[misc,assignment]

FRONT_MATTER = re.compile(r"\A---[ \t]*\n(?P<body>.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
KEY = "terms"


class TermsError(_BuildError):
    """The terms of the glossary cannot be read: the message names the files."""


def normalize(text: str) -> str:
    """A mention as the index keys it: lower case, one space between words."""
    return " ".join(text.lower().split())


@dataclass(frozen=True)
class TermIndex:
    terms: dict[str, str]  # phrase (normalized) -> its entry's page, relative to docs_dir
    pattern: re.Pattern = field(compare=False)

    @property
    def entries(self) -> frozenset[str]:
        return frozenset(self.terms.values())

    def entry_of(self, text: str) -> str | None:
        return self.terms.get(normalize(text))


def front_matter(text: str, label: str) -> dict:
    """The YAML front matter of a page's text ({} without one)."""
    m = FRONT_MATTER.match(text)
    if not m:
        return {}
    try:
        data = yaml.safe_load(m["body"] or "") or {}
    except yaml.YAMLError as exc:
        raise TermsError(f"{label}: front matter is not YAML: {exc}") from None
    if not isinstance(data, dict):
        raise TermsError(f"{label}: front matter is not a mapping of keys to values")
    return data


def page_terms(text: str, label: str) -> list[str]:
    """The phrases a page declares under ``terms:``, checked."""
    terms = front_matter(text, label).get(KEY)
    if terms is None:
        return []
    if not isinstance(terms, list) or not terms:
        raise TermsError(f"{label}: {KEY}: must be a list of phrases, e.g. {KEY}: [split-k]; got {terms!r}")
    out = []
    for term in terms:
        if not isinstance(term, str) or not re.search(r"\w", term):
            raise TermsError(f"{label}: {KEY}: {term!r} is not a phrase")
        if term != normalize(term):
            raise TermsError(f"{label}: {KEY}: {term!r} must be lower case with single spaces "
                             f"({normalize(term)!r}): mentions are matched in any case")
        out.append(term)
    return out


def build_index(declared: dict[str, list[str]]) -> TermIndex:
    """The index of ``{page: its terms}`` (pages relative to docs_dir, labelled docs/<page>)."""
    terms: dict[str, str] = {}
    clashes = []
    for page, phrases in sorted(declared.items()):
        for phrase in phrases:
            if phrase in terms and terms[phrase] != page:
                clashes.append(f"{phrase!r} is a term of docs/{terms[phrase]} and of docs/{page}")
            terms.setdefault(phrase, page)
    if clashes:
        raise TermsError("a term must lead to one entry:\n" + "\n".join(f"  {c}" for c in clashes))
    # Longest first, so that the longer of two terms starting at one place is the mention.
    words = sorted(terms, key=lambda t: (-len(t), t))
    alternatives = "|".join(r"\s+".join(re.escape(w) for w in t.split()) for t in words) or r"(?!)"
    return TermIndex(terms, re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])", re.IGNORECASE))


_cache: dict[Path, tuple[tuple, TermIndex]] = {}


def load_index(docs_dir: Path) -> TermIndex:
    """The index of every page under ``docs_dir`` (read again when a page file changes)."""
    files = sorted(p for p in docs_dir.rglob("*.md") if not any(part.startswith(".") for part in
                                                                 p.relative_to(docs_dir).parts))
    stamp = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files)
    cached = _cache.get(docs_dir)
    if cached and cached[0] == stamp:
        return cached[1]
    declared = {}
    for path in files:
        page = path.relative_to(docs_dir).as_posix()
        found = page_terms(path.read_text(encoding="utf-8"), f"docs/{page}")
        if found:
            declared[page] = found
    index = build_index(declared)
    _cache[docs_dir] = (stamp, index)
    return index


def docs_dir_of(page: PageRef) -> Path:
    """The docs_dir holding ``page`` (its file, less its path relative to docs_dir)."""
    return Path(page.path).parents[len(page.src_uri.split("/")) - 1]


def is_snippet_page(page: PageRef) -> bool:
    """A page generated from ``snippets/<name>.py``: the notebook MkDocs renders, or the
    Markdown page the Zensical staging writes next to the snippet."""
    if page.src_uri.endswith(".py"):
        return True
    return page.path is not None and Path(page.path).with_suffix(".py").is_file()
