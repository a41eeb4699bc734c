"""execve and the ELF binary loader's dynamic half (fs/exec.c, fs/binfmt_elf.c).

``do_execve``: the path is resolved in the guest root only (``open_exec`` -> the VFS walk; a host
path means nothing to the guest), the argument and environment strings are copied with Linux's
limits (``copy_strings``: MAX_ARG_STRLEN per string, a quarter of the stack rlimit in total,
E2BIG past either), the file must be a regular file with an execute bit (EACCES) holding an ELF
for this machine (ENOEXEC otherwise, also when the image cannot be placed) or a ``#!`` script
whose interpreter is in the root (binfmt_script), a PT_INTERP
interpreter must exist in the root (ENOENT) and be an ELF (ELIBBAD).  Only then is the old image
replaced (``begin_new_exec``: de_thread kills the other threads, close-on-exec descriptors are
closed, comm and /proc/self/exe follow the new program) — a failed execve returns to the caller
with its image intact.

``load_elf_interp``: the interpreter is an ET_DYN image placed in the mmap area (Linux maps it
with a NULL hint, so it lands below mmap_base), and the auxiliary vector carries AT_BASE (its load
address), AT_PHDR/AT_PHNUM/AT_ENTRY of the *program*, and AT_EXECFN (the execve filename).
"""
from __future__ import annotations

from emukern.kernel.mm.mm_struct import MmStruct, mmf_init_mdwe

import os
from typing import TYPE_CHECKING, Any

from emukern.errors import ElfError, MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.fs import E2BIG, ELOOP, ENOEXEC
from emukern.kernel.fs.file import HostFile
from emukern.kernel.fs.vfs import S_IFREG, Node

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
    from emukern.kernel.task import Task
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.fs import meta as fs_meta
from emukern.kernel.cred import (CAP_SYS_PTRACE, PER_CLEAR_ON_SETID, bprm_creds_from_file, capable,
                                 commit_creds, cred_of)
from emukern.kernel.signal import futex_core
from emukern.kernel.signal import exit as signal_exit
from emukern.kernel.signal import delivery as signal_delivery
from emukern.kernel.uapi import USER_HZ
from emukern.kernel import vdso
from emukern.kernel.mm.layout import arch_pick_mmap_layout, stack_gap, topdown_base
from emukern.kernel.resource import RLIMIT_STACK, rlimit
from emukern.kernel.signal import flush_signal_handlers
from emukern.kernel.signal import rseq
from emukern.kernel.signal.ptrace import ptrace_exec_notify
from emukern.kernel.task import TaskState
from emukern.loader.elf import load_elf
from emukern.loader.stack import layout_initial_stack, standard_auxv
from emukern.machine.memory import PAGE, page_up

MAX_ARG_STRLEN = 32 * 4096          # include/uapi/linux/binfmts.h: one string, NUL included
MAX_ARG_STRINGS = 0x7FFFFFFF
ARG_MAX = 32 * 4096                 # the floor of the total (bprm_stack_limits)
ELIBBAD = 80
MAX_IMAGE = 1 << 30                 # bytes of one program or interpreter file emukern reads
BINPRM_BUF_SIZE = 256               # how much of a "#!" line binfmt_script looks at
BINPRM_MAX_RECURSION = 4            # script -> interpreter script -> ... before ELOOP


class ExecError(Exception):
    """An execve that fails before the point of no return: ``errno`` goes back to the caller."""

    def __init__(self, errno: int, why: str) -> None:
        super().__init__(why)
        self.errno = errno
        self.why = why


# the auxv's rseq entries (Linux 6.3 on): offsetof(struct rseq, end) with node_id and mm_cid,
# and __alignof__(struct rseq)
RSEQ_FEATURE_SIZE, RSEQ_ALIGN = 28, 32

def copy_strings(task: "Task", ptr: int) -> list[bytes]:
    """count() + copy_strings(): the NULL-terminated array of string pointers at ``ptr``.  A
    string longer than MAX_ARG_STRLEN is E2BIG; a bad pointer EFAULT."""
    out: list[bytes] = []
    if not ptr:
        return out
    mm = task.mm
    while True:
        try:
            p = mm.read_u64(ptr + 8 * len(out))
        except MemoryFault:
            raise ExecError(E.EFAULT, "argv/envp array unreadable") from None
        if not p:
            return out
        if len(out) >= MAX_ARG_STRINGS:
            raise ExecError(E2BIG, "too many strings")
        out.append(_user_string(mm, p))


def _user_string(mm: Any, addr: int) -> bytes:
    buf = bytearray()
    while len(buf) < MAX_ARG_STRLEN:
        m = mm.find(addr + len(buf))
        if m is None or "r" not in m.perms:
            raise ExecError(E.EFAULT, f"argument string at {addr:#x} unreadable")
        n = min(MAX_ARG_STRLEN - len(buf), m.end - (addr + len(buf)))
        chunk = mm.read(addr + len(buf), n)
        z = chunk.find(b"\0")
        if z >= 0:
            return bytes(buf + chunk[:z])
        buf += chunk
    raise ExecError(E2BIG, f"a string longer than MAX_ARG_STRLEN ({MAX_ARG_STRLEN} bytes)")


_STK_LIM = 8 << 20                  # include/uapi/linux/resource.h: the default stack rlimit


def bprm_stack_limits(argv: list[bytes], envp: list[bytes], stack_rlimit: int, filename: bytes) -> None:
    """fs/exec.c bprm_stack_limits with the checks copy_strings/copy_string_kernel make against
    its result.  Linux lets the strings (the file name execve was given, then the environment,
    then the arguments) and the pointer array use a quarter of the stack rlimit, capped at 3/4
    of _STK_LIM and never below ARG_MAX; the pointers count max(argc, 1) because an empty argv
    gets an "" pushed.  Any one string over MAX_ARG_STRLEN (NUL included) is E2BIG too.  The one
    implementation for both the first program (Kernel.load turns the ExecError into a clear
    error) and execve (the caller gets -E2BIG)."""
    limit = max(min(stack_rlimit // 4, _STK_LIM // 4 * 3), ARG_MAX)
    ptr_size = (max(len(argv), 1) + len(envp)) * 8
    if limit <= ptr_size:
        raise ExecError(E2BIG, f"{len(argv) + len(envp):,} argument and environment pointers take "
                               f"{ptr_size:,} bytes; Linux takes at most {limit:,} in all")
    total = 0
    for what, strings in (("program path", [filename]), ("environment string", envp), ("argument", argv)):
        for x in strings:
            n = len(x) + 1
            if n > MAX_ARG_STRLEN:
                raise ExecError(E2BIG, f"one {what} is {n:,} bytes; Linux takes at most "
                                       f"{MAX_ARG_STRLEN:,} (MAX_ARG_STRLEN) per string")
            total += n
    if total > limit - ptr_size:
        if limit == ARG_MAX:
            why = "ARG_MAX, the floor Linux keeps under any stack limit"
        elif limit == stack_rlimit // 4:
            why = f"a quarter of the {stack_rlimit >> 20} MiB stack limit"
        else:
            why = "3/4 of _STK_LIM, the cap Linux puts on any stack limit"
        raise ExecError(E2BIG, f"the arguments and environment take {total + ptr_size:,} bytes; "
                               f"Linux takes at most {limit:,} ({why})")


def open_exec(k: "Kernel", task: "Task", path: str) -> tuple[Node, bytes]:
    """do_open_execat: the node in the guest root and its bytes (only a regular file with an
    execute bit; never a host path, device, FIFO or /proc file)."""
    node = fs_namei.path_lookup(k, task, -100, path)
    if isinstance(node, int):
        raise ExecError(-node, f"{path}: lookup failed")
    return node, read_exec_file(node, path)


def load_script(blob: bytes, path: str) -> tuple[str, bytes]:
    """fs/binfmt_script.c: ``#!interpreter [one optional argument]`` in the first line (at most
    BINPRM_BUF_SIZE bytes; whitespace around both is dropped).  No interpreter: ENOEXEC."""
    head = blob[2:BINPRM_BUF_SIZE]
    nl = head.find(b"\n")
    if nl < 0 and len(blob) > BINPRM_BUF_SIZE:
        raise ExecError(ENOEXEC, f"{path}: '#!' line longer than {BINPRM_BUF_SIZE} bytes")
    line = (head if nl < 0 else head[:nl]).strip(b" \t")
    name, _, arg = line.replace(b"\t", b" ").partition(b" ")
    if not name:
        raise ExecError(ENOEXEC, f"{path}: '#!' names no interpreter")
    return name.decode("utf-8", "surrogateescape"), arg.strip(b" \t")


def read_exec_file(node: Node, path: str) -> bytes:
    if node.kind != S_IFREG or node.host is None or node.extra.get("special"):
        raise ExecError(E.EACCES, f"{path}: not a regular file of the root")
    if not node.mode & 0o111:
        raise ExecError(E.EACCES, f"{path}: no execute permission")
    try:
        fd = node.host.open(os.O_RDONLY | os.O_NONBLOCK)     # openat(held dir, name, O_NOFOLLOW)
    except OSError as e:
        raise ExecError(e.errno or E.EACCES, f"{path}: {e.strerror}") from None
    try:
        size = os.fstat(fd).st_size
        if size > MAX_IMAGE:
            raise ExecError(E.ENOMEM, f"{path}: {size} bytes is larger than emukern loads")
        chunks = []
        left = size
        while left > 0:
            c = os.read(fd, min(left, 1 << 24))
            if not c:
                break
            chunks.append(c)
            left -= len(c)
        return b"".join(chunks)
    finally:
        os.close(fd)


def load_elf_interp(k: "Kernel", task: "Task", mm: Any, image: Any) -> tuple[int, int] | None:
    """Map the program interpreter (PT_INTERP) into ``mm``: (its entry, its load base), or None
    for a static program.  Missing -> ENOENT, not an ELF for this machine -> ELIBBAD."""
    if not image.interp:
        return None
    node = fs_namei.path_lookup(k, task, -100, image.interp)
    if isinstance(node, int):
        raise ExecError(-node, f"interpreter {image.interp} not found in the guest root"
                        + ("" if k.vfs.root else " (no --root was given)"))
    blob = read_exec_file(node, image.interp) if node.mode & 0o111 else _read_any(node, image.interp)
    try:
        probe = load_elf(blob, name=image.interp)
    except ElfError as exc:
        raise ExecError(ELIBBAD, f"interpreter {image.interp}: {exc.message}") from None
    if probe.arch != image.arch or probe.interp or probe.elf_type != "ET_DYN":
        raise ExecError(ELIBBAD, f"interpreter {image.interp} is not a {image.arch} ET_DYN image")
    lo = min(s.vaddr for s in probe.segments) & ~(PAGE - 1)
    span = page_up(max(s.end for s in probe.segments)) - lo
    base = mm.find_free(span)
    interp = load_elf(blob, load_base=base, name=image.interp)
    for mp in interp.mappings():
        mm.map(mp.start, mp.size, mp.perms, "file:" + node.path)
    for seg in interp.segments:
        mm.write(seg.vaddr, seg.data, need="")
    return interp.entry, base


def _read_any(node: Node, path: str) -> bytes:
    if node.kind != S_IFREG or node.host is None or node.extra.get("special"):
        raise ExecError(E.EACCES, f"{path}: not a regular file of the root")
    node = Node(node.path, node.mode | 0o100, host=node.host)
    return read_exec_file(node, path)


AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH = 0x100, 0x1000


def _s32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


class _ExecAt:
    """What execveat adds to execve: the file was named through a descriptor, so the program
    is found from ``fd``/``flags`` and the name the new image (and a script's interpreter)
    sees is ``/dev/fd/N[/path]`` — Linux's alloc_bprm — unless the path was absolute or
    relative to the cwd.  ``inaccessible``: the descriptor is close-on-exec, so that name will
    not exist after exec and binfmt_script refuses (ENOENT) rather than start an interpreter
    that cannot open its script."""

    __slots__ = ("fd", "path", "flags", "filename", "inaccessible", "comm_from_dentry")

    def __init__(self, k: "Kernel", task: "Task", fd: int, path: str, flags: int) -> None:
        self.fd, self.path, self.flags = fd, path, flags
        self.inaccessible = False
        self.comm_from_dentry = False
        if fd == AT_FDCWD or path.startswith("/"):
            self.filename = path
        else:
            self.comm_from_dentry = not path
            self.filename = f"/dev/fd/{fd}" + (f"/{path}" if path else "")
            self.inaccessible = fd in task.files.cloexec


def open_execat(k: "Kernel", task: "Task", at: _ExecAt, path: str) -> tuple[Node, bytes]:
    """do_open_execat for execveat: only AT_SYMLINK_NOFOLLOW and AT_EMPTY_PATH are flags
    (EINVAL); an empty path with AT_EMPTY_PATH is the descriptor's own file (an O_PATH one
    too); a final symlink under AT_SYMLINK_NOFOLLOW is ELOOP, as opening it would be.  A file
    open for reading is read through its descriptor, so a program renamed or deleted since
    still runs (Linux holds the inode)."""
    if at.flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH):
        raise ExecError(E.EINVAL, f"execveat flags {at.flags:#x}: only AT_SYMLINK_NOFOLLOW and AT_EMPTY_PATH exist")
    if path == "":
        if at.fd == AT_FDCWD:
            node: Node | int = fs_namei.cwd_of(task, k.vfs)
        else:
            f = task.files.get(at.fd)
            if f is None or getattr(f, "node", None) is None:
                raise ExecError(E.EBADF, f"execveat: fd {at.fd} is not open")
            node = f.node
            if isinstance(f, HostFile) and f.fd >= 0:
                if node.kind != S_IFREG or not node.mode & 0o111:
                    read_exec_file(node, at.filename)     # (raises its EACCES)
                return node, _read_fd(f.fd, at.filename)
    else:
        node = fs_namei.path_lookup(k, task, at.fd, path, follow=not at.flags & AT_SYMLINK_NOFOLLOW)
        if not isinstance(node, int) and node.is_link:
            node = -ELOOP
    if isinstance(node, int):
        raise ExecError(-node, f"{at.filename}: lookup failed")
    return node, read_exec_file(node, at.filename)


def _read_fd(fd: int, path: str) -> bytes:
    """The whole file open on the host as ``fd`` (from offset 0: the descriptor's own offset is
    the program's business, as in Linux's kernel_read of the exec file)."""
    try:
        size = os.fstat(fd).st_size
        if size > MAX_IMAGE:
            raise ExecError(E.ENOMEM, f"{path}: {size} bytes is larger than emukern loads")
        chunks, off = [], 0
        while off < size:
            c = os.pread(fd, min(size - off, 1 << 24), off)
            if not c:
                break
            chunks.append(c)
            off += len(c)
        return b"".join(chunks)
    except OSError as e:
        raise ExecError(e.errno or E.EIO, f"{path}: {e.strerror}") from None


def do_execveat(k: "Kernel", cpu: Any, task: "Task", fd: int, path_ptr: int, argv_ptr: int, envp_ptr: int,
                flags: int) -> int:
    """sys_execveat: getname_uflags first (a NULL path is EFAULT even with AT_EMPTY_PATH, an
    empty one ENOENT without it), then execve's work with the program found from the
    descriptor (see _ExecAt)."""
    path = fs_namei._user_path(k, task, path_ptr)
    if isinstance(path, int):
        return path
    if path == "" and not flags & AT_EMPTY_PATH:
        return -E.ENOENT
    return do_execve(k, cpu, task, path_ptr, argv_ptr, envp_ptr, at=_ExecAt(k, task, _s32(fd), path, flags))


def do_execve(k: "Kernel", cpu: Any, task: "Task", path_ptr: int, argv_ptr: int, envp_ptr: int,
              at: _ExecAt | None = None) -> int:
    path = fs_namei._user_path(k, task, path_ptr) if at is None else at.path
    if isinstance(path, int):
        return path
    name = path if at is None else at.filename        # bprm->filename
    try:
        argv = copy_strings(task, argv_ptr)
        envp = copy_strings(task, envp_ptr)
        filename = name.encode("utf-8", "surrogateescape")     # bprm->filename, AT_EXECFN's string
        bprm_stack_limits(argv, envp, rlimit(k, task, RLIMIT_STACK), filename)
        if not argv:
            # Since 5.18 an empty argv gets one empty string, so a program that starts at
            # argv[1] does not walk into envp (the pointer count above already assumed it)
            argv = [b""]
        node, blob = open_exec(k, task, path) if at is None else open_execat(k, task, at, path)
        depth = 0
        while blob[:2] == b"#!":           # binfmt_script: run the named interpreter on the file
            depth += 1
            if depth > BINPRM_MAX_RECURSION:
                raise ExecError(ELOOP, f"{name}: too many levels of script interpreters")
            if at is not None and at.inaccessible:
                raise ExecError(E.ENOENT, f"{name}: a script named through a close-on-exec descriptor, "
                                          f"which its interpreter could not open")
            interp, arg = load_script(blob, name)
            argv = [interp.encode("utf-8", "surrogateescape")] + ([arg] if arg else []) + \
                [filename] + argv[1:]
            bprm_stack_limits(argv, envp, rlimit(k, task, RLIMIT_STACK), filename)
            node, blob = open_exec(k, task, interp)
        try:
            image = load_elf(blob, allow_interp=True, name=name)
        except ElfError as exc:
            raise ExecError(ENOEXEC, exc.message) from None
        if image.arch != k.config.arch:
            raise ExecError(ENOEXEC, f"{name} is a {image.arch} program")
        cpu.charge(k.cost.exec)
        old_mm = task.mm
        new_cred, secure, per_clear = bprm_creds(k, task, node)
        try:
            exec_image(k, task, image, [a.decode("utf-8", "surrogateescape") for a in argv],
                         [e.decode("utf-8", "surrogateescape") for e in envp], execfn=name, commit=False,
                         cred=new_cred, secure=secure)
        except ElfError as exc:
            raise ExecError(ENOEXEC, exc.message) from None
    except ExecError as exc:
        task.exec_error = exc.why         # (for the trap log)
        # (a /dev/fd/N name is execveat's, never a host path the CLI could point at)
        if exc.errno == E.ENOENT and len(k.exec_enoent) < 16 and name not in k.exec_enoent \
                and not (at is not None and name.startswith("/dev/fd/")):
            k.exec_enoent.append(name)    # (the guest's errno is unchanged; the CLI may explain)
        return -exc.errno
    # ---- the point of no return (begin_new_exec) ----
    de_thread(k, cpu, task)
    futex_core.exit_robust_list(k, cpu.now, task)    # (exec_mm_release: locks of the old image)
    exec_commit(k, task)
    commit_exec_creds(task, new_cred, secure, per_clear)
    signal_exit.complete_vfork_done(k, cpu, task)      # (exec_mm_release: a vfork parent goes on)
    signal_exit.mmput(k, old_mm)                       # exec drops the old mm: its last user frees it
    task.exe = node.path                  # (/proc/self/exe)
    # __set_task_comm: the file name's last part; since 6.14 a program run from a bare
    # descriptor (AT_EMPTY_PATH) is named after the file it runs instead of "N" of /dev/fd/N
    comm_from = node.path if at is not None and at.comm_from_dentry and k.version.release >= (6, 14) else name
    task.comm = comm_from.rsplit("/", 1)[-1].encode("utf-8", "surrogateescape")[:15].decode(
        "utf-8", "surrogateescape")        # __set_task_comm: the first 15 bytes, raw
    for wq in task.files.do_close_on_exec():
        k.sched.wake_queue(wq, cpu.now)
    flush_signal_handlers(task)           # caught signals go back to SIG_DFL (flush_signal_handlers)
    rseq.rseq_execve(task)                # the area was in the old memory: none registered
    cpu.attach_mm(task.mm)
    cpu.load_context(task.ctx)
    k.arch.exec_reset(cpu, task)
    ptrace_exec_notify(k, cpu, task)      # a traced task stops with SIGTRAP after exec
    return task.ctx["x"][k.arch.SYSCALL_ARG0_REG]   # execve returns what start_thread left in a0/x0


def bprm_creds(k: "Kernel", task: "Task", node: Node) -> tuple[Any, bool, bool]:
    """bprm_creds_from_file for the file execve runs (for a script, its interpreter: the file
    binfmt_script leaves in bprm->file, so a set-user-ID script grants nothing): its mode and
    owner as stat reports them (kernel/fs/meta.py's overlay: what chmod/chown set)."""
    m = fs_meta.meta_of(k, node) or {}
    # ptracer_capable: a tracer without CAP_SYS_PTRACE makes the exec unsafe
    untrusted = task.ptrace is not None and not capable(task.ptrace.tracer, CAP_SYS_PTRACE)
    return bprm_creds_from_file(cred_of(task), m.get("mode", node.mode), m.get("uid", 0),
                                m.get("gid", 0), task.no_new_privs, untrusted)


def commit_exec_creds(task: "Task", new: Any, secure: bool, per_clear: bool) -> None:
    """begin_new_exec's credential half, on the new mm: the personality loses its
    PER_CLEAR_ON_SETID flags after a set-id exec, a secure exec forgets its parent-death signal;
    the memory is dumpable unless the *old* credentials were already set-id (Linux looks at
    current before it commits), then commit_creds makes it non-dumpable if the ids or the
    permitted set changed."""
    old = cred_of(task)
    if per_clear:
        task.personality &= ~PER_CLEAR_ON_SETID
    if secure:
        task.pdeath_signal = 0
    task.mm.dumpable = 0 if old.euid != old.uid or old.egid != old.gid else 1
    if task.cred is not None or new != old:
        commit_creds(task, new)


def de_thread(k: "Kernel", cpu: Any, task: "Task") -> None:
    """Every other thread of the group exits; a non-leader exec'ing thread takes the leader's
    place and pid (fs/exec.c de_thread), so the parent still waits for the same pid."""
    others = [t for t in k.tasks.values() if t.tgid == task.tgid and t is not task and t.alive]
    for t in others:
        signal_exit._remove_from_queues(k, t)
        signal_exit.do_exit(k, cpu, t, 0, current=False)
    if task.is_thread_leader:
        return
    leader = k.tasks.get(task.tgid)
    old_tid = task.tid
    if leader is not None:
        leader.state = TaskState.DEAD
        task.parent = leader.parent
        task.children = leader.children
        if leader.parent is not None:
            sib = k.tasks.get(leader.parent.tgid, leader.parent).children
            for i, c in enumerate(sib):
                if c is leader:
                    sib[i] = task
        k.tasks.pop(old_tid, None)
        leader.tid = old_tid              # the old leader's slot keeps the exec'ing thread's tid
        k.tasks[old_tid] = leader
    task.tid = task.tgid
    k.tasks[task.tgid] = task


def exec_image(k: "Kernel", task: Task, image: Any, argv: list[str], envp: list[str],
               execfn: str | None = None, commit: bool = True, cred: Any = None,
               secure: bool = False) -> None:
    """Build the new image's mm and initial registers; ``commit`` installs them in ``task``
    (execve builds first and commits after its point of no return, see kernel/exec.py).
    A failed build leaves the old image alone and frees the new mm."""
    mm = MmStruct(pool=k.mem)
    mm.mdwe = mmf_init_mdwe(task.mm.mdwe) if task.mm is not None else 0
    try:
        _exec_mmap(k, task, mm, image, argv, envp, execfn, cred if cred is not None else cred_of(task), secure)
    except BaseException:  # noqa: BLE001 - cleanup only: free the new mm, then re-raise
        mm.release()
        raise
    if commit:
        exec_commit(k, task)


def _exec_mmap(k: "Kernel", task: Task, mm: MmStruct, image: Any, argv: list[str], envp: list[str],
               execfn: str | None, cred: Any, secure: bool) -> None:
    from emukern.kernel.exec import load_elf_interp
    stack_top = k.arch.STACK_TOP
    # the range above this stays for mmap, the stack and machine pages (the default layout's)
    mmap_base = topdown_base(stack_top, k.arch.STACK_SIZE)
    # the page layout (segments sharing a page get the union of permissions, like Linux's
    # overlapping mmaps), then the file bytes; bss stays zero
    for mp in image.mappings():
        if mp.start + mp.size > mmap_base - 0x1000_0000:
            from emukern.errors import ElfError
            raise ElfError(f"{image.path or 'program'}: a segment ends at {mp.start + mp.size:#x}, "
                           f"inside the range emukern keeps for mmap, the stack and machine pages "
                           f"(from {mmap_base - 0x1000_0000:#x})",
                           hint="link the program at a lower address (ld.lld's default is fine)")
        mm.map(mp.start, mp.size, mp.perms, "elf")
    for seg in image.segments:
        mm.write(seg.vaddr, seg.data, need="")
    mm.brk_start = mm.brk = image.brk_start
    arch_pick_mmap_layout(k, task, mm, stack_top)   # kernel/mm/layout.py (RLIMIT_STACK)
    interp = load_elf_interp(k, task, mm, image)      # PT_INTERP: (entry, AT_BASE) or None
    rnd = (task.tid * 0x9E3779B97F4A7C15 & (2**128 - 1)).to_bytes(16, "little")  # deterministic
    # AT_CLKTCK is CLOCKS_PER_SEC (USER_HZ, 100), whatever CONFIG_HZ the clock ticks at;
    # AT_RSEQ_FEATURE_SIZE is offsetof(struct rseq, end) (28 with mm_cid), AT_RSEQ_ALIGN 32
    # the vDSO (arch_setup_additional_pages): [vvar], then the image, whose sigreturn trampoline
    # sits where the one-page trampoline of --vdso off does (kernel/vdso)
    if want_vdso(k, image):
        vdso_base: int | None = vdso.map_vdso(k, mm, signal_delivery.sigtramp_addr(k))
    else:
        vdso_base = None
        signal_delivery.map_sigtramp(k, mm)         # the sigreturn trampoline page alone
    # AT_UID..AT_EGID are the new program's ids, AT_SECURE says its privilege changed
    auxv = standard_auxv(image, hwcap=k.arch.hwcap(), hwcap2=k.arch.hwcap2(),
                         uid=cred.uid, euid=cred.euid, gid=cred.gid, egid=cred.egid, secure=int(secure),
                         clktck=USER_HZ, base=interp[1] if interp else 0, sysinfo_ehdr=vdso_base,
                         minsigstksz=signal_delivery.signal_minsigstksz(k), dlinfo=k.arch.arch_dlinfo(),
                         rseq=(RSEQ_FEATURE_SIZE, RSEQ_ALIGN) if k.version.rseq_auxv else None)
    lay = layout_initial_stack(stack_top, argv=argv, envp=envp, auxv=auxv, random16=rnd,
                               platform=k.arch.elf_platform, execfn=execfn)
    # Like Linux, map a small stack and grow it on faults (expand_stack) up to the rlimit (a
    # smaller mapping also makes switch_mm cheaper); the first mapping is STACK_INIT, or more
    # when the arguments need it (setup_arg_pages likewise extends the stack VMA past them)
    init = max(k.arch.STACK_INIT, page_up(stack_top - lay.sp) + 4 * 4096)
    mm.map(stack_top - init, init, "rw-", "[stack]")
    mm.stack_limit = stack_top - stack_gap(rlimit(k, task, RLIMIT_STACK))
    mm.write(lay.sp, lay.blob)
    mm.saved_auxv = lay.auxv          # (/proc/self/auxv)
    task.exec_pending = (mm, interp[0] if interp else image.entry, lay.sp, argv)


def want_vdso(k: "Kernel", image: Any) -> bool:
    """--vdso: "on", "off", or "auto" (on for what a C toolchain linked; see MachineConfig.vdso)."""
    mode = k.config.vdso
    return mode == "on" or (mode == "auto" and (image.interp is not None or image.has_notes))


def exec_commit(k: "Kernel", task: Task) -> None:
    assert task.exec_pending is not None
    mm, entry, sp, argv = task.exec_pending
    task.exec_pending = None
    task.mm = mm
    task.argv = argv                             # (/proc/self/cmdline)
    task.ctx = k.arch.initial_context(entry, sp)
    task.thread = k.arch.new_thread_state(task, None, exec_=True)
