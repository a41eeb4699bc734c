"""riscv_hwprobe (syscall 258), after arch/riscv/kernel/sys_hwprobe.c and
Documentation/arch/riscv/hwprobe.rst; and the riscv /proc/cpuinfo and AT_HWCAP.

The answers come from the machine: its ISA string (what a device tree would give Linux; Unicorn's
RV64GC plus emukern's V unit when --no-v is not given), its ID CSRs (mvendorid/marchid/mimpid as a
fresh Unicorn RISC-V CPU reads them), the cost model (a misaligned scalar access costs what an
aligned one does: FAST), emukern's TASK_SIZE and the timer frequency behind ``rdtime``.

Semantics kept from Linux:
* ``flags == 0``: for each pair, the value that holds on *every* CPU of the set (an empty cpu
  set with size 0 and NULL means all online CPUs; a set with no online CPU is -EINVAL); a key the
  kernel does not know gets key -1 and value 0, and the call still succeeds.
* ``flags == RISCV_HWPROBE_WHICH_CPUS``: the pairs are the question, the cpu set is narrowed to
  the CPUs that match all of them (bitmask keys match when the CPU has every requested bit); an
  unknown key clears the whole set (and gets key -1).  Any other flag is -EINVAL.
* A pair array or cpu set the caller cannot read or write is -EFAULT.

The key set is the one of the sys_hwprobe.c read for this model (keys 0..9, IMA_EXT_0 bits up to
ZCMOP/ZAWRS); later keys are unknown here (key -1), as on that kernel.
"""
from __future__ import annotations

import functools
import struct
from typing import TYPE_CHECKING, Any

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.machine.cpu_riscv import machine_ids

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

KEY_MVENDORID, KEY_MARCHID, KEY_MIMPID, KEY_BASE_BEHAVIOR, KEY_IMA_EXT_0 = 0, 1, 2, 3, 4
KEY_CPUPERF_0, KEY_ZICBOZ_BLOCK_SIZE, KEY_HIGHEST_VIRT_ADDRESS, KEY_TIME_CSR_FREQ = 5, 6, 7, 8
KEY_MISALIGNED_SCALAR_PERF = 9
MAX_KEY = 9
BASE_BEHAVIOR_IMA = 1
WHICH_CPUS = 1
MISALIGNED_UNKNOWN, MISALIGNED_EMULATED, MISALIGNED_SLOW, MISALIGNED_FAST = 0, 1, 2, 3

# RISCV_HWPROBE_IMA_* / RISCV_HWPROBE_EXT_* bits (include/uapi/asm/hwprobe.h)
IMA_EXT_0_BITS: dict[str, int] = {
    "fd": 0, "c": 1, "v": 2, "zba": 3, "zbb": 4, "zbs": 5, "zicboz": 6, "zbc": 7, "zbkb": 8,
    "zbkc": 9, "zbkx": 10, "zknd": 11, "zkne": 12, "zknh": 13, "zksed": 14, "zksh": 15, "zkt": 16,
    "zvbb": 17, "zvbc": 18, "zvkb": 19, "zvkg": 20, "zvkned": 21, "zvknha": 22, "zvknhb": 23,
    "zvksed": 24, "zvksh": 25, "zvkt": 26, "zfh": 27, "zfhmin": 28, "zihintntl": 29, "zvfh": 30,
    "zvfhmin": 31, "zfa": 32, "ztso": 33, "zacas": 34, "zicond": 35, "zihintpause": 36,
    "zve32x": 37, "zve32f": 38, "zve64x": 39, "zve64f": 40, "zve64d": 41, "zimop": 42, "zca": 43,
    "zcb": 44, "zcd": 45, "zcf": 46, "zcmop": 47, "zawrs": 48,
}
_VECTOR_EXTS = ("zvbb", "zvbc", "zve32f", "zve32x", "zve64d", "zve64f", "zve64x", "zvfh", "zvfhmin",
                "zvkb", "zvkg", "zvkned", "zvknha", "zvknhb", "zvksed", "zvksh", "zvkt")
_FPU_EXTS = ("zcd", "zcf", "zfa", "zfh", "zfhmin")


# The order /proc/cpuinfo's "isa" line lists multi-letter extensions in: print_isa() walks
# riscv_isa_ext[] (arch/riscv/kernel/cpufeature.c), which keeps the unprivileged spec's canonical
# order: the Zi* group, then Za*/Zf*, Zc*, Zb*, Zk*, Zv*, and the S* extensions last.  (Only the
# entries an emukern hart can have, and their neighbours; measured on Debian's 6.12.117.)
ISA_EXT_ORDER = ("zicbom", "zicboz", "ziccrse", "zicntr", "zicond", "zicsr", "zifencei", "zihintntl",
                 "zihintpause", "zihpm", "zimop", "zacas", "zawrs", "zfa", "zfh", "zfhmin", "zca",
                 "zcb", "zcd", "zcf", "zcmop", "zba", "zbb", "zbc", "zbkb", "zbkc", "zbkx", "zbs",
                 "zve32f", "zve32x", "zve64d", "zve64f", "zve64x", "sstc")


def machine_isa(k: "Kernel") -> tuple[str, tuple[str, ...]]:
    """(single letters, multi-letter extensions) of every hart: what riscv_fill_hwcap parses.
    Supersets are expanded as Linux does: C implies Zca (and Zcd with D), V implies the Zve*
    subsets.  Zicntr and Zihpm (with Zicsr and Zifencei) are set for every hart of a device-tree
    system whatever its riscv,isa says: riscv_fill_hwcap_from_isa_string() does so because they
    were part of the base ISA when the port and its DT bindings were merged."""
    letters = "imafdc" + ("v" if k.config.has_v else "")
    multi = ["zicntr", "zicsr", "zifencei", "zihpm", "zca", "zcd"]
    if k.config.has_v:
        multi += ["zve32f", "zve32x", "zve64d", "zve64f", "zve64x"]
    return letters, tuple(sorted(multi, key=ISA_EXT_ORDER.index))


def riscv_isa_string(k: "Kernel") -> str:
    letters, multi = machine_isa(k)
    return "rv64" + letters + "".join("_" + m for m in multi)


@functools.lru_cache(maxsize=1)
def _machine_ids() -> tuple[int, int, int]:
    """mvendorid, marchid, mimpid of the machine's RISC-V CPU (read once)."""
    return machine_ids()


def hart_ima_ext_0(k: "Kernel", cpu: int) -> int:
    """hwprobe_isa_ext0 for one hart (every emukern hart has the same ISA)."""
    letters, multi = machine_isa(k)
    has_fpu, has_vector = "f" in letters and "d" in letters, "v" in letters
    v = 0
    if has_fpu:
        v |= 1 << IMA_EXT_0_BITS["fd"]
    if "c" in letters:
        v |= 1 << IMA_EXT_0_BITS["c"]
    if has_vector:
        v |= 1 << IMA_EXT_0_BITS["v"]
    for ext in multi:
        bit = IMA_EXT_0_BITS.get(ext)
        if bit is None or (ext in _VECTOR_EXTS and not has_vector) or (ext in _FPU_EXTS and not has_fpu):
            continue
        v |= 1 << bit
    return v


def hwprobe_one_pair(k: "Kernel", key: int, cpus: list[int]) -> tuple[int, int]:
    """(key, value) the kernel answers for ``key`` over the CPUs ``cpus`` (non-empty)."""
    if key in (KEY_MVENDORID, KEY_MARCHID, KEY_MIMPID):
        vals = {_machine_ids()[key] for _ in cpus}          # hwprobe_arch_id: -1 if they differ
        return key, vals.pop() if len(vals) == 1 else (1 << 64) - 1
    if key == KEY_BASE_BEHAVIOR:
        return key, BASE_BEHAVIOR_IMA
    if key == KEY_IMA_EXT_0:
        v = ~0
        for c in cpus:
            v &= hart_ima_ext_0(k, c)       # a bit any CPU lacks is not reported
        return key, v & ((1 << 64) - 1)
    if key in (KEY_CPUPERF_0, KEY_MISALIGNED_SCALAR_PERF):
        return key, MISALIGNED_FAST         # the cost model charges misaligned = aligned
    if key == KEY_ZICBOZ_BLOCK_SIZE:
        return key, 0                       # no Zicboz on these harts
    if key == KEY_HIGHEST_VIRT_ADDRESS:
        return key, k.arch.STACK_TOP - 1    # emukern's TASK_SIZE - 1: mmap stops there
    if key == KEY_TIME_CSR_FREQ:
        return key, k.config.timer_freq     # riscv_timebase: the rate rdtime counts at
    return -1, 0


def _is_bitmask(key: int) -> bool:
    return key in (KEY_BASE_BEHAVIOR, KEY_IMA_EXT_0, KEY_CPUPERF_0)


def _pair_cmp(cpu_pair: tuple[int, int], want: tuple[int, int]) -> bool:
    if cpu_pair[0] != want[0]:
        return False
    if _is_bitmask(want[0]):
        return cpu_pair[1] & want[1] == want[1]
    return cpu_pair[1] == want[1]


def do_riscv_hwprobe(k: "Kernel", cpu: Any, task: Any, pairs: int, count: int, cpusetsize: int,
                     cpus_user: int, flags: int) -> int:
    cpu.charge(k.cost.syscall_body)
    mm = task.mm
    online = list(range(len(k.cpus)))
    maskbytes = 8                 # cpumask_size() with NR_CPUS=64 (emukern's --cpus limit)
    try:
        if flags & WHICH_CPUS:
            return _get_cpus(k, mm, pairs, count, cpusetsize, cpus_user, flags, online, maskbytes)
        if flags != 0:
            return -E.EINVAL
        if cpusetsize == 0 and cpus_user == 0:
            cpus = online
        else:
            size = min(cpusetsize, maskbytes)
            raw = int.from_bytes(mm.read(cpus_user, size), "little") if size else 0
            cpus = [c for c in online if raw >> c & 1]
            if not cpus:
                return -E.EINVAL
        for i in range(count):
            base = pairs + 16 * i
            key = struct.unpack("<q", mm.read(base, 8))[0]
            okey, value = hwprobe_one_pair(k, key, cpus)
            mm.write(base, struct.pack("<qQ", okey, value))
        return 0
    except MemoryFault:
        return -E.EFAULT


def _get_cpus(k: "Kernel", mm: Any, pairs: int, count: int, cpusetsize: int, cpus_user: int,
              flags: int, online: list[int], maskbytes: int) -> int:
    """hwprobe_get_cpus: narrow the cpu set to the CPUs matching every pair."""
    if flags != WHICH_CPUS or not cpusetsize or not cpus_user:
        return -E.EINVAL
    size = min(cpusetsize, maskbytes)
    raw = int.from_bytes(mm.read(cpus_user, size), "little")
    cpus = {c for c in online if raw >> c & 1} if raw else set(online)
    clear_all = False
    for i in range(count):
        base = pairs + 16 * i
        key, value = struct.unpack("<qQ", mm.read(base, 16))
        if not 0 <= key <= MAX_KEY:
            clear_all = True
            mm.write(base, struct.pack("<qQ", -1, 0))
        if clear_all:
            continue
        for c in sorted(cpus):
            if not _pair_cmp(hwprobe_one_pair(k, key, [c]), (key, value)):
                cpus.discard(c)
    if clear_all:
        cpus = set()
    out = sum(1 << c for c in cpus)
    mm.write(cpus_user, out.to_bytes(size, "little"))
    return 0


def riscv_cpuinfo(k: "Kernel") -> str:
    """/proc/cpuinfo as arch/riscv/kernel/cpu.c c_show prints it."""
    isa = riscv_isa_string(k)
    vendor, arch, imp = _machine_ids()
    return "".join(
        f"processor\t: {i}\nhart\t\t: {i}\nisa\t\t: {isa}\nmmu\t\t: sv48\n"
        f"mvendorid\t: {vendor:#x}\nmarchid\t\t: {arch:#x}\nmimpid\t\t: {imp:#x}\n"
        f"hart isa\t: {isa}\n\n" for i in range(len(k.cpus)))
