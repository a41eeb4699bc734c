"""emukern.loader.stack: the initial stack, parsed back from guest memory."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emukern.errors import EmukernError
from emukern.loader import stack as S
from emukern.loader.elf import load_elf
from emukern.loader.stack import build_initial_stack, layout_initial_stack, standard_auxv

BASE = 0x7FFF_F000_0000
SIZE = 0x10000
TOP = BASE + SIZE
RANDOM = bytes(range(0xA0, 0xB0))


class Mem:
    def __init__(self) -> None:
        self.buf = bytearray(SIZE)
        self.writes: list[tuple[int, int]] = []

    def write(self, addr: int, data: bytes) -> None:
        assert BASE <= addr and addr + len(data) <= TOP
        self.writes.append((addr, len(data)))
        self.buf[addr - BASE:addr - BASE + len(data)] = data

    def u64(self, addr: int) -> int:
        return struct.unpack_from("<Q", self.buf, addr - BASE)[0]

    def cstr(self, addr: int) -> bytes:
        off = addr - BASE
        return bytes(self.buf[off:self.buf.index(0, off)])

    def bytes_at(self, addr: int, n: int) -> bytes:
        return bytes(self.buf[addr - BASE:addr - BASE + n])


def parse(mem: Mem, sp: int) -> tuple[list[bytes], list[bytes], list[tuple[int, int]]]:
    argc = mem.u64(sp)
    p = sp + 8
    argv = []
    for _ in range(argc):
        argv.append(mem.cstr(mem.u64(p)))
        p += 8
    assert mem.u64(p) == 0
    p += 8
    envp = []
    while mem.u64(p):
        envp.append(mem.cstr(mem.u64(p)))
        p += 8
    p += 8
    auxv = []
    while True:
        t, v = mem.u64(p), mem.u64(p + 8)
        auxv.append((t, v))
        p += 16
        if t == S.AT_NULL:
            break
    return argv, envp, auxv


def test_layout_roundtrip() -> None:
    mem = Mem()
    auxv = [(S.AT_HWCAP, 0x112D), (S.AT_PAGESZ, 4096), (S.AT_RANDOM, 0), (S.AT_EXECFN, 0)]
    sp = build_initial_stack(mem.write, TOP, argv=["/bin/prog", "a", "héllo"],
                             envp=["HOME=/root", "X=1"], auxv=auxv, random16=RANDOM,
                             platform="aarch64", execfn="/usr/bin/prog")
    assert sp % 16 == 0
    assert mem.writes == [(sp, TOP - sp)]          # one write covering [sp, top)
    argv, envp, vec = parse(mem, sp)
    assert argv == [b"/bin/prog", b"a", "héllo".encode()]
    assert envp == [b"HOME=/root", b"X=1"]
    d = dict(vec)
    assert [t for t, _ in vec] == [S.AT_HWCAP, S.AT_PAGESZ, S.AT_RANDOM, S.AT_EXECFN,
                                   S.AT_PLATFORM, S.AT_NULL]
    assert d[S.AT_HWCAP] == 0x112D
    assert mem.bytes_at(d[S.AT_RANDOM], 16) == RANDOM
    assert mem.cstr(d[S.AT_EXECFN]) == b"/usr/bin/prog"
    assert mem.cstr(d[S.AT_PLATFORM]) == b"aarch64"
    # Linux's order above the vectors: random < platform < argv strs < envp strs < execfn < top
    argv0 = mem.u64(sp + 8)
    env0 = mem.u64(sp + 8 * 5)
    assert d[S.AT_RANDOM] < d[S.AT_PLATFORM] < argv0 < env0 < d[S.AT_EXECFN] < TOP
    assert mem.u64(TOP - 8) == 0
    assert d[S.AT_EXECFN] + len(b"/usr/bin/prog\0") == TOP - 8
    # argument strings are contiguous, argv[0] lowest (as /proc/self/cmdline expects)
    strs = "/bin/prog\0a\0héllo\0HOME=/root\0X=1\0/usr/bin/prog\0".encode()
    assert mem.bytes_at(argv0, len(strs)) == strs
    # auxv directly follows envp's NULL; padding sits between auxv and the random bytes
    auxv_end = sp + 8 * (1 + 3 + 1 + 2 + 1) + 16 * len(vec)
    assert auxv_end <= d[S.AT_RANDOM] < auxv_end + 16 + 16


def test_execfn_defaults_to_argv0_and_no_platform() -> None:
    mem = Mem()
    sp = build_initial_stack(mem.write, TOP, argv=["./x"], envp=[],
                             auxv=[(S.AT_EXECFN, 0), (S.AT_PLATFORM, 0), (S.AT_NULL, 0),
                                   (S.AT_HWCAP, 99)],
                             random16=RANDOM, platform=None)
    argv, envp, vec = parse(mem, sp)
    assert argv == [b"./x"] and envp == []
    # AT_PLATFORM dropped without a platform string; vector stops at the caller's AT_NULL
    assert vec == [(S.AT_EXECFN, TOP - 8 - 4), (S.AT_NULL, 0)]
    assert mem.cstr(vec[0][1]) == b"./x"


def test_empty_argv() -> None:
    mem = Mem()
    sp = build_initial_stack(mem.write, TOP, argv=[], envp=[], auxv=[], random16=RANDOM,
                             platform=None)
    argv, envp, vec = parse(mem, sp)
    assert argv == [] and envp == [] and vec == [(S.AT_NULL, 0)]


def test_linux_arithmetic_exact() -> None:
    """Hand-computed against create_elf_tables for a tiny case."""
    lay = layout_initial_stack(0x10000, argv=["ab"], envp=[], auxv=[(S.AT_RANDOM, 0)],
                               random16=RANDOM, platform=None, execfn="e")
    # p = 0xfff8; execfn "e\0" at 0xfff6; "ab\0" at 0xfff3; align -> 0xfff0; random at 0xffe0
    assert lay.execfn_addr == 0xFFF6
    assert lay.argv_addrs == [0xFFF3]
    assert lay.random_addr == 0xFFE0
    # auxv: (RANDOM, x), (NULL, 0) = 4 words -> 0xffc0; items = 2+1+1 = 4 -> 0xffa0
    assert lay.sp == 0xFFA0
    assert lay.auxv == [(S.AT_RANDOM, 0xFFE0), (S.AT_NULL, 0)]


def test_bad_inputs() -> None:
    with pytest.raises(ValueError):
        layout_initial_stack(TOP, argv=[], envp=[], auxv=[], random16=b"x", platform=None)
    with pytest.raises(ValueError):
        layout_initial_stack(TOP + 8, argv=[], envp=[], auxv=[], random16=RANDOM,
                             platform=None)
    with pytest.raises(EmukernError, match="NUL"):
        layout_initial_stack(TOP, argv=["a\0b"], envp=[], auxv=[], random16=RANDOM,
                             platform=None)


def test_encode_str() -> None:
    assert S.encode_str("h\u00e9") == b"h\xc3\xa9"
    assert S.encode_str("\udcff") == b"\xff"            # os.fsdecode round-trip
    assert S.encode_str("\ud800") == b"\xed\xa0\x80"  # lone surrogate: no exception
    assert S.encode_str(b"raw") == b"raw"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_characters="\0"), max_size=20), max_size=6),
       st.lists(st.text(st.characters(blacklist_characters="\0"), max_size=20), max_size=6),
       st.one_of(st.none(), st.sampled_from(["aarch64", "riscv64", "x"])))
def test_roundtrip_property(argv: list[str], envp: list[str], platform: str | None) -> None:
    mem = Mem()
    sp = build_initial_stack(mem.write, TOP, argv=argv, envp=envp,
                             auxv=[(S.AT_PAGESZ, 4096), (S.AT_RANDOM, 0), (S.AT_EXECFN, 0)],
                             random16=RANDOM, platform=platform)
    assert sp % 16 == 0
    a, e, vec = parse(mem, sp)
    enc = S.encode_str
    assert a == [enc(x) for x in argv] and e == [enc(x) for x in envp]
    d = dict(vec)
    assert mem.bytes_at(d[S.AT_RANDOM], 16) == RANDOM
    assert (S.AT_PLATFORM in d) == bool(platform)


def test_hwcap_constants() -> None:
    assert S.COMPAT_HWCAP_ISA_I == 1 << 8 and S.COMPAT_HWCAP_ISA_V == 1 << 21
    assert S.riscv_isa_hwcap("rv64imafdcv") == (
        S.COMPAT_HWCAP_ISA_I | S.COMPAT_HWCAP_ISA_M | S.COMPAT_HWCAP_ISA_A
        | S.COMPAT_HWCAP_ISA_F | S.COMPAT_HWCAP_ISA_D | S.COMPAT_HWCAP_ISA_C
        | S.COMPAT_HWCAP_ISA_V)
    assert S.riscv_isa_hwcap("rv64gc_zicsr") == S.riscv_isa_hwcap("imafdc")
    assert S.HWCAP_FP == 1 and S.HWCAP_ASIMD == 2 and S.HWCAP_SVE == 1 << 22
    assert S.HWCAP_ATOMICS == 1 << 8 and S.HWCAP_PACG == 1 << 31
    assert S.AT_NAMES[S.AT_RANDOM] == "AT_RANDOM" and S.AT_MINSIGSTKSZ == 51


@pytest.mark.usefixtures("_private_asm_cache")
def test_standard_auxv_with_real_images(rv_elf: Path, arm_elf: Path) -> None:
    for path, arch, hw in ((rv_elf, "riscv64", S.riscv_isa_hwcap("imafdcv")),
                           (arm_elf, "arm64", S.HWCAP_FP | S.HWCAP_ASIMD | S.HWCAP_SVE)):
        img = load_elf(path)
        v = standard_auxv(img, hwcap=hw, clktck=100, random_addr_placeholder=0,
                          minsigstksz=4096 if arch == "arm64" else None)
        types = [t for t, _ in v]
        expect = [S.AT_HWCAP, S.AT_PAGESZ, S.AT_CLKTCK, S.AT_PHDR, S.AT_PHENT, S.AT_PHNUM,
                  S.AT_BASE, S.AT_FLAGS, S.AT_ENTRY, S.AT_UID, S.AT_EUID, S.AT_GID,
                  S.AT_EGID, S.AT_SECURE, S.AT_RANDOM]
        if arch == "arm64":
            expect = [S.AT_MINSIGSTKSZ] + expect + [S.AT_HWCAP2]
        assert types == expect + [S.AT_EXECFN]
        d = dict(v)
        assert d[S.AT_PHDR] == img.phdr_addr and d[S.AT_PHNUM] == img.phnum
        assert d[S.AT_ENTRY] == img.entry and d[S.AT_HWCAP] == hw
        mem = Mem()
        sp = build_initial_stack(mem.write, TOP, argv=["prog"], envp=[], auxv=v,
                                 random16=RANDOM,
                                 platform="aarch64" if arch == "arm64" else None)
        _, _, vec = parse(mem, sp)
        got = dict(vec)
        assert mem.bytes_at(got[S.AT_RANDOM], 16) == RANDOM
        assert mem.cstr(got[S.AT_EXECFN]) == b"prog"
        assert vec[-1] == (S.AT_NULL, 0)
