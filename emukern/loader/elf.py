"""Load static ELF64 executables (RISC-V 64 and AArch64, little-endian).

The ELF header and program headers are parsed and validated here with :mod:`struct` so every
problem gets a precise message; pyelftools reads the (optional) ``.symtab``.  Nothing escapes
as anything but :class:`~emukern.errors.ElfError`.

What is accepted:

* ``ET_EXEC`` without ``PT_INTERP`` (a static, non-PIE executable): loaded at its link addresses.
* ``ET_DYN`` without ``PT_INTERP`` (static-PIE): loaded at the fixed base :data:`DYN_LOAD_BASE`.
  No relocations are applied -- static-PIE C runtimes relocate themselves and position
  independent assembly needs none.  ``ElfImage.load_bias`` says how far it was moved.

Anything with ``PT_INTERP`` (dynamically linked) is rejected unless the caller asks for it
(``allow_interp=True``, what the kernel's execve does: ``ElfImage.interp`` then names the program
interpreter, which the kernel loads from the guest root).  ``load_base`` moves an ET_DYN image
elsewhere (the kernel places an interpreter in the mmap area).  Section headers are not needed;
a broken section/symbol table only loses the symbols (see ``ElfImage.warnings``), as on Linux,
which ignores sections when it runs a program.
"""
from __future__ import annotations

import bisect
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from emukern.errors import ElfError

__all__ = [
    "DYN_LOAD_BASE",
    "USER_ADDR_LIMIT",
    "ElfImage",
    "Mapping",
    "Segment",
    "load_elf",
]

PAGE_SIZE = 4096
#: Where an ET_DYN (static-PIE) image's lowest PT_LOAD is placed.
DYN_LOAD_BASE = 0x4000_0000
#: User addresses must lie below this (48-bit user VA on AArch64; Sv48 on RISC-V).
USER_ADDR_LIMIT = 1 << 47
PHDR_TABLE_MAX = PAGE_SIZE     # ELF_MIN_ALIGN: the largest program header table Linux reads
MAX_SEGMENT = 1 << 30          # 1 GiB: beyond this a bss is almost surely a corrupt header

ET_EXEC, ET_DYN = 2, 3
PT_LOAD, PT_DYNAMIC, PT_INTERP, PT_NOTE, PT_PHDR = 1, 2, 3, 4, 6
PF_X, PF_W, PF_R = 1, 2, 4
EM_AARCH64, EM_RISCV = 183, 243

_MACHINE_NAMES = {
    0: "no machine (EM_NONE)", 2: "SPARC", 3: "x86 (i386)", 4: "Motorola 68000", 8: "MIPS",
    15: "PA-RISC", 20: "PowerPC", 21: "PowerPC 64", 22: "IBM S/390", 40: "ARM (32-bit)",
    42: "SuperH", 43: "SPARC v9", 50: "IA-64", 62: "x86-64", 183: "AArch64", 243: "RISC-V",
    247: "BPF", 258: "LoongArch",
}
_ARCH_OF_MACHINE = {EM_AARCH64: "arm64", EM_RISCV: "riscv64"}
_ET_NAMES = {0: "ET_NONE (no file type)", 1: "ET_REL (a relocatable object file, not linked)",
             4: "ET_CORE (a core dump)"}

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")  # 64 bytes
_PHDR = struct.Struct("<IIQQQQQQ")          # 56 bytes

_HINT_STATIC = ("link it as a static executable: ld.lld -static --no-dynamic-linker -e _start "
                "(or gcc -static), or use emukern.loader.assemble()")
_HINT_ARCH = "emukern runs RISC-V 64 (riscv64) and AArch64 (arm64) Linux programs"


def _perm_str(flags: int) -> str:
    return ("r" if flags & PF_R else "-") + ("w" if flags & PF_W else "-") + \
        ("x" if flags & PF_X else "-")


@dataclass(frozen=True)
class Segment:
    """One PT_LOAD segment, already moved by the load bias.

    ``data`` holds the ``p_filesz`` bytes from the file; bytes from ``len(data)`` to ``memsz``
    are zero (bss).  ``perms`` is like ``"r-x"``.
    """

    vaddr: int
    memsz: int
    data: bytes
    perms: str
    offset: int = 0
    align: int = PAGE_SIZE

    @property
    def filesz(self) -> int:
        return len(self.data)

    @property
    def end(self) -> int:
        return self.vaddr + self.memsz

    def contains(self, addr: int) -> bool:
        return self.vaddr <= addr < self.end


@dataclass(frozen=True)
class Mapping:
    """A page-aligned region to map: ``start``/``size`` multiples of the page size."""

    start: int
    size: int
    perms: str

    @property
    def end(self) -> int:
        return self.start + self.size


@dataclass
class ElfImage:
    """A validated, loadable program image."""

    arch: str
    entry: int
    segments: list[Segment]
    brk_start: int
    phdr_addr: int
    phent: int
    phnum: int
    symbols: dict[str, int] = field(default_factory=dict)
    path: str | None = None
    elf_type: str = "ET_EXEC"
    load_bias: int = 0
    warnings: list[str] = field(default_factory=list)
    interp: str | None = None          # PT_INTERP path (only with allow_interp=True)
    has_notes: bool = False            # a PT_NOTE (what a C toolchain's link leaves: ABI tag, build id)

    def mappings(self, page_size: int = PAGE_SIZE) -> list[Mapping]:
        """Page-aligned regions covering every segment (bss included).

        A page touched by two segments gets the union of their permissions, as Linux's
        overlapping ``mmap``\\ s effectively do for the bytes each segment owns.  A segment with
        no R/W/X flag is still mapped, PROT_NONE (elf_map maps it; a touch faults).
        """
        # Work on page ranges, not pages: a 1 GiB bss is one range, not 262,144 dict entries.
        # Between two consecutive range boundaries the covering segments do not change, so each
        # piece gets the union of their permissions (segments share at most their end pages).
        ivs = [(s.vaddr // page_size, (s.end - 1) // page_size + 1, s.perms)
               for s in self.segments if s.memsz]
        points = sorted({a for a, _, _ in ivs} | {b for _, b, _ in ivs})
        out: list[Mapping] = []
        for lo, hi in zip(points, points[1:]):
            cover = [perms for a, b, perms in ivs if a <= lo and hi <= b]
            if not cover:
                continue                # a gap between segments: nothing mapped
            p = {c for perms in cover for c in perms if c != "-"}
            perms = ("r" if "r" in p else "-") + ("w" if "w" in p else "-") + \
                ("x" if "x" in p else "-")
            start, size = lo * page_size, (hi - lo) * page_size
            if out and out[-1].end == start and out[-1].perms == perms:
                out[-1] = Mapping(out[-1].start, out[-1].size + size, perms)
            else:
                out.append(Mapping(start, size, perms))
        return out

    def segment_at(self, addr: int) -> Segment | None:
        for s in self.segments:
            if s.contains(addr):
                return s
        return None

    def nearest_symbol(self, addr: int) -> tuple[str, int] | None:
        """``(name, offset)`` of the closest symbol at or below ``addr``, or None."""
        if not self.symbols:
            return None
        items = sorted((v, k) for k, v in self.symbols.items())
        i = bisect.bisect_right(items, (addr, "\uffff")) - 1
        if i < 0:
            return None
        v, k = items[i]
        return k, addr - v


def _fail(msg: str, hint: str | None = None, path: str | None = None) -> ElfError:
    where = f"{path}: " if path else ""
    return ElfError(where + msg, hint=hint)


def load_elf(path_or_bytes: str | os.PathLike[str] | bytes | bytearray | memoryview, *,
             allow_interp: bool = False, load_base: int | None = None,
             name: str | None = None) -> ElfImage:
    """Parse and validate an ELF64 executable; raise :class:`ElfError` if it can't run.

    ``name`` labels messages when the image comes as bytes (e.g. a guest path)."""
    path: str | None
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        blob = bytes(path_or_bytes)
        path = None
    else:
        path = os.fspath(path_or_bytes)
        try:
            blob = Path(path).read_bytes()
        except IsADirectoryError:
            raise _fail("is a directory, not a program", path=path) from None
        except FileNotFoundError:
            raise ElfError(f"{path}: no such file", hint="check the program path") from None
        except OSError as e:
            raise _fail(f"cannot read: {e.strerror or e}", path=path) from None
    try:
        img = _load(blob, path or name, allow_interp, load_base)
        if path is None:
            img.path = None
        return img
    except ElfError:
        raise
    except Exception as e:  # defensive: nothing but ElfError may escape
        err = _fail(f"malformed ELF file ({type(e).__name__}: {e})", path=path)
        err.internal = e      # not a check that rejected the file: a loader bug the tests look for
        raise err from None


def _load(blob: bytes, path: str | None, allow_interp: bool = False,
          load_base: int | None = None) -> ElfImage:
    n = len(blob)
    if n < 4 or blob[:4] != b"\x7fELF":
        what = "an empty file" if n == 0 else "not an ELF file (bad magic number)"
        hint = None
        if blob[:2] == b"#!":
            hint = "this is a script; emukern runs compiled RISC-V 64 / AArch64 ELF programs"
        elif blob[:4] in (b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe"):
            what = "a Mach-O file, not an ELF file"
        elif blob[:2] == b"MZ":
            what = "a Windows PE file, not an ELF file"
        raise _fail(what, hint=hint or "pass a Linux ELF executable (or a .S to assemble)",
                    path=path)
    if n < 16:
        raise _fail(f"truncated ELF header ({n} bytes; the identification alone needs 16)",
                    hint="the file was cut short; rebuild or re-copy it", path=path)
    ei_class, ei_data = blob[4], blob[5]
    if ei_class == 1:
        raise _fail("a 32-bit ELF (ELFCLASS32); emukern runs only 64-bit programs",
                    hint=_HINT_ARCH + "; build for rv64 / aarch64", path=path)
    if ei_class != 2:
        raise _fail(f"invalid ELF class {ei_class} (expected 2, ELFCLASS64)",
                    hint="the file is corrupt", path=path)
    if ei_data == 2:
        raise _fail("a big-endian ELF (ELFDATA2MSB); emukern runs only little-endian programs",
                    hint=_HINT_ARCH + " (little-endian)", path=path)
    if ei_data != 1:
        raise _fail(f"invalid ELF data encoding {ei_data}", hint="the file is corrupt", path=path)
    if n < _EHDR.size:
        raise _fail(f"truncated ELF header ({n} bytes; an ELF64 header is 64)",
                    hint="the file was cut short; rebuild or re-copy it", path=path)
    (_ident, e_type, e_machine, _e_version, e_entry, e_phoff, _e_shoff, _e_flags,
     _e_ehsize, e_phentsize, e_phnum, _e_shentsize, _e_shnum, _e_shstrndx) = _EHDR.unpack_from(
        blob, 0)

    arch = _ARCH_OF_MACHINE.get(e_machine)
    if arch is None:
        name = _MACHINE_NAMES.get(e_machine, f"unknown machine {e_machine}")
        raise _fail(f"built for {name} (e_machine={e_machine}); {_HINT_ARCH}",
                    hint="cross-compile for riscv64 or aarch64, e.g. "
                    "riscv64-linux-gnu-gcc -static / aarch64-linux-gnu-gcc -static", path=path)

    if e_type not in (ET_EXEC, ET_DYN):
        name = _ET_NAMES.get(e_type, f"unknown type {e_type:#x}")
        raise _fail(f"not an executable: ELF type is {name}",
                    hint="link the object into a static executable: " + _HINT_STATIC, path=path)

    if e_phnum == 0:
        raise _fail("has no program headers, so nothing to load (no PT_LOAD)",
                    hint=_HINT_STATIC, path=path)
    if e_phnum == 0xFFFF:
        raise _fail("uses extended program header numbering (PN_XNUM), unsupported",
                    path=path)
    if e_phentsize != _PHDR.size:
        raise _fail(f"program header entry size is {e_phentsize}, expected {_PHDR.size} "
                    "for ELF64", hint="the file is corrupt", path=path)
    if e_phnum * e_phentsize > PHDR_TABLE_MAX:
        # load_elf_phdrs refuses a table larger than ELF_MIN_ALIGN (a page): ENOEXEC.  This also
        # bounds the loader's work, whatever the file claims.
        raise _fail(f"has {e_phnum} program headers ({e_phnum * e_phentsize} bytes); Linux refuses "
                    f"a program header table over {PHDR_TABLE_MAX} bytes (one page: at most "
                    f"{PHDR_TABLE_MAX // _PHDR.size} entries), so it cannot run (ENOEXEC)",
                    hint="the file is corrupt, or merge its segments (a linker makes a handful)",
                    path=path)
    if e_phoff > n or e_phoff + e_phnum * e_phentsize > n:
        raise _fail(f"truncated: program headers at offset {e_phoff:#x} ({e_phnum} entries) "
                    f"run past the end of the {n}-byte file",
                    hint="the file was cut short; rebuild or re-copy it", path=path)

    phdrs = [_PHDR.unpack_from(blob, e_phoff + i * e_phentsize) for i in range(e_phnum)]
    loads = []
    has_phdr_seg = None
    interp_path: str | None = None
    has_notes = False
    for i, (p_type, p_flags, p_offset, p_vaddr, _p_paddr, p_filesz, p_memsz, p_align) in \
            enumerate(phdrs):
        if p_type == PT_INTERP:
            interp = ""
            if p_offset < n:
                interp = blob[p_offset:min(n, p_offset + p_filesz)].split(b"\0")[0].decode(
                    "utf-8", "replace")
            if allow_interp:
                if not interp or p_offset + p_filesz > n or p_filesz > 4096:
                    raise _fail(f"PT_INTERP #{i} does not name an interpreter inside the file",
                                hint="the file is corrupt", path=path)
                interp_path = interp
                continue
            extra = f" (interpreter {interp})" if interp else ""
            raise _fail(f"dynamically linked{extra}; its interpreter and libraries come from a "
                        "guest root", hint="run it with --root SYSROOT (e.g. --root /usr/aarch64-linux-gnu), "
                        "or link with -static; " + _HINT_STATIC, path=path)
        if p_type == PT_PHDR:
            has_phdr_seg = p_vaddr
        if p_type == PT_NOTE:
            has_notes = True
        if p_type == PT_LOAD:
            loads.append((i, p_flags, p_offset, p_vaddr, p_filesz, p_memsz, p_align))

    if not loads:
        raise _fail("has no PT_LOAD segment, so nothing to load", hint=_HINT_STATIC, path=path)

    bias = 0
    elf_type = "ET_EXEC"
    if e_type == ET_DYN:
        elf_type = "ET_DYN"
        lowest = min(v for (_i, _f, _o, v, _fs, _ms, _a) in loads)
        bias = (DYN_LOAD_BASE if load_base is None else load_base) - (lowest & ~(PAGE_SIZE - 1))

    segs: list[Segment] = []
    for (i, p_flags, p_offset, p_vaddr, p_filesz, p_memsz, p_align) in loads:
        if p_filesz > p_memsz:
            raise _fail(f"PT_LOAD #{i} has p_filesz {p_filesz:#x} > p_memsz {p_memsz:#x}",
                        hint="the file is corrupt", path=path)
        if p_offset > n or p_offset + p_filesz > n:
            raise _fail(f"truncated: PT_LOAD #{i} needs file bytes {p_offset:#x}.."
                        f"{p_offset + p_filesz:#x} but the file is only {n} ({n:#x}) bytes",
                        hint="the file was cut short; rebuild or re-copy it", path=path)
        vaddr = p_vaddr + bias
        if p_memsz == 0:
            continue
        if vaddr < PAGE_SIZE:
            raise _fail(f"PT_LOAD #{i} is at address {vaddr:#x}, in the first page; address 0 "
                        "must stay unmapped (NULL pointers)",
                        hint="link at a normal base (ld.lld's default, or -Ttext=0x10000)",
                        path=path)
        if vaddr + p_memsz > USER_ADDR_LIMIT or vaddr + p_memsz < vaddr:
            raise _fail(f"PT_LOAD #{i} at {vaddr:#x}..{vaddr + p_memsz:#x} is outside user "
                        f"space (must end below {USER_ADDR_LIMIT:#x}); the top half belongs "
                        "to the kernel", hint="link at a user-space address", path=path)
        if p_memsz > MAX_SEGMENT:
            raise _fail(f"PT_LOAD #{i} is {p_memsz:#x} bytes in memory; emukern loads segments "
                        f"of at most {MAX_SEGMENT >> 20} MiB", hint="the file is corrupt, or give "
                        "the program a smaller bss and allocate with mmap instead", path=path)
        data = blob[p_offset:p_offset + p_filesz]
        segs.append(Segment(vaddr=vaddr, memsz=p_memsz, data=data, perms=_perm_str(p_flags),
                            offset=p_offset, align=p_align or 1))

    if not segs:
        raise _fail("every PT_LOAD segment is empty, so nothing to load", hint=_HINT_STATIC,
                    path=path)
    segs.sort(key=lambda s: s.vaddr)
    for a, b in zip(segs, segs[1:]):
        if b.vaddr < a.end:
            raise _fail(f"PT_LOAD segments overlap: {a.vaddr:#x}..{a.end:#x} ({a.perms}) and "
                        f"{b.vaddr:#x}..{b.end:#x} ({b.perms})",
                        hint="the file is corrupt or was linked with a broken script", path=path)

    entry = e_entry + bias
    if not any(s.contains(entry) and "x" in s.perms for s in segs):
        raise _fail(f"entry point {entry:#x} is not inside any executable segment",
                    hint="the program must define _start in its code (ld.lld -e _start)",
                    path=path)

    # AT_PHDR: where the program headers are in memory.
    phdr_addr = 0
    if has_phdr_seg is not None:
        phdr_addr = has_phdr_seg + bias
    else:
        for s in segs:
            if s.offset <= e_phoff and e_phoff + e_phnum * e_phentsize <= s.offset + s.filesz:
                phdr_addr = s.vaddr + (e_phoff - s.offset)
                break

    brk_start = (max(s.end for s in segs) + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1)
    img = ElfImage(arch=arch, entry=entry, segments=segs, brk_start=brk_start,
                   phdr_addr=phdr_addr, phent=e_phentsize, phnum=e_phnum, path=path,
                   elf_type=elf_type, load_bias=bias, interp=interp_path, has_notes=has_notes)
    img.symbols = _read_symbols(blob, bias, img.warnings)
    return img


_SHT_SYMTAB_KINDS = (2, 11, 0x6ffffff3)      # SHT_SYMTAB, SHT_DYNSYM, SHT_SUNW_LDYNSYM
_SHN_UNDEF, _SHN_ABS = 0, 0xfff1
_STT_SECTION, _STT_FILE, _STB_LOCAL = 3, 4, 0


def _cstr(blob: bytes, off: int) -> str:
    end = blob.index(b"\0", off)
    return blob[off:end].decode("latin-1")


def _read_symbols_quick(blob: bytes, bias: int) -> dict[str, int] | None:
    """:func:`_read_symbols` for the common case, a well-formed little-endian ELF64 (every guest
    emukern loads), read with struct alone: importing pyelftools costs a run that only needs the
    symbols ~40 ms of start-up.  None: anything unusual (another class or byte order, extended
    section numbering, a malformed table), for pyelftools to read and judge as before.  Same
    answer as the pyelftools reader: the last section named .symtab, latin-1 names."""
    if len(blob) < 64 or blob[4] != 2 or blob[5] != 1:
        return None
    e_shoff, = struct.unpack_from("<Q", blob, 0x28)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", blob, 0x3A)
    if e_shoff == 0 or e_shnum == 0:
        return {}
    if e_shentsize != 64 or e_shstrndx >= e_shnum or e_shoff + e_shnum * 64 > len(blob):
        return None
    shdrs = [struct.unpack_from("<IIQQQQIIQQ", blob, e_shoff + 64 * i) for i in range(e_shnum)]
    str_off = shdrs[e_shstrndx][4]
    named = None
    for sh in shdrs:
        if _cstr(blob, str_off + sh[0]) == ".symtab":
            named = sh
    if named is None:
        return {}
    _n, sh_type, _f, _a, sh_offset, sh_size, sh_link, _i, _al, sh_entsize = named
    if sh_type not in _SHT_SYMTAB_KINDS:
        return {}
    if sh_entsize != 24 or sh_link >= e_shnum or sh_offset + sh_size > len(blob):
        return None
    names_off = shdrs[sh_link][4]
    glob: dict[str, int] = {}
    loc: dict[str, int] = {}
    for i in range(sh_size // 24):
        st_name, st_info, _other, st_shndx, value, _size = struct.unpack_from("<IBBHQQ", blob, sh_offset + 24 * i)
        name = _cstr(blob, names_off + st_name)
        if not name or name.startswith("$"):
            continue
        if (st_info & 0xf) in (_STT_SECTION, _STT_FILE) or st_shndx == _SHN_UNDEF:
            continue
        if st_shndx != _SHN_ABS:
            value += bias
        target = loc if (st_info >> 4) == _STB_LOCAL else glob
        target.setdefault(name, value)
    return {**loc, **glob}


def _read_symbols(blob: bytes, bias: int, warnings: list[str]) -> dict[str, int]:
    """Named, defined symbols from ``.symtab`` (globals win over locals of the same name)."""
    import io

    try:
        quick = _read_symbols_quick(blob, bias)
    except (struct.error, ValueError, IndexError):   # truncated or unterminated: pyelftools says what
        quick = None
    if quick is not None:
        return quick

    try:
        from elftools.elf.elffile import ELFFile
        from elftools.elf.sections import SymbolTableSection

        ef = ELFFile(io.BytesIO(blob))
        sec = ef.get_section_by_name(".symtab")
        if sec is None or not isinstance(sec, SymbolTableSection):
            return {}
        glob: dict[str, int] = {}
        loc: dict[str, int] = {}
        for sym in sec.iter_symbols():
            name = sym.name
            if not name or name.startswith("$"):
                continue
            st_type = sym["st_info"]["type"]
            if st_type in ("STT_SECTION", "STT_FILE"):
                continue
            if sym["st_shndx"] == "SHN_UNDEF":
                continue
            value = sym["st_value"]
            if sym["st_shndx"] != "SHN_ABS":
                value += bias
            target = loc if sym["st_info"]["bind"] == "STB_LOCAL" else glob
            target.setdefault(name, value)
        return {**loc, **glob}
    except Exception as e:  # any pyelftools failure: lose the symbols, keep the program
        warnings.append(f"symbol table unreadable ({type(e).__name__}: {e}); no symbols")
        return {}
