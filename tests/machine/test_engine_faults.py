"""Faulting addresses read from the engine instead of a memory hook (uc_internal.fault_reader).

With the native library, each CPU runs on Unicorn's virtual TLB with a fill that gives data
entries no fetch permission (native/counter.c's ek_tlb_fill, a64_stub.c's ek_a64_tlb_fill), and
installs no UC_HOOK_MEM_INVALID: a memory hook of any kind would send every guest store through
Unicorn's slow path again.  The faulting address then comes from the engine's own record of it.
These tests hold that to the hook's answer: the same address on a bare Unicorn, and the same
runs (faulting PCs, si_addr, frames, counts, output) with ``EMUKERN_FAULT_HOOK=1``, which keeps
the hook as before.
"""
from __future__ import annotations

import json

import pytest
from unicorn import UC_ARCH_RISCV, UC_HOOK_MEM_INVALID, UC_MODE_RISCV64, UC_PROT_ALL, UC_PROT_READ, Uc, UcError
from unicorn.riscv_const import UC_RISCV_REG_T0

from emukern.machine import uc_internal
from emukern.machine.counter import native_available
from emukern.pytest_plugin import GUEST_ASM

needs_native = pytest.mark.skipif(not native_available(), reason="no C compiler for the native library")

LD_T1_T0 = (0x0002B303).to_bytes(4, "little")        # ld t1, 0(t0)
SD_T1_T0 = (0x0062B023).to_bytes(4, "little")        # sd t1, 0(t0)


def test_the_engine_offset_is_found():
    assert uc_internal.fault_address_at() is not None


@pytest.mark.parametrize("word, addr, mapped", [
    (LD_T1_T0, 0x5555_0000_1238, False),       # load, unmapped
    (SD_T1_T0, 0x0000_0040_0ff8, False),       # store, unmapped
    (SD_T1_T0, 0x0000_0000_3010, True),        # store to a read-only page (WRITE_PROT)
])
def test_engine_address_is_the_hooks_address(word, addr, mapped):
    """The address the engine keeps is the one UC_HOOK_MEM_INVALID is given, and the readers
    follow the engine (no fault pending once uc_emu_start has returned)."""
    seen = []
    for with_hook in (True, False):
        uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV64)
        uc.mem_map(0x1000, 0x1000, UC_PROT_ALL)
        uc.mem_write(0x1000, word)
        uc.mem_map(0x3000, 0x1000, UC_PROT_READ)
        got = []
        if with_hook:
            uc.hook_add(UC_HOOK_MEM_INVALID, lambda _uc, _acc, a, _size, _v, _ud: got.append(a) or False)
        uc.reg_write(UC_RISCV_REG_T0, addr)
        with pytest.raises(UcError):
            uc.emu_start(0x1000, 0x1004)
        rd = uc_internal.fault_reader(uc)
        assert rd is not None
        address, pending = rd
        assert not pending()
        seen.append(got[0] if with_hook else address())
    assert seen == [addr, addr]


@needs_native
@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_cpus_run_without_a_memory_hook(run_guest, monkeypatch, arch):
    """No memory hook on any engine of a CPU (the store fast path's condition), and the hook is
    back with EMUKERN_FAULT_HOOK=1."""
    for env, expect_hook in (("0", False), ("1", True)):
        monkeypatch.setenv("EMUKERN_FAULT_HOOK", env)
        _r, m = run_guest(GUEST_ASM / ("riscv" if arch == "riscv64" else "arm64") / "hello.S")
        for cpu in m.kernel.cpus:
            es = uc_internal.engines(cpu.uc)
            assert es is not None
            kinds = [s[1][0] for s in es.steps if s[0] == "pyhook"]
            assert (UC_HOOK_MEM_INVALID in kinds) is expect_hook
            assert (cpu._fault_address is None) is expect_hook


@needs_native
@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
@pytest.mark.parametrize("name, argv", [
    ("signals", ["sync"]), ("signals", ["altstack"]), ("signals", ["nested"]), ("shared_anon", []),
])
def test_runs_equal_with_and_without_the_hook(run_guest, monkeypatch, cguest, arch, name, argv):
    """SIGSEGV/SIGBUS with their si_addr, and shared and private memory across fork: the same run both
    ways, byte for byte."""
    elf = cguest(name, arch, "-lpthread")
    out = []
    for env in ("1", "0"):
        monkeypatch.setenv("EMUKERN_FAULT_HOOK", env)
        r, _m = run_guest(elf, argv=argv)
        assert r.exit_status == 0, r.stdout
        out.append(json.dumps(r.to_json(), indent=2, sort_keys=True))
    assert out[0] == out[1]
