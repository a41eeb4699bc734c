"""The Linux initial process stack (``fs/binfmt_elf.c: create_elf_tables``).

Layout, from ``stack_top`` downwards (all values little-endian 64-bit)::

    stack_top - 8      8 zero bytes (end marker; Linux's bprm->p starts there)
                       execfn string (AT_EXECFN points here)
                       envp strings, argv strings (argv[0] lowest, each NUL-terminated)
                       <pad to 16>                       (arch_align_stack, without randomising)
                       platform string (AT_PLATFORM), if any
                       16 random bytes (AT_RANDOM)
                       <pad so that sp is 16-byte aligned>
                       auxv pairs ..., AT_NULL 0
                       NULL, envp[envc-1] ... envp[0]
                       NULL, argv[argc-1] ... argv[0]
    sp ->              argc

``build_initial_stack`` fills in the values of ``AT_RANDOM``, ``AT_EXECFN`` and ``AT_PLATFORM``
auxv entries (whatever placeholders they carry), and appends ``AT_PLATFORM`` after
``AT_EXECFN`` when a platform string is given and the vector has none.  ``AT_NULL`` is
appended unless the caller's vector already ends with it.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

from emukern.errors import EmukernError

if TYPE_CHECKING:  # pragma: no cover
    from emukern.loader.elf import ElfImage

__all__ = [
    "AT_NULL", "AT_IGNORE", "AT_EXECFD", "AT_PHDR", "AT_PHENT", "AT_PHNUM", "AT_PAGESZ",
    "AT_BASE", "AT_FLAGS", "AT_ENTRY", "AT_NOTELF", "AT_UID", "AT_EUID", "AT_GID", "AT_EGID",
    "AT_PLATFORM", "AT_HWCAP", "AT_CLKTCK", "AT_SECURE", "AT_BASE_PLATFORM", "AT_RANDOM",
    "AT_HWCAP2", "AT_RSEQ_FEATURE_SIZE", "AT_RSEQ_ALIGN", "AT_EXECFN", "AT_SYSINFO_EHDR",
    "AT_MINSIGSTKSZ", "AT_NAMES",
    "COMPAT_HWCAP_ISA_I", "COMPAT_HWCAP_ISA_M", "COMPAT_HWCAP_ISA_A", "COMPAT_HWCAP_ISA_F",
    "COMPAT_HWCAP_ISA_D", "COMPAT_HWCAP_ISA_C", "COMPAT_HWCAP_ISA_V", "riscv_isa_hwcap",
    "HWCAP_FP", "HWCAP_ASIMD", "HWCAP_EVTSTRM", "HWCAP_AES", "HWCAP_PMULL", "HWCAP_SHA1",
    "HWCAP_SHA2", "HWCAP_CRC32", "HWCAP_ATOMICS", "HWCAP_FPHP", "HWCAP_ASIMDHP",
    "HWCAP_CPUID", "HWCAP_ASIMDRDM", "HWCAP_JSCVT", "HWCAP_FCMA", "HWCAP_LRCPC",
    "HWCAP_DCPOP", "HWCAP_SHA3", "HWCAP_SM3", "HWCAP_SM4", "HWCAP_ASIMDDP", "HWCAP_SHA512",
    "HWCAP_SVE", "HWCAP_ASIMDFHM", "HWCAP_DIT", "HWCAP_USCAT", "HWCAP_ILRCPC", "HWCAP_FLAGM",
    "HWCAP_SSBS", "HWCAP_SB", "HWCAP_PACA", "HWCAP_PACG", "HWCAP2_SVE2",
    "StackLayout", "build_initial_stack", "encode_str", "layout_initial_stack", "standard_auxv",
]

# ---- auxv types (include/uapi/linux/auxvec.h, arch/*/include/uapi/asm/auxvec.h) -------------
AT_NULL = 0
AT_IGNORE = 1
AT_EXECFD = 2
AT_PHDR = 3
AT_PHENT = 4
AT_PHNUM = 5
AT_PAGESZ = 6
AT_BASE = 7
AT_FLAGS = 8
AT_ENTRY = 9
AT_NOTELF = 10
AT_UID = 11
AT_EUID = 12
AT_GID = 13
AT_EGID = 14
AT_PLATFORM = 15
AT_HWCAP = 16
AT_CLKTCK = 17
AT_SECURE = 23
AT_BASE_PLATFORM = 24
AT_RANDOM = 25
AT_HWCAP2 = 26
AT_RSEQ_FEATURE_SIZE = 27
AT_RSEQ_ALIGN = 28
AT_EXECFN = 31
AT_SYSINFO_EHDR = 33
AT_MINSIGSTKSZ = 51

AT_NAMES: dict[int, str] = {v: k for k, v in list(globals().items())
                            if k.startswith("AT_") and isinstance(v, int)}

# ---- RISC-V HWCAP (arch/riscv/include/uapi/asm/hwcap.h): one bit per single-letter ext --------
COMPAT_HWCAP_ISA_I = 1 << (ord("I") - ord("A"))
COMPAT_HWCAP_ISA_M = 1 << (ord("M") - ord("A"))
COMPAT_HWCAP_ISA_A = 1 << (ord("A") - ord("A"))
COMPAT_HWCAP_ISA_F = 1 << (ord("F") - ord("A"))
COMPAT_HWCAP_ISA_D = 1 << (ord("D") - ord("A"))
COMPAT_HWCAP_ISA_C = 1 << (ord("C") - ord("A"))
COMPAT_HWCAP_ISA_V = 1 << (ord("V") - ord("A"))


def riscv_isa_hwcap(letters: str) -> int:
    """HWCAP for a RISC-V ISA string's single-letter extensions, e.g. ``"imafdcv"``.

    A leading ``rv64`` is ignored, as is everything from the first ``_`` (multi-letter
    extensions have no HWCAP bit).  ``g`` expands to ``imafd``.
    """
    s = letters.lower()
    if s.startswith(("rv64", "rv32")):
        s = s[4:]
    s = s.split("_", 1)[0].replace("g", "imafd")
    bits = 0
    for ch in s:
        if "a" <= ch <= "z":
            bits |= 1 << (ord(ch) - ord("a"))
    return bits


# ---- AArch64 HWCAP (arch/arm64/include/uapi/asm/hwcap.h) ---------------------------------------
HWCAP_FP = 1 << 0
HWCAP_ASIMD = 1 << 1
HWCAP_EVTSTRM = 1 << 2
HWCAP_AES = 1 << 3
HWCAP_PMULL = 1 << 4
HWCAP_SHA1 = 1 << 5
HWCAP_SHA2 = 1 << 6
HWCAP_CRC32 = 1 << 7
HWCAP_ATOMICS = 1 << 8
HWCAP_FPHP = 1 << 9
HWCAP_ASIMDHP = 1 << 10
HWCAP_CPUID = 1 << 11
HWCAP_ASIMDRDM = 1 << 12
HWCAP_JSCVT = 1 << 13
HWCAP_FCMA = 1 << 14
HWCAP_LRCPC = 1 << 15
HWCAP_DCPOP = 1 << 16
HWCAP_SHA3 = 1 << 17
HWCAP_SM3 = 1 << 18
HWCAP_SM4 = 1 << 19
HWCAP_ASIMDDP = 1 << 20
HWCAP_SHA512 = 1 << 21
HWCAP_SVE = 1 << 22
HWCAP_ASIMDFHM = 1 << 23
HWCAP_DIT = 1 << 24
HWCAP_USCAT = 1 << 25
HWCAP_ILRCPC = 1 << 26
HWCAP_FLAGM = 1 << 27
HWCAP_SSBS = 1 << 28
HWCAP_SB = 1 << 29
HWCAP_PACA = 1 << 30
HWCAP_PACG = 1 << 31
HWCAP2_SVE2 = 1 << 1

_U64 = struct.Struct("<Q")
_MASK64 = (1 << 64) - 1


def standard_auxv(
    image: "ElfImage",
    *,
    hwcap: int,
    hwcap2: int | None = None,
    pagesz: int = 4096,
    clktck: int = 100,
    random_addr_placeholder: int = 0,
    uid: int = 0,
    euid: int | None = None,
    gid: int = 0,
    egid: int | None = None,
    secure: int = 0,
    flags: int = 0,
    base: int = 0,
    sysinfo_ehdr: int | None = None,
    minsigstksz: int | None = None,
    dlinfo: Sequence[tuple[int, int]] = (),
    rseq: tuple[int, int] | None = None,
) -> list[tuple[int, int]]:
    """The auxiliary vector Linux gives a static program, in Linux's order.

    Order (``create_elf_tables``): ARCH_DLINFO (``AT_SYSINFO_EHDR`` if a vDSO address is
    given, the architecture's ``dlinfo`` entries, ``AT_MINSIGSTKSZ`` if given), HWCAP, PAGESZ,
    CLKTCK (USER_HZ, the unit of times() and /proc -- never the kernel's HZ), PHDR, PHENT,
    PHNUM, BASE, FLAGS, ENTRY, UID, EUID, GID, EGID, SECURE, RANDOM, HWCAP2 (``hwcap2`` defaults
    to 0 on arm64, which defines ELF_HWCAP2, and to *absent* on riscv64), EXECFN, then
    ``rseq`` = (AT_RSEQ_FEATURE_SIZE, AT_RSEQ_ALIGN) when given (Linux 6.3 on).  ``AT_RANDOM``
    and ``AT_EXECFN`` carry ``random_addr_placeholder``; :func:`build_initial_stack` replaces
    both with the real addresses, puts ``AT_PLATFORM`` right after ``AT_EXECFN`` and appends
    ``AT_NULL``.
    """
    v: list[tuple[int, int]] = []
    if sysinfo_ehdr is not None:
        v.append((AT_SYSINFO_EHDR, sysinfo_ehdr))
    v += list(dlinfo)
    if minsigstksz is not None:
        v.append((AT_MINSIGSTKSZ, minsigstksz))
    v += [
        (AT_HWCAP, hwcap),
        (AT_PAGESZ, pagesz),
        (AT_CLKTCK, clktck),
        (AT_PHDR, image.phdr_addr),
        (AT_PHENT, image.phent),
        (AT_PHNUM, image.phnum),
        (AT_BASE, base),
        (AT_FLAGS, flags),
        (AT_ENTRY, image.entry),
        (AT_UID, uid),
        (AT_EUID, uid if euid is None else euid),
        (AT_GID, gid),
        (AT_EGID, gid if egid is None else egid),
        (AT_SECURE, secure),
        (AT_RANDOM, random_addr_placeholder),
    ]
    if hwcap2 is None and getattr(image, "arch", None) == "arm64":
        hwcap2 = 0
    if hwcap2 is not None:
        v.append((AT_HWCAP2, hwcap2))
    v.append((AT_EXECFN, random_addr_placeholder))
    if rseq is not None:
        v += [(AT_RSEQ_FEATURE_SIZE, rseq[0]), (AT_RSEQ_ALIGN, rseq[1])]
    return v


@dataclass
class StackLayout:
    """Where everything went.  ``blob`` is the memory image of ``[sp, stack_top)``."""

    sp: int
    stack_top: int
    blob: bytes
    argv_addrs: list[int] = field(default_factory=list)
    envp_addrs: list[int] = field(default_factory=list)
    execfn_addr: int = 0
    random_addr: int = 0
    platform_addr: int | None = None
    auxv: list[tuple[int, int]] = field(default_factory=list)
    #: Lowest address of the argument strings (Linux's mm->arg_start) and end of the env strings.
    arg_start: int = 0
    env_end: int = 0


def encode_str(s: str | bytes) -> bytes:
    """Bytes placed on the guest stack for ``s``: UTF-8, with ``os.fsencode``'s
    surrogateescape (so strings from ``os.fsdecode`` round-trip); other lone surrogates are
    passed through as their 3-byte encoding rather than raising."""
    if isinstance(s, bytes):
        return s
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogatepass")


def _cstr(s: str | bytes, what: str) -> bytes:
    b = encode_str(s)
    if b"\0" in b:
        raise EmukernError(f"{what} contains a NUL byte: {s!r}",
                           hint="program arguments and environment strings cannot contain NUL")
    return b + b"\0"


def layout_initial_stack(
    stack_top: int,
    *,
    argv: Sequence[str | bytes],
    envp: Sequence[str | bytes],
    auxv: Sequence[tuple[int, int]],
    random16: bytes,
    platform: str | None,
    execfn: str | bytes | None = None,
) -> StackLayout:
    """Compute the initial stack image without writing it (see :func:`build_initial_stack`)."""
    if len(random16) != 16:
        raise ValueError(f"random16 must be exactly 16 bytes, got {len(random16)}")
    if stack_top % 16:
        raise ValueError(f"stack_top {stack_top:#x} must be 16-byte aligned")
    argv_b = [_cstr(a, "argument") for a in argv]
    envp_b = [_cstr(e, "environment string") for e in envp]
    if execfn is None:
        execfn = argv[0] if argv else ""
    execfn_b = _cstr(execfn, "program path")

    regions: list[tuple[int, bytes]] = []
    p = stack_top - 8                       # bprm->p = vm_end - sizeof(void *)
    regions.append((p, b"\0" * 8))
    p -= len(execfn_b)                      # copy_string_kernel(bprm->filename)
    execfn_addr = p
    regions.append((p, execfn_b))
    env_end = p
    envp_addrs: list[int] = [0] * len(envp_b)
    for i in range(len(envp_b) - 1, -1, -1):   # copy_strings: last string highest
        p -= len(envp_b[i])
        envp_addrs[i] = p
        regions.append((p, envp_b[i]))
    argv_addrs: list[int] = [0] * len(argv_b)
    for i in range(len(argv_b) - 1, -1, -1):
        p -= len(argv_b[i])
        argv_addrs[i] = p
        regions.append((p, argv_b[i]))
    arg_start = p

    p &= ~0xF                               # arch_align_stack (no random offset)
    platform_addr: int | None = None
    if platform:
        pb = _cstr(platform, "platform string")
        p -= len(pb)
        platform_addr = p
        regions.append((p, pb))
    p -= 16                                 # u_rand_bytes
    random_addr = p
    regions.append((p, bytes(random16)))

    # Fix up the auxiliary vector.
    vec: list[tuple[int, int]] = []
    have_platform = False
    for t, v in auxv:
        if t == AT_NULL:
            break
        if t == AT_RANDOM:
            v = random_addr
        elif t == AT_EXECFN:
            v = execfn_addr
        elif t == AT_PLATFORM:
            if platform_addr is None:
                continue                    # no platform string: drop the entry
            v = platform_addr
            have_platform = True
        vec.append((t, v))
    if platform_addr is not None and not have_platform:
        idx = next((i + 1 for i, (t, _v) in enumerate(vec) if t == AT_EXECFN), len(vec))
        vec.insert(idx, (AT_PLATFORM, platform_addr))
    vec.append((AT_NULL, 0))

    ei_words = 2 * len(vec)
    sp = p - ei_words * 8                   # STACK_ADD(p, ei_index)
    items = (len(argv_b) + 1) + (len(envp_b) + 1) + 1
    sp = (sp - items * 8) & ~0xF            # STACK_ROUND(sp, items)

    words: list[int] = [len(argv_b), *argv_addrs, 0, *envp_addrs, 0]
    for t, v in vec:
        words += [t, v]
    buf = bytearray(stack_top - sp)
    off = 0
    for w in words:
        _U64.pack_into(buf, off, w & _MASK64)
        off += 8
    for addr, data in regions:
        buf[addr - sp:addr - sp + len(data)] = data
    return StackLayout(sp=sp, stack_top=stack_top, blob=bytes(buf), argv_addrs=argv_addrs,
                       envp_addrs=envp_addrs, execfn_addr=execfn_addr, random_addr=random_addr,
                       platform_addr=platform_addr, auxv=vec, arg_start=arg_start,
                       env_end=env_end)


def build_initial_stack(
    write: Callable[[int, bytes], None],
    stack_top: int,
    *,
    argv: Sequence[str | bytes],
    envp: Sequence[str | bytes],
    auxv: Sequence[tuple[int, int]],
    random16: bytes,
    platform: str | None,
    execfn: str | bytes | None = None,
) -> int:
    """Lay out the initial stack below ``stack_top`` as Linux does and return the initial SP.

    ``write(addr, data)`` is called once with the image of ``[sp, stack_top)``.  ``execfn`` (the
    path given to execve, for ``AT_EXECFN``) defaults to ``argv[0]``.  ``stack_top`` must be
    16-byte aligned.  The returned SP is 16-byte aligned and points at ``argc``.
    """
    lay = layout_initial_stack(stack_top, argv=argv, envp=envp, auxv=auxv, random16=random16,
                               platform=platform, execfn=execfn)
    write(lay.sp, lay.blob)
    return lay.sp
