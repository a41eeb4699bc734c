"""Issue 11 items 9 and 13: ELF files that used to end in an internal error or take minutes —
segments totalling more than a process may have, and huge program header tables."""
from __future__ import annotations

import time

import pytest

from emukern.api import Machine
from emukern.cli import main
from emukern.errors import ElfError
from emukern.loader.elf import load_elf
from hostile_elf import PF_R, PF_W, PT_LOAD, PT_NULL, make_elf

GIB = 1 << 30


def _write(tmp_path, blob, name="prog.elf"):
    p = tmp_path / name
    p.write_bytes(blob)
    return p


def test_the_hand_made_elf_runs(tmp_path):
    r = Machine().load(_write(tmp_path, make_elf())).run()
    assert r.exit_status == 42


def test_segments_over_4_gib_are_a_clear_load_error(tmp_path, capsys):
    # five 1 GiB bss segments: each is allowed, together they pass the 4 GiB a process may map
    extra = [(PT_LOAD, PF_R | PF_W, 0x1000_0000 + i * 2 * GIB, GIB) for i in range(5)]
    prog = _write(tmp_path, make_elf(extra))
    with pytest.raises(ElfError, match="cannot load the program.*4 GiB address-space limit"):
        Machine().load(prog)
    assert main(["run", str(prog)]) == 2                     # a clear error, not rc 70
    err = capsys.readouterr().err
    assert "emukern: error:" in err and "internal error" not in err


def test_segments_over_the_machine_memory_limit(tmp_path):
    extra = [(PT_LOAD, PF_R | PF_W, 0x1000_0000, 64 << 20)]
    with pytest.raises(ElfError, match="--mem-limit"):
        Machine(mem_limit=32 << 20).load(_write(tmp_path, make_elf(extra)))


def test_a_page_of_program_headers_still_loads(tmp_path):
    # 73 entries of 56 bytes fit Linux's one-page limit (ELF_MIN_ALIGN)
    extra = [(PT_NULL, 0, 0, 0)] * 71 + [(PT_LOAD, PF_R | PF_W, 0x20000, 0x1000)]
    r = Machine().load(_write(tmp_path, make_elf(extra))).run()
    assert r.exit_status == 42


@pytest.mark.parametrize("count", [74, 200, 65534])
def test_more_program_headers_than_linux_reads_are_refused_quickly(tmp_path, count):
    # many small PT_LOADs (each on its own page): 60,000 of them took over two minutes
    extra = [(PT_LOAD, PF_R | PF_W, 0x100000 + i * 0x2000, 0x1000) for i in range(count - 1)]
    blob = make_elf(extra)
    t0 = time.perf_counter()
    with pytest.raises(ElfError, match=f"has {count} program headers.*at most 73 entries"):
        load_elf(blob)
    assert time.perf_counter() - t0 < 5
