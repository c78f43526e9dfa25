"""Reading Metal Shading Language source: the tokenizer and the kernel-signature reader.

Every part of the project that looks at Metal source text (the emulator's rewriter, the
Metal backend, the excerpt renderer, ``gemmglossary run``) reads it through this package.
"""
