"""Source lines of code addresses from the compiler's own debug info, without addr2line.

macOS ships no addr2line. This module reads the DWARF line table (versions 2 to 5) of a
compiled kernel itself: from an ELF shared object (Linux), or from the Mach-O file of the
``.dSYM`` bundle that clang's driver writes next to a shared object it links from source
with ``-g`` (macOS). The line table maps each instruction to the innermost source line
the compiler kept for it; with clang, the shim's helpers carry no debug info of their own
(``nodebug``), so that line is the kernel's (see mslemu.h). g++ keeps the helpers' lines
and needs the inline chain, which addr2line reads; on Linux it stays the symbolizer.
"""

from __future__ import annotations

import bisect
import struct
import zlib
from pathlib import Path

ELF_MAGIC = b"\x7fELF"
MACHO_MAGIC_64 = 0xFEEDFACF
LC_SEGMENT_64 = 0x19
SHF_COMPRESSED = 0x800


class DwarfError(ValueError):
    """The file is not one this reader understands (it then reports no lines)."""


def _cstr(data: bytes, at: int) -> tuple[str, int]:
    end = data.index(b"\0", at)
    return data[at:end].decode(errors="replace"), end + 1


def _uleb(data: bytes, at: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = data[at]
        at += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return result, at


def _sleb(data: bytes, at: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = data[at]
        at += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return (result - (1 << shift) if b & 0x40 else result), at


# ------------------------------------------------------------------ containers
def elf_sections(data: bytes) -> tuple[dict[str, bytes], int]:
    """{name: contents} of a little-endian 64-bit ELF file, and its text base (0)."""
    if data[4] != 2 or data[5] != 1:
        raise DwarfError("only 64-bit little-endian ELF files are read")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx]
    strtab = data[names[4]:names[4] + names[5]]
    out = {}
    for name_off, _type, flags, _addr, off, size in headers:
        name, _ = _cstr(strtab, name_off)
        body = data[off:off + size]
        if flags & SHF_COMPRESSED and name.startswith(".debug"):
            ch_type, = struct.unpack_from("<I", body, 0)
            if ch_type != 1:  # ELFCOMPRESS_ZLIB
                continue
            body = zlib.decompress(body[24:])
        out[name] = body
    return out, 0


def macho_sections(data: bytes) -> tuple[dict[str, bytes], int]:
    """{'.debug_line': contents, ...} of a 64-bit Mach-O file (its __DWARF sections, named
    as ELF names them), and the address of its __TEXT segment (0 in an object file)."""
    magic, _cpu, _sub, _filetype, ncmds, _size, _flags, _res = struct.unpack_from("<IiiIIIII", data, 0)
    if magic != MACHO_MAGIC_64:
        raise DwarfError("not a 64-bit little-endian Mach-O file")
    out, text_base, at = {}, 0, 32
    for _ in range(ncmds):
        cmd, cmdsize = struct.unpack_from("<II", data, at)
        if cmd == LC_SEGMENT_64:
            segname = data[at + 8:at + 24].rstrip(b"\0").decode()
            vmaddr, = struct.unpack_from("<Q", data, at + 24)
            nsects, = struct.unpack_from("<I", data, at + 64)
            if segname == "__TEXT":
                text_base = vmaddr
            for k in range(nsects):
                s = at + 72 + 80 * k
                sectname = data[s:s + 16].rstrip(b"\0").decode()
                size, = struct.unpack_from("<Q", data, s + 40)
                offset, = struct.unpack_from("<I", data, s + 48)
                if sectname.startswith("__debug_"):
                    out["." + sectname[2:]] = data[offset:offset + size]
        at += cmdsize
    return out, text_base


# ------------------------------------------------------------------ the line program
DW_FORM = {"string": 0x08, "line_strp": 0x1F, "strp": 0x0E, "udata": 0x0F, "data1": 0x0B, "data2": 0x05,
           "data4": 0x06, "data8": 0x07, "data16": 0x1E, "block": 0x09}
_FIXED = {DW_FORM["data1"]: 1, DW_FORM["data2"]: 2, DW_FORM["data4"]: 4, DW_FORM["data8"]: 8, DW_FORM["data16"]: 16}
DW_LNCT_PATH, DW_LNCT_DIRECTORY_INDEX = 1, 2


def _form(data: bytes, at: int, form: int, strs: dict[str, bytes], offset_size: int):
    """(value, next offset) of one attribute of a DWARF 5 directory/file entry."""
    if form == DW_FORM["string"]:
        return _cstr(data, at)
    if form in (DW_FORM["line_strp"], DW_FORM["strp"]):
        off = int.from_bytes(data[at:at + offset_size], "little")
        table = strs[".debug_line_str" if form == DW_FORM["line_strp"] else ".debug_str"]
        return _cstr(table, off)[0], at + offset_size
    if form == DW_FORM["udata"]:
        return _uleb(data, at)
    if form in _FIXED:
        n = _FIXED[form]
        return int.from_bytes(data[at:at + n], "little"), at + n
    if form == DW_FORM["block"]:
        n, at = _uleb(data, at)
        return data[at:at + n], at + n
    raise DwarfError(f"DWARF form 0x{form:x} in a line table header")


def _entries(data, at, strs, offset_size):
    """DWARF 5 directory or file entries: [{content type: value}]."""
    nformats = data[at]
    at += 1
    formats = []
    for _ in range(nformats):
        ct, at = _uleb(data, at)
        form, at = _uleb(data, at)
        formats.append((ct, form))
    count, at = _uleb(data, at)
    entries = []
    for _ in range(count):
        e = {}
        for ct, form in formats:
            e[ct], at = _form(data, at, form, strs, offset_size)
        entries.append(e)
    return entries, at


# ------------------------------------------------------------------ DWARF 2-4: the compilation directory
# Before DWARF 5 a line table does not name the directory relative file names start from;
# the compilation unit does (DW_AT_comp_dir of its first entry, .debug_info).
DW_AT_STMT_LIST, DW_AT_COMP_DIR = 0x10, 0x1B
_FORM_SIZE = {0x05: 2, 0x06: 4, 0x07: 8, 0x0B: 1, 0x0C: 1, 0x11: 1, 0x12: 2, 0x13: 4, 0x14: 8, 0x19: 0, 0x1E: 16,
              0x20: 8, 0x21: 0, 0x25: 1, 0x26: 2, 0x27: 3, 0x28: 4, 0x29: 1, 0x2A: 2, 0x2B: 3, 0x2C: 4}


def _abbrev(data: bytes, at: int, code: int):
    """The attribute (name, form) list of abbreviation `code` in the table at `at`."""
    while True:
        c, at = _uleb(data, at)
        if c == 0:
            raise DwarfError(f"abbreviation {code} not found")
        _tag, at = _uleb(data, at)
        at += 1  # has children
        attrs = []
        while True:
            name, at = _uleb(data, at)
            form, at = _uleb(data, at)
            if form == 0x21:  # implicit_const: its value is in the abbreviation
                _, at = _sleb(data, at)
            if name == 0 and form == 0:
                break
            attrs.append((name, form))
        if c == code:
            return attrs


def compilation_dirs(sections: dict[str, bytes]) -> dict[int, str]:
    """{offset of a unit's line table: its compilation directory} from .debug_info."""
    info, abbrev, strs = sections.get(".debug_info", b""), sections.get(".debug_abbrev", b""), sections
    out: dict[int, str] = {}
    at = 0
    while at + 11 <= len(info):
        length, = struct.unpack_from("<I", info, at)
        osz, p = 4, at + 4
        if length == 0xFFFFFFFF:
            length, = struct.unpack_from("<Q", info, p)
            osz, p = 8, p + 8
        end = p + length
        version, = struct.unpack_from("<H", info, p)
        p += 2
        if version >= 5:
            p += 2  # unit type, address size (units of DWARF 5 name their directory in the line table)
            at = end
            continue
        abbrev_off = int.from_bytes(info[p:p + osz], "little")
        addr_size = info[p + osz]
        p += osz + 1
        code, p = _uleb(info, p)
        stmt = comp = None
        try:
            for name, form in _abbrev(abbrev, abbrev_off, code):
                if form == 0x08:  # string
                    value, p = _cstr(info, p)
                elif form in (0x0E, 0x17, 0x10):  # strp, sec_offset, ref_addr
                    value = int.from_bytes(info[p:p + osz], "little")
                    p += osz
                    if form == 0x0E:
                        value = _cstr(strs.get(".debug_str", b""), value)[0]
                elif form == 0x01:  # addr
                    value, p = None, p + addr_size
                elif form in (0x0F, 0x0D, 0x15):  # udata, sdata, ref_udata
                    value, p = _uleb(info, p)
                elif form in (0x0A, 0x03, 0x04, 0x09, 0x18):  # blocks, exprloc
                    if form == 0x0A:
                        n, p = info[p], p + 1
                    elif form == 0x03:
                        n, p = struct.unpack_from("<H", info, p)[0], p + 2
                    elif form == 0x04:
                        n, p = struct.unpack_from("<I", info, p)[0], p + 4
                    else:
                        n, p = _uleb(info, p)
                    value, p = None, p + n
                elif form in _FORM_SIZE:
                    n = _FORM_SIZE[form]
                    value, p = int.from_bytes(info[p:p + n], "little"), p + n
                else:
                    break  # a form this reader does not know: leave the rest of the entry
                if name == DW_AT_STMT_LIST:
                    stmt = value
                elif name == DW_AT_COMP_DIR:
                    comp = value
        except (DwarfError, IndexError):
            pass
        if stmt is not None and isinstance(comp, str):
            out[stmt] = comp
        at = end
    return out


def _join(directory: str, name: str) -> str:
    return name if name.startswith("/") or not directory else f"{directory.rstrip('/')}/{name}"


def _header(data: bytes, at: int, strs: dict[str, bytes], comp_dir: str = ""):
    """Parse one unit's header: (program start, unit end, parameters, file names by index)."""
    length, = struct.unpack_from("<I", data, at)
    offset_size = 4
    at += 4
    if length == 0xFFFFFFFF:
        length, = struct.unpack_from("<Q", data, at)
        offset_size, at = 8, at + 8
    end = at + length
    version, = struct.unpack_from("<H", data, at)
    at += 2
    if not 2 <= version <= 5:
        raise DwarfError(f"DWARF line table version {version}")
    if version >= 5:
        at += 2  # address_size, segment_selector_size
    header_length = int.from_bytes(data[at:at + offset_size], "little")
    at += offset_size
    program = at + header_length
    min_inst = data[at]
    at += 1
    if version >= 4:
        at += 1  # maximum_operations_per_instruction (VLIW only)
    at += 1      # default_is_stmt
    line_base = struct.unpack_from("<b", data, at)[0]
    line_range, opcode_base = data[at + 1], data[at + 2]
    at += 3
    std_lengths = list(data[at:at + opcode_base - 1])
    at += opcode_base - 1
    files: dict[int, str] = {}
    if version >= 5:
        dirs, at = _entries(data, at, strs, offset_size)
        fentries, at = _entries(data, at, strs, offset_size)
        # directory 0 is the compilation directory; the others may be relative to it
        dnames = [d.get(DW_LNCT_PATH, "") for d in dirs]
        dnames = dnames[:1] + [_join(dnames[0], d) for d in dnames[1:]] if dnames else []
        for i, f in enumerate(fentries):
            di = f.get(DW_LNCT_DIRECTORY_INDEX, 0)
            files[i] = _join(dnames[di] if di < len(dnames) else "", f.get(DW_LNCT_PATH, "?"))
    else:
        dnames = [comp_dir]  # 0: the compilation directory, which only .debug_info names
        while data[at]:
            d, at = _cstr(data, at)
            dnames.append(d)
        at += 1
        i = 1
        while data[at]:
            name, at = _cstr(data, at)
            di, at = _uleb(data, at)
            _, at = _uleb(data, at)
            _, at = _uleb(data, at)
            directory = dnames[di] if di < len(dnames) else ""
            files[i] = _join(_join(comp_dir, directory) if di else directory, name)
            i += 1
    return program, end, (min_inst, line_base, line_range, opcode_base, std_lengths), files


def line_rows(sections: dict[str, bytes]) -> list[tuple[int, str | None, int]]:
    """Every row of every line program: (address, file, line); file None ends a sequence."""
    data = sections.get(".debug_line", b"")
    comp_dirs = compilation_dirs(sections)
    rows: list[tuple[int, str | None, int]] = []
    at = 0
    while at + 4 <= len(data):
        program, end, (min_inst, line_base, line_range, opcode_base, std_lengths), files = \
            _header(data, at, sections, comp_dirs.get(at, ""))
        at = program
        addr, file, line = 0, 1, 1
        while at < end:
            op = data[at]
            at += 1
            if op >= opcode_base:  # special opcode: advance address and line, add a row
                adj = op - opcode_base
                addr += (adj // line_range) * min_inst
                line += line_base + adj % line_range
                rows.append((addr, files.get(file), line))
            elif op == 0:  # extended opcode
                n, at = _uleb(data, at)
                sub, body = data[at], data[at + 1:at + n]
                at += n
                if sub == 1:  # end_sequence
                    rows.append((addr, None, 0))
                    addr, file, line = 0, 1, 1
                elif sub == 2:  # set_address
                    addr = int.from_bytes(body, "little")
            elif op == 1:  # copy
                rows.append((addr, files.get(file), line))
            elif op == 2:  # advance_pc
                n, at = _uleb(data, at)
                addr += n * min_inst
            elif op == 3:  # advance_line
                n, at = _sleb(data, at)
                line += n
            elif op == 4:  # set_file
                file, at = _uleb(data, at)
            elif op == 8:  # const_add_pc
                addr += ((255 - opcode_base) // line_range) * min_inst
            elif op == 9:  # fixed_advance_pc
                addr += struct.unpack_from("<H", data, at)[0]
                at += 2
            else:  # set_column, negate_stmt, ...: skip their operands
                for _ in range(std_lengths[op - 1]):
                    _, at = _uleb(data, at)
        at = end
    return rows


class LineTable:
    """Lookups of code offsets (from the start of the loaded image) in one file's table."""

    def __init__(self, path: Path):
        data = path.read_bytes()
        if data[:4] == ELF_MAGIC:
            sections, self.base = elf_sections(data)
        else:
            sections, self.base = macho_sections(data)
        # where a sequence ends, no row applies; rows of one address: the last one wins
        by_addr: dict[int, tuple[str | None, int]] = {}
        for addr, file, line in line_rows(sections):
            if file is None and addr in by_addr:
                continue  # an empty sequence's end does not hide another sequence's start
            by_addr[addr] = (file, line)
        self._addrs = sorted(by_addr)
        self._rows = [by_addr[a] for a in self._addrs]

    @classmethod
    def for_object(cls, so: Path) -> "LineTable":
        """The table of a shared object: its dSYM's on macOS, else its own."""
        dsym = so.parent / (so.name + ".dSYM") / "Contents" / "Resources" / "DWARF"
        found = sorted(dsym.glob("*")) if dsym.is_dir() else []
        return cls(found[0] if found else so)

    def locate(self, offset: int) -> str | None:
        """'file:line' of the instruction at `offset`, or None (no row, or line 0)."""
        i = bisect.bisect_right(self._addrs, offset + self.base) - 1
        if i < 0:
            return None
        file, line = self._rows[i]
        return f"{file}:{line}" if file is not None and line > 0 else None
