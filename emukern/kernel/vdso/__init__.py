"""The vDSO: the small shared object every exec maps for the program (Linux: arch/*/kernel/vdso.c,
the per-arch vdso.lds.S and lib/vdso).

The image is built from emukern's own guest assembly (``guest_asm/vdso/<arch>.S``) by the
project's toolchain (llvm-mc and ld.lld, cached like every guest binary) as a real ELF shared
object: one PT_LOAD, PT_DYNAMIC, PT_NOTE with the "Linux" version note, both hash tables, and
symbols versioned as each architecture's Linux exports them.  exec maps a two-page ``[vvar]``
and the image right above it, as ``__setup_additional_pages`` does, and passes the image's
address as AT_SYSINFO_EHDR.

Where: Linux picks any free range (get_unmapped_area).  emukern keeps the sigreturn trampoline
where its one-page trampoline always was (the address a handler returns to without
SA_RESTORER), so the image is placed around it: the linker script puts the trampoline at the
start of the image's second page.  Signal frames and trap logs of programs that never look at
the auxv therefore keep their addresses.

The time functions take Linux's fallback path (the syscall): emukern's clock has no
guest-readable counter that follows it (see ``guest_asm/vdso/*.S``), so ``[vvar]`` holds no time
data and reads as zeros.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emukern.errors import AssemblerError

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

__all__ = ["VdsoImage", "VVAR_PAGES", "vdso_image", "map_vdso", "linux_version_code"]

PAGE = 4096
VVAR_PAGES = 2              # the vdso data page and the time-namespace page (VVAR_NR_PAGES)
SONAME = "linux-vdso.so.1"

# One PT_LOAD (read+execute) holding everything, like Linux's vdso.lds.S; the sigreturn
# trampoline's section opens the page-aligned .text (see the module docstring).
LINKER_SCRIPT = """\
SECTIONS
{
  . = SIZEOF_HEADERS;
  .hash          : { *(.hash) }                      :text
  .gnu.hash      : { *(.gnu.hash) }
  .dynsym        : { *(.dynsym) }
  .dynstr        : { *(.dynstr) }
  .gnu.version   : { *(.gnu.version) }
  .gnu.version_d : { *(.gnu.version_d) }
  .gnu.version_r : { *(.gnu.version_r) }
  .note          : { *(.note.*) }                    :text :note
  .dynamic       : { *(.dynamic) }                   :text :dynamic
  .rodata        : { *(.rodata*) *(.got) *(.got.plt) } :text
  . = ALIGN(4096);
  .text          : { *(.text.sigreturn) *(.text*) }  :text
  /DISCARD/      : { *(.data .data.* .bss .sbss .eh_frame .eh_frame_hdr .comment)
                     *(.note.GNU-stack .note.gnu.property .riscv.attributes .ARM.attributes) }
}
PHDRS
{
  text    PT_LOAD    FLAGS(5) FILEHDR PHDRS;
  dynamic PT_DYNAMIC FLAGS(4);
  note    PT_NOTE    FLAGS(4);
}
"""

_NOTE_HEAD = struct.pack("<III", 6, 4, 0) + b"Linux\0\0\0"


@dataclass(frozen=True)
class VdsoImage:
    """One architecture's built image: the file's bytes and its exported symbols' offsets."""
    data: bytes
    symbols: dict[str, int]         # name -> offset from the image's start
    version: str                    # the symbol version (LINUX_2.6.39, LINUX_4.15)
    sigreturn: str                  # the trampoline's symbol

    @property
    def size(self) -> int:
        return (len(self.data) + PAGE - 1) & ~(PAGE - 1)

    @property
    def note_offset(self) -> int:
        """Where the version note's LINUX_VERSION_CODE word is in the image."""
        return self.data.index(_NOTE_HEAD) + len(_NOTE_HEAD)


_images: dict[tuple[str, ...], VdsoImage] = {}


def vdso_image(source: Path, arch: str, version: str, symbols: tuple[str, ...],
               sigreturn: str) -> VdsoImage:
    """Build (or take from the cache) the image of ``source`` exporting ``symbols`` under
    ``version``; checks the layout the placement relies on."""
    key = (str(source), arch, version, *symbols)
    img = _images.get(key)
    if img is not None:
        return img
    from emukern.loader.asm import assemble_shared
    vscript = f"{version} {{\n  global:\n" + "".join(f"    {s};\n" for s in symbols) + \
        "  local: *;\n};\n"
    path = assemble_shared(source, arch, linker_script=LINKER_SCRIPT, version_script=vscript,
                           soname=SONAME)
    data = path.read_bytes()
    found = _dynamic_symbols(data)
    missing = [s for s in symbols if s not in found]
    if missing or found.get(sigreturn, 1) % PAGE or len(data) > 2 * PAGE:
        raise AssemblerError(f"{source}: the vDSO image does not have the expected layout "
                             f"(missing {missing}, {sigreturn} at {found.get(sigreturn)}, "
                             f"{len(data)} bytes)")
    img = _images[key] = VdsoImage(data, found, version, sigreturn)
    return img


def _dynamic_symbols(data: bytes) -> dict[str, int]:
    """The defined symbols of .dynsym (names to values; the image is linked at 0)."""
    import io
    from elftools.elf.elffile import ELFFile
    f = ELFFile(io.BytesIO(data))
    sec = f.get_section_by_name(".dynsym")
    out: dict[str, int] = {}
    if sec is not None:
        for s in sec.iter_symbols():
            if s.name and s["st_shndx"] != "SHN_UNDEF":
                out[s.name] = s["st_value"]
    return out


def linux_version_code(k: "Kernel") -> int:
    """LINUX_VERSION_CODE of the modelled release (KERNEL_VERSION(major, minor, 0))."""
    major, minor = k.version.release
    return (major << 16) | (minor << 8)


def arch_image(k: "Kernel") -> VdsoImage:
    """This machine's architecture's image (the arch names its source and exports)."""
    from emukern.resources import guest_asm_dir
    a = k.arch
    return vdso_image(guest_asm_dir() / "vdso" / a.VDSO_SOURCE, k.config.arch, a.VDSO_VERSION,
                      a.VDSO_SYMBOLS, a.VDSO_SIGRETURN)


def map_vdso(k: "Kernel", mm: Any, sigtramp: int) -> int:
    """Map [vvar] and [vdso] into a new mm with the image's trampoline at ``sigtramp``; return
    the image's address (AT_SYSINFO_EHDR)."""
    img = arch_image(k)
    base = sigtramp - img.symbols[img.sigreturn]
    vvar = base - VVAR_PAGES * PAGE
    mm.map(vvar, VVAR_PAGES * PAGE, "r--", "[vvar]")
    mm.map(base, img.size, "r-x", "[vdso]")
    data = bytearray(img.data)
    o = img.note_offset
    data[o:o + 4] = linux_version_code(k).to_bytes(4, "little")
    mm.write(base, bytes(data), need="")
    return base

