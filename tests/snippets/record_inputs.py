"""Run a snippet as a script and record the files it reads: ``python record_inputs.py SNIPPET OUT``.

Not a test module: tests/snippets/test_snippets.py runs it to check the inputs the docs
hook derives for a snippet (gemmglossary.docs_hooks.snippet_inputs) against what the
snippet really opens, hands to a subprocess (the compiler) and imports.
"""

from __future__ import annotations

import json
import os
import runpy
import sys

snippet, out = sys.argv[1], sys.argv[2]
opened: set[str] = set()
launched: set[str] = set()


def record(event: str, args) -> None:
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        opened.add(os.path.abspath(os.fsdecode(args[0])))
    elif event == "subprocess.Popen":
        launched.update(os.path.abspath(str(a)) for a in (args[1] or ()) if os.path.exists(str(a)))


sys.addaudithook(record)
sys.argv = [snippet]
try:
    runpy.run_path(snippet, run_name="__main__")
finally:
    modules = sorted(os.path.abspath(m.__file__) for name, m in list(sys.modules.items())
                     if name.split(".")[0] == "gemmglossary" and getattr(m, "__file__", None))
    with open(out, "w") as f:
        json.dump({"opened": sorted(opened), "launched": sorted(launched), "modules": modules}, f)
