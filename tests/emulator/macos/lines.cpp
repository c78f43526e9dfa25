// A translation unit with no system header, compiled for Linux and Darwin targets by
// tests/emulator/test_dwarf_lines.py to check the line-table reader on ELF and Mach-O.
int square(int x) {
  int y = x * x;     // line 4
  return y + 1;      // line 5
}

int twice(int x) {   // line 8
  return square(x) * 2;
}

extern "C" int entry(int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) s += twice(i);  // line 14
  return s;
}
