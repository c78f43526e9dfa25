"""Record the files a snippet reads, from inside the notebook kernel that executes it.

Not a test module: test_snippet_runs.py has the kernel run this file before the snippet's
first cell (IPython's ``exec_files``), with ``GEMMGLOSSARY_RECORD_INPUTS`` naming the JSON
file to write when the kernel exits: the files the snippet opened, the files it handed to
a subprocess (the compiler), and the package's modules it imported. That is checked
against the inputs the docs hook derives for the snippet
(gemmglossary.docs_hooks.snippet_inputs).

It runs in the snippet's own namespace, so it leaves no name there: everything it needs
is imported and defined inside the one function it deletes after calling (a snippet that
forgot an import must fail here as it fails for a reader).
"""


def _record_inputs() -> None:
    import atexit
    import json
    import os
    import sys

    out = os.environ["GEMMGLOSSARY_RECORD_INPUTS"]
    opened: set[str] = set()
    launched: set[str] = set()

    def record(event: str, args) -> None:
        if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            path = os.path.abspath(os.fsdecode(args[0]))
            # (bytecode is the import system's cache of a module whose source `modules`
            # names: some Pythons report reading it, Debian's 3.11.2 among them)
            if not path.endswith(".pyc"):
                opened.add(path)
        elif event == "subprocess.Popen":
            launched.update(os.path.abspath(str(a)) for a in (args[1] or ()) if os.path.exists(str(a)))

    def write() -> None:
        modules = sorted(os.path.abspath(m.__file__) for name, m in list(sys.modules.items())
                         if name.split(".")[0] == "gemmglossary" and getattr(m, "__file__", None))
        with open(out, "w") as f:
            json.dump({"opened": sorted(opened), "launched": sorted(launched), "modules": modules}, f)

    sys.addaudithook(record)
    atexit.register(write)


_record_inputs()
del _record_inputs
