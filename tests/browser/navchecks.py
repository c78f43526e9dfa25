"""The sidebar as a learning path (issue #33, item 5), read as a browser shows it.

- NAV_JS walks Material's primary sidebar in order: each item's title, its link (none for
  a section without a page) and its depth, without the page's own table of contents that
  Material nests under the current page.
- CONTENT_LINKS_JS lists the links of a page's content, in order (not the sidebar's).

sidebar_problems: each title once, each page once, and the glossary entries and case
studies in the order in which the glossary's index first links them. reach_problems: a
page left out of the sidebar (an exercise, a snippet) is linked from its index page and
from at least one glossary entry or case study. Both return problems instead of asserting.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

NAV_JS = """() => {
  const out = [];
  const walk = (ul, depth) => {
    for (const li of ul.children) {
      if (!li.matches('li.md-nav__item')) continue;
      const head = li.querySelector(':scope > a.md-nav__link, :scope > label.md-nav__link, :scope > div.md-nav__link');
      const title = head ? head.querySelector('.md-ellipsis') : null;
      const link = li.querySelector(':scope > a.md-nav__link[href], :scope > div.md-nav__link > a.md-nav__link[href]');
      out.push({title: title ? title.textContent.trim() : '', href: link ? link.href : null, depth});
      const nested = li.querySelector(':scope > nav.md-nav:not(.md-nav--secondary) > ul.md-nav__list');
      if (nested) walk(nested, depth + 1);
    }
  };
  const root = document.querySelector('nav.md-nav--primary > ul.md-nav__list');
  if (root) walk(root, 0);
  return out;
}"""

CONTENT_LINKS_JS = """() => Array.from(document.querySelectorAll('.md-content a[href]'))
    .filter(a => !a.classList.contains('md-annotation__index') && !a.classList.contains('headerlink'))
    .map(a => a.href)"""


def page_of(url: str) -> str:
    """``url`` without its fragment and query: the page it leads to."""
    return urlunsplit(urlsplit(url)._replace(fragment="", query=""))


def first_links(links: list[str]) -> list[str]:
    """The pages ``links`` lead to, each once, in the order of its first link."""
    return list(dict.fromkeys(page_of(u) for u in links))


def sidebar_problems(items: list[dict], index_links: list[str], is_path_page) -> list[str]:
    """``items`` (NAV_JS) against the order of the glossary's index: ``index_links`` are the
    links of the index's content (CONTENT_LINKS_JS); ``is_path_page(url)`` says which pages
    the order binds (the glossary entries and the case studies)."""
    problems = []
    if not items:
        return ["the sidebar has no items"]
    titles = [i["title"] for i in items]
    for title in sorted({t for t in titles if titles.count(t) > 1}):
        problems.append(f"sidebar: {title!r} is listed {titles.count(title)} times")
    pages = [page_of(i["href"]) for i in items if i["href"]]
    for page in sorted({p for p in pages if pages.count(p) > 1}):
        problems.append(f"sidebar: {page} is listed {pages.count(page)} times")
    path = [p for p in dict.fromkeys(pages) if is_path_page(p)]
    order = [p for p in first_links(index_links) if is_path_page(p)]
    missing = [p for p in path if p not in order]
    if missing:
        problems.append(f"sidebar: the glossary's index links no {missing}, so it gives them no place in the order")
    unlisted = [p for p in order if p not in path]
    if unlisted:
        problems.append(f"sidebar: the glossary's index links {unlisted}, which the sidebar does not list")
    shared = [p for p in path if p in order]
    if shared != [p for p in order if p in path]:
        problems.append("sidebar: the entries and case studies are not in the order of the glossary's index:\n"
                        f"  sidebar: {[urlsplit(p).path for p in shared]}\n"
                        f"  index:   {[urlsplit(p).path for p in order if p in path]}")
    return problems


def reach_problems(pages: list[str], sidebar: list[dict], links: dict[str, list[str]], index: str,
                   is_entry) -> list[str]:
    """Each of ``pages`` is left out of the sidebar, and linked from the ``index`` page and
    from a page ``is_entry`` accepts; ``links``: the content links of every page."""
    problems = []
    listed = {page_of(i["href"]) for i in sidebar if i["href"]}
    if not pages:
        return [f"no pages to look for (index {index})"]
    for page in pages:
        if page in listed:
            problems.append(f"{page}: listed in the sidebar")
        if page not in {page_of(u) for u in links.get(index, [])}:
            problems.append(f"{page}: not linked from its index {index}")
        if not [src for src, out in links.items() if is_entry(src) and page in {page_of(u) for u in out}]:
            problems.append(f"{page}: no glossary entry or case study links it")
    return problems
