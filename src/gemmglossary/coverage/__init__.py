"""Line coverage of the kernel code the pages quote, measured on the emulator with gcc's
``--coverage`` and gcov (``mode``: the build flags; ``collect``: the coverage run and its
report; ``gcov``: reading the counters; ``excerpts`` and ``exemptions``: per excerpt;
``site``: what the pages show; ``cli``: ``gemmglossary coverage``). docs/emulator.md,
"Line coverage", says what is and is not measured."""
