"""Exercises: the learner writes the kernel, the checker runs it and explains what is wrong.

One folder per exercise under ``exercises/`` holds everything about it as data (see
:mod:`.spec` and ``exercises/README.md``); nothing here is specific to any exercise.

- :mod:`.spec` reads ``exercise.toml``; :mod:`.expressions` evaluates its expressions;
- :mod:`.launch` binds buffers and dispatches one case (``gg.load_kernel`` for kernel
  files, ``gg.metal_kernel`` for ``mx.fast.metal_kernel`` bodies);
- :mod:`.compare` finds wrong elements and the threadgroups that computed them;
- :mod:`.facts` reads an emulator diagnostic into lines, threads and elements;
  :mod:`.structure` finds the loops of the learner's source; :mod:`.hints` turns both
  into a problem and a hint;
- :mod:`.checker` runs every variant and case and stops at the first problem;
- :mod:`.workspace` keeps the learner's copies and results outside the repository;
- :mod:`.cli` is ``gemmglossary exercise``; :mod:`.pytest_plugin` is ``pytest exercises/NAME``.
"""

from .checker import CheckError, Report, check
from .spec import Exercise, SpecError, all_exercises, find

__all__ = ["CheckError", "Exercise", "Report", "SpecError", "all_exercises", "check", "find"]
