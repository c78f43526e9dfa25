"""Refuse a Zensical build that would silently lose the snippet pages (a Markdown extension).

Zensical reads mkdocs.yml but runs none of its MkDocs plugins and hooks: a plain
``zensical build`` of the repository leaves out every snippet page (mkdocs-jupyter) and
the quoted kernels the source links point at (the excerpts hook publishes them), and says
"No issues found". The complete Zensical build is ``gemmglossary zensical``
(:mod:`.zensical_site`), which stages the site and passes ``staged: true`` to this
extension. Any other Zensical build stops at its first page, saying what to run instead.

Under MkDocs, and for a bare ``markdown.markdown()`` call, this extension does nothing.
"""

from __future__ import annotations

from markdown import Extension
from markdown.preprocessors import Preprocessor

from .page import current_page

NAME = "gemmglossary.docs_hooks.engine_check"


class IncompleteBuildError(RuntimeError):
    """A Zensical build that would leave out what only MkDocs' plugins and hooks make."""


class EngineCheck(Preprocessor):
    def __init__(self, md, staged: bool):
        super().__init__(md)
        self.staged = staged

    def run(self, lines: list[str]) -> list[str]:
        page = current_page(self.md)
        if page is not None and page.engine == "zensical" and not self.staged:
            raise IncompleteBuildError(
                f"docs/{page.src_uri}: Zensical does not run this site's MkDocs plugins and hooks, so "
                "this build would have no snippet pages and no quoted kernels behind the source "
                "links; build with `gemmglossary zensical` (or `mkdocs build`)")
        return lines


class EngineCheckExtension(Extension):
    def __init__(self, **kwargs):
        self.config = {"staged": [False, "set by `gemmglossary zensical` on the site it staged"]}
        super().__init__(**kwargs)

    def extendMarkdown(self, md):
        # First of the project's preprocessors (facts are 40), so nothing is computed in vain.
        md.preprocessors.register(EngineCheck(md, bool(self.getConfig("staged"))), "gemmglossary_engine_check", 45)


def makeExtension(**kwargs):
    return EngineCheckExtension(**kwargs)
