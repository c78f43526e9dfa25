"""Build the site with Zensical: ``gemmglossary zensical [--site-dir DIR]``.

Zensical reads mkdocs.yml and runs its Markdown extensions, so the kernel excerpts (the
``gemmglossary.docs_hooks.excerpts`` extension) and facts are checked and expanded
exactly as under MkDocs. It has no plugin API, though: MkDocs hooks and plugins it does
not reimplement are ignored without a word, and it publishes only what is in docs_dir.
Run on mkdocs.yml as it is, ``zensical build`` would therefore show no snippet page
(mkdocs-jupyter), and the first-party kernels that the source links point at would be
missing. This step gives Zensical a complete site instead, in a staging folder
``.cache/zensical/`` (git-ignored):

- ``docs/``: a copy of docs/ (pages keep their paths, so the excerpt lock's page keys
  and the pages' line numbers are the same), where links to a snippet (``x.py``) point
  at its page (``x.md``);
- ``docs/snippets/<name>.md``: each snippet's executed notebook (:mod:`.snippet_pages`:
  the same one the MkDocs build renders, executed once and cached by its inputs) written
  as Markdown, with the snippet itself next to it for download;
- ``docs/kernels/…``: every first-party kernel a page quotes, where the source links
  point (the MkDocs hook publishes the same files);
- ``mkdocs.yml``: the repository's, with the MkDocs-only hooks and plugins left out and
  the snippet entries of the nav pointing at the rendered pages.

Then ``zensical build --clean`` runs there (clean: Zensical caches rendered pages, and a
change to the tooling itself is not among the files it watches), into ``site/`` of the
staging folder (Zensical requires docs_dir and site_dir inside the folder of its
config), which is then moved to the site folder asked for.
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .. import vendor
from ..optional import require
from ..cli import run_command, subparser
from ..excerpts.blocks import find_blocks
from ..excerpts.check import VENDOR_PREFIX, read_pages
from ..paths import project_root

STAGING = Path(".cache") / "zensical"
#: Plugins that only MkDocs runs here (Zensical would drop them silently).
MKDOCS_ONLY_PLUGINS = {"mkdocs-jupyter"}
_LINK = re.compile(r"\]\((?P<target>[^)\s#]+\.py)(?P<anchor>#[^)\s]*)?\)")


class StageError(RuntimeError):
    """The site cannot be staged for Zensical."""


def snippet_links_to_pages(text: str, page: str, snippets: set[str]) -> str:
    """Links from ``page`` to a snippet's source (``snippets/x.py``) made links to its page.

    Under MkDocs the page of ``snippets/x.py`` *is* that path (mkdocs-jupyter); the
    staged site has the page as ``snippets/x.md`` and the source as a download."""
    def to_page(m: re.Match) -> str:
        target = posixpath.normpath(posixpath.join(posixpath.dirname(page), m["target"]))
        if target not in snippets:
            return m.group(0)
        return f"]({m['target'][:-3]}.md{m['anchor'] or ''})"
    return _LINK.sub(to_page, text)


def _nav(entries, snippets: set[str]):
    if isinstance(entries, list):
        return [_nav(e, snippets) for e in entries]
    if isinstance(entries, dict):
        return {k: _nav(v, snippets) for k, v in entries.items()}
    if isinstance(entries, str) and entries in snippets:
        return entries[:-3] + ".md"
    return entries


def _staged(entry):
    """A markdown_extensions entry, with the engine check told the site is complete."""
    from .engine_check import NAME as ENGINE_CHECK  # (it imports markdown, which only the site has)

    if entry == ENGINE_CHECK or (isinstance(entry, dict) and ENGINE_CHECK in entry):
        return {ENGINE_CHECK: {"staged": True}}
    return entry


def staged_config(config: dict, snippets: set[str]) -> dict:
    """The repository's mkdocs.yml as Zensical gets it in the staging folder."""
    out = {k: v for k, v in config.items() if k not in ("hooks", "watch", "docs_dir", "site_dir")}
    plugins = []
    for entry in config.get("plugins", []):
        name = entry if isinstance(entry, str) else next(iter(entry))
        if name not in MKDOCS_ONLY_PLUGINS:
            plugins.append(entry)
    out["plugins"] = plugins
    out["nav"] = _nav(config.get("nav", []), snippets)
    out["markdown_extensions"] = [_staged(e) for e in config.get("markdown_extensions", [])]
    out["docs_dir"] = "docs"
    out["site_dir"] = "site"
    return out


def stage(*, log=print) -> Path:
    """Write the staging folder of the project (:func:`gemmglossary.paths.project_root`);
    return its mkdocs.yml."""
    # (the snippets' modules import mkdocs and the notebook tools: the site's, not the command's)
    require("mkdocs", "gemmglossary zensical (the snippet pages)")
    from .snippet_pages import ensure_all_executed, markdown_page, notebook_path, prune
    from .snippets import SNIPPETS_DIR, cache_key, snippet_paths

    root = project_root()
    vendor.ensure()
    yaml = require("yaml", "gemmglossary zensical (reading mkdocs.yml)")
    config = yaml.safe_load((root / "mkdocs.yml").read_text(encoding="utf-8"))
    docs = root / config.get("docs_dir", "docs")
    staging = root / STAGING
    target = staging / "docs"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(docs, target, ignore=shutil.ignore_patterns(".*"))
    snippets = {f"{SNIPPETS_DIR}/{p.name}": p for p in snippet_paths(root)}
    pages, unreadable = read_pages(docs)
    if unreadable:
        raise StageError("\n".join(str(q) for q in unreadable))
    quoted = set()
    for page, text in pages.items():
        staged = snippet_links_to_pages(text, page, set(snippets))
        if staged != text:
            (target / page).write_text(staged, encoding="utf-8")
        quoted |= {b.file for b in find_blocks(text)
                   if b.file and b.error is None and not b.file.startswith(VENDOR_PREFIX)}
    for file in sorted(quoted):
        source = root / file
        if source.is_file():  # a missing one is the excerpt check's to report, with its page
            (target / file).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target / file)
    notebooks = {uri: (path, notebook_path(path, cache_key(path, root), root)) for uri, path in snippets.items()}
    ran = set(ensure_all_executed(notebooks.values(), root))
    for uri, (path, notebook) in notebooks.items():
        if path in ran:
            log(f"executed {uri}")
        (target / uri).parent.mkdir(parents=True, exist_ok=True)
        (target / uri).with_suffix(".md").write_text(markdown_page(notebook, path.stem), encoding="utf-8")
        shutil.copyfile(path, target / uri)
        prune(path, notebook)
    log(f"{len(snippets)} snippet pages: {len(ran)} executed now, "
        f"{len(snippets) - len(ran)} unchanged since they last ran")
    config_file = staging / "mkdocs.yml"
    yaml = require("yaml", "gemmglossary zensical (writing its mkdocs.yml)")
    config_file.write_text(yaml.safe_dump(staged_config(config, set(snippets)),
                                          sort_keys=False, allow_unicode=True), encoding="utf-8")
    return config_file


def zensical_command() -> list[str]:
    exe = Path(sys.executable).with_name("zensical")
    if not exe.is_file():
        raise StageError("zensical is not installed: `pip install -e '.[test]'` installs the pinned version")
    return [str(exe)]


def build(site_dir: Path, *, strict: bool = True, log=print, capture: bool = True) -> subprocess.CompletedProcess:
    """Stage, then ``zensical build --clean [--strict]`` (its output captured, or shown);
    the site goes to ``site_dir`` when the build succeeds."""
    command = zensical_command()
    config_file = stage(log=log)
    command += ["build", "--clean", "-f", str(config_file)] + (["--strict"] if strict else [])
    run = subprocess.run(command, cwd=config_file.parent, capture_output=capture, text=True,
                         env={**os.environ, "GEMMGLOSSARY_ROOT": str(project_root())})
    if run.returncode == 0:
        if site_dir.exists():
            shutil.rmtree(site_dir)
        site_dir.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(config_file.parent / "site", site_dir)
    return run


def register(subparsers) -> None:
    p = subparser(subparsers, "zensical", help="build the site with Zensical instead of MkDocs",
                  description="Build the site with Zensical (Material for MkDocs' successor). Zensical runs\n"
                  "the excerpt and facts extensions like MkDocs, but no MkDocs hook or plugin: this\n"
                  "command stages the site in .cache/zensical/ (every snippet executed and rendered\n"
                  "by the project, cached by its inputs; the quoted kernels published), then runs\n"
                  "`zensical build --clean --strict` there. A drifted excerpt fails the build.",
                  epilog="exit status: 0 built; 1 a page's problem (a drifted excerpt, a tag that cannot be\n"
                         "computed: its message first, naming the page line; Zensical's full output goes to\n"
                         ".cache/zensical/zensical.log), a snippet that fails, or Zensical's own warnings;\n"
                         "130 interrupted (Ctrl-C), with no site written.")
    p.add_argument("--site-dir", type=Path, default=None, help="where the site goes (default: site-zensical/)")
    p.add_argument("--no-strict", dest="strict", action="store_false", help="do not abort on Zensical's warnings")
    p.set_defaults(func=_run)


#: How Zensical reports an exception of a Markdown extension: its own traceback, then
#: "RuntimeError: Python error: <class>: <message>", then the extension's traceback.
_PYTHON_ERROR = re.compile(r"^RuntimeError: Python error: (?P<cls>[A-Za-z_]\w*): (?P<message>.*)$")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _page_error_classes() -> set[str]:
    """The exceptions that are a page's own mistake (a tag, an excerpt): shown as their message."""
    from . import facts, figures  # noqa: F401 - their PageError classes
    from .excerpts import ExcerptError
    from .page_errors import PageError

    names, todo = {ExcerptError.__name__}, [PageError]
    while todo:
        cls = todo.pop()
        names.add(cls.__name__)
        todo += cls.__subclasses__()
    return names


def page_error(output: str) -> str | None:
    """The message of a page's mistake that stopped a Zensical build, from its output (None:
    the build failed otherwise, e.g. a fault of our code, whose traceback is the report)."""
    lines = _ANSI.sub("", output).splitlines()
    for i, line in enumerate(lines):
        m = _PYTHON_ERROR.match(line)
        if m and m["cls"] in _page_error_classes():
            rest = []
            for more in lines[i + 1:]:
                if more.startswith("Traceback (most recent call last)"):
                    break
                rest.append(more)
            return "\n".join([m["message"], *rest]).rstrip()
    return None


def _run(args) -> int:
    from .snippet_pages import SnippetError

    site_dir = (args.site_dir or project_root() / "site-zensical").resolve()
    try:
        run = build(site_dir, strict=args.strict)
    except (StageError, SnippetError, vendor.VendorError) as exc:
        print(f"gemmglossary zensical: {exc}")
        return 1
    except KeyboardInterrupt:  # Zensical was interrupted too (one process group): no site
        print("gemmglossary zensical: interrupted; no site was written", file=sys.stderr)
        return 130
    output = (run.stdout or "") + (run.stderr or "")
    if run.returncode == 0:
        sys.stdout.write(output)
        print(f"site built with Zensical in {site_dir}")
        return 0
    log = project_root() / STAGING / "zensical.log"
    log.write_text(output, encoding="utf-8")
    error = page_error(output)
    if error is None:  # not a page's mistake: everything Zensical said, traceback and all
        sys.stdout.write(output)
        print(f"gemmglossary zensical: the build failed (Zensical's output is also in {log})")
    else:  # a page's mistake: the message, not what followed from the page being left out
        print(f"gemmglossary zensical: {error}")
        print(f"(Zensical's full output, with the warnings about the page it left out: {log})")
    return 1


def main(argv: list[str] | None = None) -> int:
    """``gemmglossary zensical ARGV...``."""
    return run_command("zensical", argv)
