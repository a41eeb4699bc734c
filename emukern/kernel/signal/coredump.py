"""Core dumps — mirrors fs/coredump.c (do_coredump) and fs/binfmt_elf.c (elf_core_dump).

A core-action signal (SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGXCPU, SIGXFSZ,
SIGSYS) that kills a process makes Linux write an ELF core file when RLIMIT_CORE allows at least
binfmt_elf's ``min_coredump`` (one page), and only then does the wait status get WCOREDUMP
(0x80): ``coredump_finish`` reports the dump as done only when ``elf_core_dump`` wrote all of it.

Where: ``kernel.core_pattern``'s default, ``core``, in the dumping task's working directory — in
emukern the guest's root, so a core needs a writable root (``--root DIR --root-rw``); a read-only
or absent root is Linux's read-only file system: no file, no 0x80.  As do_coredump does for a
non-setuid process, an existing ``core`` is unlinked first (a symlink named ``core`` is removed,
never followed) and the file is created with O_EXCL|O_NOFOLLOW, mode 0600 — both relative to the
cwd's held directory handle (fs/vfs.py), so a guest that renames directories or plants symlinks
cannot aim the dump at a host file outside its root.

What: an ET_CORE ELF with one PT_NOTE and a PT_LOAD per mapping, in elf_core_dump's order:
* notes, per thread (the dumping thread first): NT_PRSTATUS (``struct elf_prstatus``: the signal,
  pending and blocked sets, pids, times, ``pr_reg`` = user_pt_regs / user_regs_struct); after the
  first thread's NT_PRSTATUS the process notes NT_PRPSINFO, NT_SIGINFO (the killing siginfo) and
  NT_AUXV (mm->saved_auxv); then the thread's NT_PRFPREG (user_fpsimd_state / the D state) and,
  on arm64, the "LINUX" regset notes (TLS, HW_BREAK/WATCH, SYSTEM_CALL, SVE, the PAC ones when
  the CPU has pointer authentication, TAGGED_ADDR_CTRL: see kernel/arch/arm64/regset.py).  The FP state of a thread live on a CPU is saved first, as
  fpr_get does with fpsimd_preserve_current_state / fstate_save.
* memory, by coredump_filter's default 0x33 (vma_dump_size): anonymous and written (writable)
  mappings whole, the vDSO page whole, a read-only file mapping only for its first page when it
  starts with an ELF header, everything else not at all (p_filesz 0).  Pages that are all zero
  are left as holes in the file and do not count against the limit — Linux skips pages never
  touched (get_dump_page returns none for them) the same way; emukern cannot tell an untouched
  page from one that holds zeroes.
* RLIMIT_CORE: bytes written past the limit are not written (dump_emit fails): the file stays
  truncated, and the dump counts as not done (no 0x80), as in Linux.

Not written: NT_FILE (emukern keeps no file offset per mapping), riscv's NT_RISCV_VECTOR (Linux
6.12 writes none either for a task without V state), section headers for more than 65535
mappings.  Checked against Debian's 6.1/6.12 arm64 and 6.12 riscv64 kernels
(tests/oracle/test_oracle_coredump.py).  ``gdb-multiarch PROGRAM core`` reads the result
(tests/kernel/signal/test_coredump.py).
"""
from __future__ import annotations

import os
import struct
from typing import TYPE_CHECKING, Any

from emukern.kernel.resource import rlimit
from emukern.kernel.signal.defs import RLIMIT_CORE

if TYPE_CHECKING:
    from emukern.kernel.signal.state import KSigInfo
    from emukern.kernel.task import Task
from emukern.kernel.signal import timers as signal_timers
from emukern.kernel.fs.procfs import proc_auxv
from emukern.kernel.fs import meta as fs_meta
from emukern.kernel.fs.vfs import cwd_of

PAGE = 4096                         # ELF_EXEC_PAGESIZE; binfmt_elf's min_coredump
ET_CORE, PT_LOAD, PT_NOTE = 4, 1, 4
NT_PRSTATUS, NT_PRFPREG, NT_PRPSINFO, NT_AUXV, NT_SIGINFO = 1, 2, 3, 6, 0x53494749
PF_DUMPCORE = 0x200
_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_PHDR = struct.Struct("<IIQQQQQQ")
# struct elf_prstatus up to its times: elf_siginfo {signo, code, errno}, pr_cursig (+2 pad),
# pr_sigpend, pr_sighold, pr_pid, pr_ppid, pr_pgrp, pr_sid; then four __kernel_old_timeval
# (pr_utime, pr_stime, pr_cutime, pr_cstime) and pr_reg
_PRSTATUS_HEAD = struct.Struct("<iiih2xQQiiii")
# struct elf_prpsinfo: state, sname, zomb, nice (+4 pad), pr_flag, uid, gid, pid, ppid, pgrp,
# sid, fname[16], psargs[80]
_PRPSINFO = struct.Struct("<bcbb4xQIIiiii16s80s")


def note(name: bytes, ntype: int, desc: bytes) -> bytes:
    """An ELF note: namesz, descsz, type, the NUL-terminated name and the descriptor, each padded
    to 4 bytes."""
    n = name + b"\0"
    return (struct.pack("<III", len(n), len(desc), ntype) + n + bytes(-len(n) % 4)
            + desc + bytes(-len(desc) % 4))


def _live_cpu(k: Any, t: "Task") -> Any:
    """The CPU ``t`` is current on (its registers are there, not in t.ctx), or None."""
    for cpu, pc in zip(k.cpus, k.percpu):
        if pc.curr is t:
            return cpu
    return None


def _thread_regs(k: Any, t: "Task") -> tuple[bytes, bytes, bytes | None]:
    """(pr_reg, the NT_PRFPREG regset, the arch's regset notes after it) of one thread of the
    dying process, each as ptrace's PTRACE_GETREGSET gives it (the arch's regsets:
    kernel/arch/*/regset.py core_thread_regsets)."""
    cpu = _live_cpu(k, t)
    ctx = cpu.save_context() if cpu is not None else t.ctx
    return k.arch.core_thread_regsets(cpu, t, ctx)


def _prstatus(k: Any, t: "Task", sig: int, pr_reg: bytes, group: list["Task"]) -> bytes:
    """fill_prstatus: a group leader reports the whole group's times (thread_group_cputime)."""
    sigs = t.signal
    ss = t.sigstate
    pending = ss.pending.signal if ss is not None else 0
    blocked = ss.blocked if ss is not None else 0
    leader = t.tid == t.tgid
    ut = sum(x.utime for x in group) if leader else t.utime
    st = sum(x.stime for x in group) if leader else t.stime
    lead = k.tasks.get(t.tgid, t)
    parent = lead.parent
    head = _PRSTATUS_HEAD.pack(sig, 0, 0, sig, pending & (2**64 - 1), blocked & (2**64 - 1), t.tid,
                               parent.tgid if parent is not None else 0,
                               sigs.pgid if sigs is not None else t.tgid, sigs.sid if sigs is not None else t.tgid)
    times = b"".join(signal_timers._timeval_of_cycles(k, c) for c in (ut, st, lead.cusage[0], lead.cusage[1]))
    return head + times + pr_reg + struct.pack("<i4x", 1)          # pr_fpvalid


def _prpsinfo(t: "Task") -> bytes:
    """fill_psinfo of the group leader (``t``): running (state 0, 'R'); psargs is the command
    line with its NULs turned to spaces, cut to 80 bytes."""
    args = b" ".join(a.encode("utf-8", "surrogateescape") for a in (t.argv or []))[:79]
    lead_parent = t.parent
    sigs = t.signal
    return _PRPSINFO.pack(0, b"R", 0, 0, PF_DUMPCORE, 0, 0, t.tgid,
                          lead_parent.tgid if lead_parent is not None else 0,
                          sigs.pgid if sigs is not None else t.tgid, sigs.sid if sigs is not None else t.tgid,
                          t.comm.encode("utf-8", "surrogateescape")[:15], args)


def _dump_size(m: Any, data: bytes) -> int:
    """vma_dump_size under coredump_filter 0x33 (see the module docstring)."""
    if m.name in ("[vdso]", "[vvar]"):
        return m.size                               # always_dump_vma (special mappings have a name)
    file_backed = m.name == "elf" or m.name.startswith("file:")
    if not file_backed or "w" in m.perms:
        return m.size                               # anonymous, or written (has an anon_vma)
    if "r" in m.perms and data[:4] == b"\x7fELF":
        return PAGE                                 # MMF_DUMP_ELF_HEADERS: the header page
    return 0


def elf_core_bytes(k: Any, task: "Task", info: "KSigInfo") -> tuple[bytes, list[tuple[int, bytes]], int]:
    """(the headers and notes, [(file offset, bytes) of each non-zero page], the file's length:
    past the last dumped mapping, whose zero pages are holes) of the core."""
    group = [t for t in k.tasks.values() if t.tgid == task.tgid and t.alive]
    threads = [task] + [t for t in group if t is not task]
    sig = info.signo
    notes = bytearray()
    for n, t in enumerate(threads):
        pr_reg, fp, extra = _thread_regs(k, t)
        notes += note(b"CORE", NT_PRSTATUS, _prstatus(k, t, sig, pr_reg, group))
        if n == 0:
            notes += note(b"CORE", NT_PRPSINFO, _prpsinfo(k.tasks.get(task.tgid, task)))
            notes += note(b"CORE", NT_SIGINFO, info.to_bytes())
            notes += note(b"CORE", NT_AUXV, proc_auxv(task))
        notes += note(b"CORE", NT_PRFPREG, fp)
        if extra is not None:
            notes += extra
    maps = list(task.mm.mappings)
    phnum = 1 + len(maps)
    off = _EHDR.size + phnum * _PHDR.size
    note_off = off
    off += len(notes)
    data_off = (off + PAGE - 1) & ~(PAGE - 1)
    phdrs = [_PHDR.pack(PT_NOTE, 0, note_off, 0, 0, len(notes), 0, 4)]
    runs: list[tuple[int, bytes]] = []
    for m in maps:
        data = task.mm.read(m.start, m.size, need="")
        size = _dump_size(m, data)
        flags = (4 if "r" in m.perms else 0) | (2 if "w" in m.perms else 0) | (1 if "x" in m.perms else 0)
        phdrs.append(_PHDR.pack(PT_LOAD, flags, data_off, m.start, 0, size, m.size, PAGE))
        zero = bytes(PAGE)
        for p in range(0, size, PAGE):
            chunk = data[p:p + PAGE]
            if chunk != zero[:len(chunk)]:
                runs.append((data_off + p, chunk))
        data_off += size
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    ehdr = _EHDR.pack(ident, ET_CORE, k.arch.ELF_MACHINE, 1, 0, _EHDR.size, 0, 0, _EHDR.size,
                      _PHDR.size, phnum, 64, 0, 0)
    return ehdr + b"".join(phdrs) + bytes(notes), runs, max(off, data_off)


def do_coredump(k: Any, cpu: Any, task: "Task", info: "KSigInfo") -> tuple[bool, str | None]:
    """do_coredump for a core-action signal: (dumped, what happened — for the trap log; None
    when RLIMIT_CORE is 0, the default, where a program asked for no core and nothing is said)."""
    limit = rlimit(k, task, RLIMIT_CORE)
    if limit == 0:
        return False, None
    if limit < PAGE:
        return False, f"RLIMIT_CORE {limit} < {PAGE}: no core"
    vfs = k.vfs
    cwd = cwd_of(task, vfs)
    hdir = vfs.dir_handle(cwd) if vfs.writable and cwd.host is not None else None
    if hdir is None:
        return False, "no core: the working directory is not writable (use --root DIR --root-rw)"
    # Everything below names "core" in the cwd's held handle (the directory itself, wherever a
    # rename moved it), never a host path: a stale or redirected path cannot point it elsewhere.
    try:
        os.unlink("core", dir_fd=hdir.fd)     # (a link named core goes, its target stays)
    except FileNotFoundError:
        pass
    except OSError as exc:
        return False, f"no core: cannot replace core: {exc.strerror}"
    head, runs, length = elf_core_bytes(k, task, info)
    try:
        fd = os.open("core", os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=hdir.fd)
    except OSError as exc:
        return False, f"no core: cannot create it: {exc.strerror}"
    written, complete = 0, True
    try:
        for pos, data in [(0, head), *runs]:
            if written + len(data) > limit:   # dump_emit: past RLIMIT_CORE the dump fails
                complete = False
                break
            os.pwrite(fd, data, pos)
            written += len(data)
        if complete:
            os.ftruncate(fd, length)        # (the last mapping's trailing zero pages are holes)
    finally:
        os.close(fd)
    made = vfs.child(cwd, "core")
    if made is not None and cpu is not None:
        # a new inode: its own times, and no attributes left in fs/meta.py's overlay by an
        # unlinked object whose host inode number the new file reuses (the replaced "core")
        fs_meta.file_update_time(k, cpu, made, created=True)
    where = "core" if cwd.path == "/" else f"{cwd.path.rstrip('/')}/core"
    if not complete:
        return False, f"core {where} truncated at RLIMIT_CORE {limit}: not dumped"
    return True, f"core dumped to {where} ({written} bytes written)"

