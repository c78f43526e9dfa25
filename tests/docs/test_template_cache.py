"""The theme's templates are compiled once per machine (docs_hooks/template_cache.py):
a second build's environment takes them from Jinja's bytecode cache, and an edited
template is compiled again."""

from __future__ import annotations

import jinja2
import pytest

from gemmglossary.docs_hooks import template_cache


@pytest.fixture
def compiles(monkeypatch):
    """The names of the templates Jinja compiled meanwhile."""
    names: list[str] = []
    original = jinja2.Environment.compile

    def compile(self, source, name=None, filename=None, raw=False, defer_init=False):
        names.append(name)
        return original(self, source, name, filename, raw, defer_init)

    monkeypatch.setattr(jinja2.Environment, "compile", compile)
    return names


def _environment(folder):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)), auto_reload=False)
    return template_cache.on_env(env, config=None, files=None)


def test_a_second_environment_compiles_nothing_and_an_edit_is_compiled_again(tmp_path, monkeypatch, compiles):
    monkeypatch.setenv("GEMMGLOSSARY_CACHE_DIR", str(tmp_path / "cache"))
    theme = tmp_path / "theme"
    theme.mkdir()
    (theme / "main.html").write_text("{% include 'part.html' %} of {{ site }}")
    (theme / "part.html").write_text("a part")

    assert _environment(theme).get_template("main.html").render(site="one") == "a part of one"
    assert sorted(compiles) == ["main.html", "part.html"]
    assert template_cache.folder().is_relative_to(tmp_path / "cache") and any(template_cache.folder().iterdir())

    compiles.clear()
    assert _environment(theme).get_template("main.html").render(site="two") == "a part of two"
    assert compiles == []  # both from the cache

    (theme / "part.html").write_text("an edited part")
    assert _environment(theme).get_template("main.html").render(site="three") == "an edited part of three"
    assert compiles == ["part.html"]


def test_the_cache_is_named_by_what_the_compiled_code_depends_on():
    name = template_cache.folder().name
    for package in template_cache.DEPENDS_ON:
        assert f"{package}-" in name
    assert name.startswith("py3.")
