"""The prose words of a built page (gemmglossary.docs_hooks.prose_words): what is counted
and what is not, on HTML shaped as MkDocs with Material writes it, and on the real site."""

from __future__ import annotations

import re

import pytest

from gemmglossary.docs_hooks.prose_words import ProseError, prose_passages, prose_words


def page(body: str) -> str:
    return ('<html><body><nav class="md-nav">Home Glossary Barriers</nav><div class="md-content">'
            f'<article class="md-content__inner md-typeset">{body}</article></div>'
            '<footer>Made with Material</footer></body></html>')


PROSE = "<p>A barrier holds <em>every</em> thread of a <code>threadgroup</code> until all arrive.</p>"


def test_paragraphs_count_their_words_and_inline_code_is_a_word():
    assert prose_passages(page(PROSE)) == ["A barrier holds every thread of a threadgroup until all arrive."]
    assert prose_words(page(PROSE)) == 11


@pytest.mark.parametrize("name, html", [
    ("heading", '<h2 id="x">Why two barriers<a class="headerlink" href="#x">&para;</a></h2>'),
    ("code block", '<div class="language-metal highlight"><span class="filename">kernels/k.metal · lines 1–2</span>'
                   '<pre><span></span><code><span id="__span-0-1">threadgroup_barrier(mem_flags::mem_threadgroup);'
                   '</span></code></pre></div>'),
    ("excerpt source line", '<p>Source: <a class="excerpt-source" href="k.metal">kernels/k.metal, lines 1–2</a> · '
                            '<a class="excerpt-coverage" href="e/">2 of 2 lines executed</a></p>'),
    ("table", "<table><thead><tr><th>Kernel</th></tr></thead><tbody><tr><td>two barriers per step</td></tr></tbody>"
              "</table>"),
    ("figure and caption", '<figure class="gg-figure"><svg><text>tile 0</text></svg><figcaption>The rhythm, '
                           '<span class="gg-source">computed from a run</span></figcaption></figure>'),
    ("folded note", '<details class="note"><summary>How this was computed</summary><p>With trace=True.</p>'
                    "</details>"),
    ("admonition title", '<div class="admonition warning"><p class="admonition-title">Bigger is not faster</p></div>'),
    ("tab labels", '<div class="tabbed-set"><div class="tabbed-labels"><label>CUDA</label></div></div>'),
    ("image", '<p><img alt="a figure about barriers" src="x.png"></p>'),
])
def test_what_is_not_prose(name, html):
    assert prose_words(page(PROSE + html)) == 11, prose_passages(page(PROSE + html))


@pytest.mark.parametrize("html, words", [
    ("<ul><li>one barrier</li><li>two barriers</li></ul>", 4),
    ('<div class="admonition note"><p class="admonition-title">Note</p><p>Three words here.</p></div>', 3),
    ("<blockquote><p>quoted words</p></blockquote>", 2),
    ('<div class="highlight"><pre><code>x</code></pre></div><ol><li><p>An annotation opens here.</p></li></ol>', 4),
    ("<p>α · β — 1.5 and C++</p>", 5),
])
def test_what_is_prose(html, words):
    assert prose_words(page(html)) == words, prose_passages(page(html))


def test_a_skipped_element_still_separates_words():
    assert prose_passages(page("<p>before<code>x</code>after</p>")) == ["beforexafter"]
    assert prose_passages(page("<p>before<sup><img src=x></sup>after <span class='filename'>f</span>end</p>")) == \
        ["beforeafter end"]


def test_a_page_without_the_content_article_is_refused():
    with pytest.raises(ProseError, match="md-content__inner"):
        prose_words("<html><body><p>Just text.</p></body></html>")


def test_every_entry_of_the_built_site_has_its_prose_counted(mkdocs_site):
    """On the real build: each glossary entry has prose, and fewer words of it than the
    text of its article (the code, tables, captions and headings are left out)."""
    assert mkdocs_site.run.returncode == 0, mkdocs_site.log
    pages = sorted(p for p in (mkdocs_site.site / "glossary").glob("*/index.html"))
    assert len(pages) >= 14
    for path in pages:
        html = path.read_text(encoding="utf-8")
        article = re.search(r'<article class="md-content__inner.*?</article>', html, re.S).group(0)
        everything = len(re.sub(r"<[^>]+>", " ", article).split())
        words = prose_words(html)
        assert 200 < words < everything, (path.parent.name, words, everything)
