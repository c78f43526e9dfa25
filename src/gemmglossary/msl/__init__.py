"""Reading Metal Shading Language source, once for the whole project.

- :mod:`.lexer`: the tokenizer (every token keeps its text, so the tokens join back
  into the file); :mod:`.tokens`: walking a token list (brackets, attributes);
- :mod:`.signature`: which kernels a source declares and their parameters;
- :mod:`.declarations`: ``-D`` defaults, ``constexpr`` constants, struct layouts;
- :mod:`.expressions`: the integer arithmetic those are written in;
- :mod:`.includes`: what a file includes (asked of the preprocessor), and inlining
  quoted includes for Metal's runtime compiler.

The emulator's rewriter, the Metal backend, the excerpt renderer, the kernel table
(:mod:`gemmglossary.kernels`) and ``gemmglossary run`` read Metal source through it.
"""
