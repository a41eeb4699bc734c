"""The synthetic /proc, /dev and /sys trees mounted over the guest root.

/proc (fs/proc/): ``self`` (a link to the caller's pid, proc_self_get_link), ``<pid>/`` for every
live process with ``exe`` (a link to the guest path of the running image; execve updates it),
``maps`` (show_map_vma: one line per mapping), ``status`` and ``stat`` (the fields programs
parse, from the model), ``auxv`` (the auxiliary vector the process was
started with), ``cmdline``, ``comm``, ``cwd``, ``root`` (a link to ``/``: following it stays in
the guest root) and ``fd/``; ``cpuinfo`` (the architecture's c_show), and ``sys/`` (the sysctl
table, emukern.kernel.sysctl).  /dev: null, zero, full, random and urandom (drivers/char/mem.c),
the last two deterministic.  /sys: devices/system/cpu/{online,possible,present,cpuN} (what C
libraries read to count CPUs).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.fs.file import MAX_IO, DevNull, DevRandom, DevZero, MemFile, RandomStream, VfsFile
from emukern.kernel.mm.vma import VM_LOCKED, VM_LOCKONFAULT, lock_segments, lock_sync, locked_bytes
from emukern.machine.memory import (PAGE, PAGE_CACHED, PAGE_NONE, PAGE_OWN, PAGE_SHARED, PAGE_ZERO,
                                    is_shared, page_states)
from emukern.kernel.fs.shmfs import SHM_MOUNT, ShmFs
from emukern.kernel.mm import seal as mm_seal
from emukern.kernel.mm.secretmem import vma_is_secretmem
from emukern.kernel.resource import nr_open_sysctl
from emukern.kernel.sysctl import SysctlEntry
from emukern.kernel.task import TaskState
from emukern.kernel.fs.vfs import (DEV_DEV, PROC_DEV, S_IFCHR, S_IFDIR, S_IFLNK, S_IFREG, Node, fs_of)

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
    from emukern.kernel.task import Task
from emukern.kernel.signal import base as signal_base
from emukern.kernel import pid as kpid
from emukern.kernel.cred import CAP_LAST_CAP, cred_of


SYS_DEV = 0x15

# sysctls that programs read but emukern never lets change, shown read-only under /proc/sys and
# kept out of the sysctl table (a run's summary lists the table; these are no machine setting):
# the lowest address mmap hands out (mm/mmap.py's 64 KiB floor, CONFIG_DEFAULT_MMAP_MIN_ADDR on
# arm64 and riscv64), and pid_max at Linux's 64-bit ceiling: emukern hands pids out upwards and
# never wraps, so no pid below that is reused
FIXED_SYSCTLS: dict[str, SysctlEntry] = {
    e.path: e for e in (SysctlEntry("vm.mmap_min_addr", 65536, mode=0o444, kind="int"),
                        SysctlEntry("kernel.pid_max", 4194304, mode=0o444, kind="int"),
                        # the highest capability number this kernel knows (CAP_CHECKPOINT_RESTORE):
                        # libcap and libcap-ng size their sets by it
                        SysctlEntry("kernel.cap_last_cap", CAP_LAST_CAP, mode=0o444, kind="int"))}


# /proc/version (fs/proc/version.c): linux_proc_banner filled from the same utsname fields
# uname(2) reports (kernel/syscalls/sys.py's sys_uname: release, version), with a builder and
# compiler that say where the kernel really comes from
PROC_VERSION = b"Linux version 6.12.0-emukern (root@emukern) (emukern) #1 SMP emukern\n"


def _dir(path: str, children: Callable[[], dict[str, Node]], dev: int = PROC_DEV, mode: int = 0o555) -> Node:
    return Node(path, S_IFDIR | mode, dev=dev, children=children)


def _link(path: str, target: Callable[[], str]) -> Node:
    return Node(path, S_IFLNK | 0o777, dev=PROC_DEV, target=target)


def _magic_link(path: str, target: Callable[[], str], obj: Node | None = None) -> Node:
    """A /proc/<pid> link whose target is an object, not a name (proc_pid_get_link jumps to it):
    openat2's RESOLVE_NO_MAGICLINKS and the scoped lookups refuse to go through one.  ``obj`` is
    the inode to land on when no name reaches it (a memfd's); without it the target is walked."""
    extra: dict[str, Any] = {"magic": True}
    if obj is not None:
        extra["object"] = obj
    return Node(path, S_IFLNK | 0o777, dev=PROC_DEV, target=target, extra=extra)


def _fd_link(path: str, f: Any) -> Node:
    """/proc/<pid>/fd/N: a link to what the descriptor names.  An unnamed memfd's inode is
    reachable through it alone, so the link carries the inode (its opener makes a new open file
    description of it, as opening the link does on Linux)."""
    node = getattr(f, "node", None)
    obj = node if getattr(f, "kind", "") == "memfd" and node is not None else None
    return _magic_link(path, lambda: fd_target(f), obj)


def _file(path: str, content: Callable[[], bytes], mode: int = 0o444) -> Node:
    return Node(path, S_IFREG | mode, dev=PROC_DEV, content=content)


class ProcFs:
    """Builds /proc and /dev nodes on demand from the kernel's live state."""

    def __init__(self, k: "Kernel") -> None:
        self.k = k
        self.current: "Task | None" = None       # the task doing the lookup (for /proc/self)
        self.random = RandomStream()
        # writable sysctls that are no machine setting (kept out of the run's summary, like
        # FIXED_SYSCTLS): fs.nr_open, which kernel/resource.py reads
        self.fs_sysctls: dict[str, SysctlEntry] = {e.path: e for e in (nr_open_sysctl(),)}

    def mounts(self) -> dict[str, Callable[[], Node]]:
        return {"/proc": self.proc_root, "/dev": self.dev_root, "/sys": self.sys_root,
                SHM_MOUNT: self.shm_root}

    # ---- /dev/shm (a tmpfs: fs/shmfs.py) ----------------------------------------------------------
    @property
    def shm(self) -> ShmFs:
        fs = self.__dict__.get("_shm")
        if fs is None:
            fs = self.__dict__["_shm"] = ShmFs(getattr(self.k, "mem", None))
        return fs

    def shm_root(self) -> Node:
        return self.shm.root()

    # ---- /sys (only what C libraries read to count CPUs) ----------------------------------------
    def sys_root(self) -> Node:
        n = len(self.k.cpus)
        span = f"0-{n - 1}\n" if n > 1 else "0\n"

        def cpu_dir() -> dict[str, Node]:
            out = {name: _file(f"/sys/devices/system/cpu/{name}", lambda: span.encode())
                   for name in ("online", "possible", "present")}
            for i in range(n):
                out[f"cpu{i}"] = _dir(f"/sys/devices/system/cpu/cpu{i}", lambda: {}, dev=SYS_DEV)
            return out
        system = _dir("/sys/devices/system", lambda: {"cpu": _dir("/sys/devices/system/cpu", cpu_dir, dev=SYS_DEV)},
                      dev=SYS_DEV)
        devices = _dir("/sys/devices", lambda: {"system": system}, dev=SYS_DEV)
        return _dir("/sys", lambda: {"devices": devices}, dev=SYS_DEV)

    # ---- /dev ----------------------------------------------------------------------------------
    def dev_root(self) -> Node:
        def chr_node(name: str, major: int, minor: int, opener: Callable[[Node, int], Any]) -> Node:
            n = Node("/dev/" + name, S_IFCHR | 0o666, dev=DEV_DEV, rdev=(major << 8) | minor)
            n.opener = lambda flags, n=n: opener(n, flags)
            return n
        return _dir("/dev", lambda: {
            "null": chr_node("null", 1, 3, DevNull),
            "zero": chr_node("zero", 1, 5, DevZero),
            "random": chr_node("random", 1, 8, lambda n, f: DevRandom(n, f, self.random)),
            "urandom": chr_node("urandom", 1, 9, lambda n, f: DevRandom(n, f, self.random)),
            "shm": self.shm_root(),
        }, dev=DEV_DEV, mode=0o755)

    # ---- /proc ---------------------------------------------------------------------------------
    def proc_root(self) -> Node:
        def children() -> dict[str, Node]:
            out: dict[str, Node] = {}
            cur = self.current
            ns = self.reader_ns()
            if cur is not None:
                if ns is None:
                    out["self"] = _link("/proc/self", lambda: str(cur.tgid))
                    out["thread-self"] = _link("/proc/thread-self", lambda: f"{cur.tgid}/task/{cur.tid}")
                else:
                    me, tg = kpid.pid_nr_ns(self.k, cur, ns), kpid.task_tgid_nr_ns(self.k, cur, ns)
                    out["self"] = _link("/proc/self", lambda: str(tg))
                    out["thread-self"] = _link("/proc/thread-self", lambda: f"{tg}/task/{me}")
            out["cpuinfo"] = _file("/proc/cpuinfo", self.cpuinfo)
            out["uptime"] = _seq_file("/proc/uptime", self.uptime)
            out["loadavg"] = _seq_file("/proc/loadavg", self.loadavg)
            out["version"] = _file("/proc/version", lambda: PROC_VERSION)
            out["sys"] = self.sys_dir("/proc/sys", "")
            out["net"] = _link("/proc/net", lambda: "self/net")
            for t in self.k.tasks.values():
                if t.alive and t.is_thread_leader:
                    if ns is None:
                        out[str(t.tgid)] = self.pid_dir(t)
                    elif (nr := kpid.pid_nr_ns(self.k, t, ns)):
                        out[str(nr)] = self.pid_dir(t, nr)       # (only what the reader's namespace sees)
            return out
        return _dir("/proc", children)

    def cpuinfo(self) -> bytes:
        fn = getattr(self.k.arch, "cpuinfo", None)
        return fn().encode() if fn is not None else b""

    def reader_ns(self) -> Any:
        """The pid namespace /proc shows the reading task (None: the initial one): the one
        the reader's mount namespace mounted proc in (kernel/pid.py's proc_pid_ns)."""
        return kpid.proc_pid_ns(self.k, self.current)

    def _nr(self, t: "Task | None", tgid: bool = True) -> int:
        """``t``'s process (or thread) number as the reader sees it; 0 when it cannot."""
        ns = self.reader_ns()
        if t is None:
            return 0
        if ns is None:
            return t.tgid if tgid else t.tid
        return kpid.task_tgid_nr_ns(self.k, t, ns) if tgid else kpid.pid_nr_ns(self.k, t, ns)

    def loadavg(self) -> bytes:
        """loadavg_proc_show: the load averages (emukern keeps none: 0.00), the runnable and
        all tasks, and the last pid handed out in the reader's pid namespace."""
        live = [t for t in self.k.tasks.values() if t.alive]
        running = sum(1 for t in live if t.state == TaskState.RUNNABLE)
        # (the reader's own namespace here, not the mount's: loadavg_proc_show)
        ns = kpid.task_active_pid_ns(self.k, self.current) if self.current is not None else self.k.init_pid_ns
        return f"0.00 0.00 0.00 {running}/{len(live)} {kpid.ns_last_pid(self.k, ns)}\n".encode()

    def ns_links(self, t: "Task", base: str) -> Node:
        """/proc/<pid>/ns: one link per namespace kind, ``kind:[inode]`` (ns_get_name); the
        pid namespace ones name the task's own and its children's, the mount and net ones its
        mount and network namespaces; the others are the boot-time instances every task shares."""
        def pid_ns() -> str:
            return f"pid:[{kpid.task_active_pid_ns(self.k, t).inum}]"

        def children_ns() -> str:
            return f"pid:[{kpid.pid_ns_for_children(self.k, t).inum}]"
        fixed = {"cgroup": kpid.PROC_CGROUP_INIT_INO, "ipc": kpid.PROC_IPC_INIT_INO,
                 "time": kpid.PROC_TIME_INIT_INO,
                 "time_for_children": kpid.PROC_TIME_INIT_INO, "user": kpid.PROC_USER_INIT_INO,
                 "uts": kpid.PROC_UTS_INIT_INO}

        def children() -> dict[str, Node]:
            out = {name: _link(f"{base}/ns/{name}", lambda name=name, ino=ino: f"{name.split('_')[0]}:[{ino}]")
                   for name, ino in fixed.items()}
            out["mnt"] = _link(base + "/ns/mnt", lambda: f"mnt:[{t.mnt_ns or kpid.PROC_MNT_INIT_INO}]")
            out["net"] = _link(base + "/ns/net", lambda: f"net:[{_net_inum(t)}]")
            out["pid"] = _link(base + "/ns/pid", pid_ns)
            # pidns_for_children_get: a namespace whose init is not born yet has no file to name
            nxt = kpid.pid_ns_for_children(self.k, t)
            if nxt.level == 0 or nxt.child_reaper is not None:
                out["pid_for_children"] = _link(base + "/ns/pid_for_children", children_ns)
            return dict(sorted(out.items()))
        return _dir(base + "/ns", children, mode=0o511)

    def pid_dir(self, t: "Task", nr: int = 0) -> Node:
        base = f"/proc/{nr or t.tgid}"

        def children() -> dict[str, Node]:
            return {
                "exe": _magic_link(base + "/exe", lambda: exe_path(t)),
                "cwd": _magic_link(base + "/cwd", lambda: getattr(fs_of(t).cwd, "path", "/")),
                "root": _magic_link(base + "/root", lambda: "/"),
                "maps": _file(base + "/maps", lambda: proc_maps(t)),
                "smaps": _file(base + "/smaps", lambda: proc_smaps(t)),
                "smaps_rollup": _file(base + "/smaps_rollup", lambda: proc_smaps_rollup(t)),
                "pagemap": _pagemap_node(base + "/pagemap", t),
                "auxv": _file(base + "/auxv", lambda: proc_auxv(t), mode=0o400),
                "cmdline": _file(base + "/cmdline", lambda: b"".join(
                    a.encode("utf-8", "surrogateescape") + b"\0" for a in t.argv)),
                "comm": _file(base + "/comm", lambda: (t.comm + "\n").encode("utf-8", "surrogateescape"), mode=0o644),
                "status": _file(base + "/status", lambda: self.proc_status(t)),
                "stat": _file(base + "/stat", lambda: self.proc_stat(t)),
                "fd": _dir(base + "/fd", lambda: {
                    str(fd): _fd_link(f"{base}/fd/{fd}", f)
                    for fd, f in sorted(t.files.fds.items())} if t.files is not None else {}),
                "mem": _mem_node(base + "/mem", t),
                **self.pid_extra(t, base),
            }
        return _dir(base, children)

    # ---- task/<tid>, fdinfo/, uptime -------------------------------------------------------------
    def pid_extra(self, t: "Task", base: str) -> dict[str, Node]:
        """The entries beside the basic ones: ``task/`` (one directory per live thread, named by
        its TID: what proc_task_readdir lists) and ``fdinfo/``."""
        return {
            "task": _dir(base + "/task", lambda: {str(n): self.tid_dir(x, f"{base}/task/{n}")
                                                 for x in sorted(self._threads(t), key=lambda x: x.tid)
                                                 if (n := self._nr(x, tgid=False))}),
            "fdinfo": self.fdinfo_dir(t, base + "/fdinfo"),
            "map_files": _dir(base + "/map_files", lambda: {
                name: _magic_link(f"{base}/map_files/{name}", lambda target=target: target)
                for name, target in map_files(t)}, mode=0o500),
            "syscall": _seq_file(base + "/syscall", lambda: self.proc_syscall(t)),
            "wchan": _file(base + "/wchan", lambda: proc_wchan(t)),
            "ns": self.ns_links(t, base),
            "net": _dir(base + "/net", lambda: {
                "protocols": _seq_file(base + "/net/protocols", lambda: self.net_protocols(t))}),
        }

    def net_protocols(self, t: "Task") -> bytes:
        """/proc/<pid>/net/protocols (proto_seq_show) for ``t``'s network namespace: the header
        and a line per protocol emukern has -- AF_UNIX's two, newest registered first as
        proto_register lists them (af_unix registers the datagram one first).  Only the socket
        count (sock_prot_inuse_get, kept by kernel/net/net_namespace.py) changes; the other
        columns are the fixed facts of the two protos: no memory accounting (-1, NI), a slab,
        built in, and only close (and for streams unhash) among the methods asked about."""
        net = t.net_ns if t.net_ns is not None else getattr(self.k, "init_net", None)
        inuse = net.inuse if net is not None else {}
        out = ["%-9s %-4s %-8s %-6s %-5s %-7s %-4s %-10s %s" % (
            "protocol", "size", "sockets", "memory", "press", "maxhdr", "slab", "module",
            " ".join(_PROTO_METHODS) + "\n")]
        for name, methods in (("UNIX-STREAM", {"cl", "uh"}), ("UNIX", {"cl"})):
            cols = " ".join("%2c" % ("y" if m in methods else "n") for m in _PROTO_METHODS)
            out.append("%-9s %4u %6d  %6d   %-3s %6u   %-3s  %-10s %s\n" % (
                name, UNIX_SOCK_SIZE, inuse.get(name, 0), -1, "NI", 0, "yes", "kernel", cols))
        return "".join(out).encode()

    def proc_syscall(self, t: "Task") -> bytes:
        """proc_pid_syscall: ``nr arg0..arg5 sp pc`` of the syscall the task is in.  emukern
        reads the live registers of a task on a CPU only, so this is exact for a task reading
        its own file (the selftest's case); any other task reads "running" (what Linux shows
        for a task that is not stopped in a syscall)."""
        for pcpu, cpu in zip(self.k.percpu, self.k.cpus):
            if pcpu.curr is t:
                nr, *args = cpu.syscall_regs()[:7]
                words = [*args, self.k.arch.user_sp(cpu), cpu.get_pc()]
                return (f"{nr} " + " ".join(f"0x{w & (2**64 - 1):x}" for w in words) + "\n").encode()
        return b"running\n"

    def tid_dir(self, t: "Task", base: str) -> Node:
        """/proc/<pid>/task/<tid>: the thread's own status, stat and comm; its process's files."""
        def children() -> dict[str, Node]:
            return {
                "exe": _magic_link(base + "/exe", lambda: exe_path(t)),
                "maps": _file(base + "/maps", lambda: proc_maps(t)),
                "cmdline": _file(base + "/cmdline", lambda: b"".join(
                    a.encode("utf-8", "surrogateescape") + b"\0" for a in t.argv)),
                "comm": _file(base + "/comm", lambda: (t.comm + "\n").encode(), mode=0o644),
                "status": _file(base + "/status", lambda: self.proc_status(t)),
                "stat": _file(base + "/stat", lambda: self.proc_stat(t)),
                "fd": _dir(base + "/fd", lambda: {
                    str(fd): _fd_link(f"{base}/fd/{fd}", f)
                    for fd, f in sorted(t.files.fds.items())} if t.files is not None else {}),
                "fdinfo": self.fdinfo_dir(t, base + "/fdinfo"),
            }
        return _dir(base, children)

    def fdinfo_dir(self, t: "Task", path: str) -> Node:
        return _dir(path, lambda: {str(fd): _file(f"{path}/{fd}", lambda fd=fd, f=f: fdinfo(t, fd, f))
                                   for fd, f in sorted(t.files.fds.items())} if t.files is not None else {},
                    mode=0o500)

    def uptime(self) -> bytes:
        """uptime_proc_show: seconds since boot, and the CPUs' summed idle time, to 1/100 s."""
        now = max(c.now for c in self.k.cpus)
        idle = sum(int(getattr(c, "idle_cycles", 0)) for c in self.k.cpus)
        up, idl = int(self.k.clock.ns(now)) // 10**7, int(self.k.clock.ns(idle)) // 10**7
        return f"{up // 100}.{up % 100:02d} {idl // 100}.{idl % 100:02d}\n".encode()

    def _threads(self, t: "Task") -> list["Task"]:
        return [x for x in self.k.tasks.values() if x.tgid == t.tgid and x.alive]

    def proc_status(self, t: "Task") -> bytes:
        """proc_pid_status: the fields programs parse, from the model (uid/gid 0: emukern's
        processes run as root)."""
        ppid = t.parent.tgid if t.parent is not None else 0
        tgid, pid = t.tgid, t.tgid
        ns = self.reader_ns()
        if ns is not None:
            # the numbers as the reader's namespace sees them (a parent outside it: 0)
            ppid = self._nr(t.parent)
            tgid, pid = self._nr(t), self._nr(t)
        cpus = sorted(t.affinity) if t.affinity else list(range(len(self.k.cpus)))
        vm = sum(m.size for m in t.mm.mappings) // 1024
        state = "R (running)" if t.state.value == "runnable" else "S (sleeping)" if t.alive else "Z (zombie)"
        if t.alive and t.wait_reason.startswith("traced"):
            state = "t (tracing stop)"                 # kernel/ptrace.py's ptrace-stop
        tracer = t.ptrace.tracer.tgid if t.ptrace is not None else 0
        return (f"Name:\t{t.comm}\nUmask:\t{fs_of(t).umask:04o}\nState:\t{state}\nTgid:\t{tgid}\n"
                f"Pid:\t{pid}\nPPid:\t{ppid}\nTracerPid:\t{tracer}\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n"
                f"FDSize:\t{t.files.MAX_FDS if t.files is not None else 0}\n{self.ns_status(t)}"
                f"Kthread:\t0\nVmSize:\t{vm:8d} kB\n"
                f"{status_rss(t)}"
                f"Threads:\t{len(self._threads(t))}\n{self._status_caps(t)}"
                f"Cpus_allowed_list:\t{','.join(map(str, cpus))}\n").encode("utf-8", "surrogateescape")

    @staticmethod
    def _status_caps(t: "Task") -> str:
        """task_cap (fs/proc/array.c): the five capability sets as 16 hex digits each, then
        whether execve may grant privilege (NoNewPrivs)."""
        c = cred_of(t)
        sets = (("CapInh", c.cap_inheritable), ("CapPrm", c.cap_permitted), ("CapEff", c.cap_effective),
                ("CapBnd", c.cap_bset), ("CapAmb", c.cap_ambient))
        return "".join(f"{name}:\t{v:016x}\n" for name, v in sets) + f"NoNewPrivs:\t{int(t.no_new_privs)}\n"

    def ns_status(self, t: "Task") -> str:
        """proc_pid_status's NStgid, NSpid, NSpgid and NSsid: each number from the reader's pid
        namespace down to the one the task was born in."""
        ns = self.reader_ns() or self.k.init_pid_ns
        leader = self.k.tasks.get(t.tgid, t)

        def line(name: str, who: "Task | None") -> str:
            nrs = kpid.upids_of(self.k, who, ns) if who is not None else []
            return f"{name}:\t" + "\t".join(map(str, nrs or [0])) + "\n"
        pgid, sid = signal_base.pgid_of(self.k, t), signal_base.sid_of(self.k, t)
        if ns.level == 0 and t.pid_ns is None:
            return (f"NStgid:\t{t.tgid}\nNSpid:\t{t.tid}\nNSpgid:\t{pgid}\nNSsid:\t{sid}\n")
        return (line("NStgid", leader) + line("NSpid", t) + line("NSpgid", self.k.tasks.get(pgid))
                + line("NSsid", self.k.tasks.get(sid)))

    def proc_stat(self, t: "Task") -> bytes:
        """proc_pid_stat's first fields (pid, comm, state, ppid, pgrp, session, ..., utime, stime
        in clock ticks, num_threads, starttime, vsize); the rest read 0."""
        hz = 100
        tick = lambda c: int(self.k.clock.ns(c)) * hz // 10**9     # noqa: E731
        th = self._threads(t)
        ppid = t.parent.tgid if t.parent is not None else 0
        state = "R" if t.state.value == "runnable" else "S" if t.alive else "Z"
        vm = sum(m.size for m in t.mm.mappings)
        if self.reader_ns() is not None:
            ppid = self._nr(t.parent)
        f = [self._nr(t), f"({t.comm})", state, ppid, signal_base.pgid_of(self.k, t), signal_base.sid_of(self.k, t), 0, -1, 0,
             0, 0, 0, 0, tick(sum(x.utime for x in th)), tick(sum(x.stime for x in th)), 0, 0, 20, 0,
             len(th), 0, tick(t.start_time), vm, vm // 4096]
        f += [0] * (52 - len(f))
        return (" ".join(map(str, f)) + "\n").encode("utf-8", "surrogateescape")

    def sys_dir(self, path: str, prefix: str) -> Node:
        """/proc/sys/<prefix>: directories from the dotted sysctl names, entries as files."""
        def children() -> dict[str, Node]:
            out: dict[str, Node] = {}
            table = {**FIXED_SYSCTLS, **self.fs_sysctls, **self.k.ipc_ns.mq_sysctls, **self.k.ipc_ns.id_sysctls,
                     **self.k.sysctl.entries}
            for key, entry in sorted(table.items()):
                if prefix and not key.startswith(prefix + "."):
                    continue
                rest = key[len(prefix) + 1:] if prefix else key
                head, dot, _ = rest.partition(".")
                sub = f"{path}/{head}"
                if dot:
                    out[head] = self.sys_dir(sub, (prefix + "." if prefix else "") + head)
                else:
                    n = Node(sub, S_IFREG | entry.mode, dev=PROC_DEV)
                    n.extra["sysctl"] = entry
                    out[head] = n
            return out
        return _dir(path, children)

    def open_synthetic(self, node: Node, flags: int) -> Any:
        if node.opener is not None:
            return node.opener(flags)
        assert node.content is not None
        return MemFile(node, flags, node.content())


# the method columns of /proc/net/protocols, in proto_seq_printf's order
_PROTO_METHODS = ("cl", "co", "di", "ac", "io", "in", "de", "sh", "ss", "gs", "se", "re", "bi",
                  "br", "ha", "uh", "gp", "em")
UNIX_SOCK_SIZE = 1088          # sizeof(struct unix_sock): an estimate for a 64-bit 6.12 build, not checked


def _net_inum(t: "Task") -> int:
    """The inode number of ``t``'s network namespace (the boot-time one's: PROC_NET_INIT_INO)."""
    return t.net_ns.inum if t.net_ns is not None else kpid.PROC_NET_INIT_INO


def exe_path(t: "Task") -> str:
    return t.exe or "/" + t.comm


def fd_target(f: Any) -> str:
    node = getattr(f, "node", None)
    if node is not None:
        return node.path
    kind = getattr(f, "kind", "file")
    if kind.startswith("pipe"):
        return f"pipe:[{getattr(f, 'ino', 0)}]"
    return "/dev/pts/0" if kind in ("stdin", "stdout", "stderr") else f"anon_inode:[{kind}]"


def proc_maps(t: "Task") -> bytes:
    """show_map_vma: ``start-end perms offset dev inode``, the name padded to column 73 (private
    mappings show 'p').  emukern does not keep file offsets or inodes per mapping: both read 0."""
    lines = [_map_line(t, m, lo, hi) for m in t.mm.mappings for lo, hi, _fl in lock_segments(t.mm, m)]
    return ("\n".join(lines) + "\n").encode() if lines else b""


def _map_line(t: "Task", m: Any, lo: int, hi: int) -> str:
    """One show_map_vma line for [lo, hi) of mapping ``m`` (a mapping shows as more than one
    vma where mlock/munlock gave part of it other flags, as Linux splits the vma)."""
    perms = m.perms + ("s" if m.name.startswith("shared:") else "p")
    name = m.name.split(":", 1)[1] if m.name.startswith(("file:", "shared:")) else (
        m.name if m.name.startswith("[") and m.name != "[anon]" else "")
    if m.name == "elf":
        name = exe_path(t)
    head = f"{lo:08x}-{hi:08x} {perms} 00000000 00:00 0 "
    return (head.ljust(73) + name) if name else head.rstrip()


# ---- residency: smaps, smaps_rollup, pagemap, status's VmRSS (fs/proc/task_mmu.c) ----------------
_ANON_NAMES = frozenset(("[anon]", "[heap]", "[stack]", "file:/dev/zero"))


def _is_anon(m: Any) -> bool:
    """vma_is_anonymous, as smaps counts it: private memory with no file behind its pages."""
    return m.name in _ANON_NAMES and not is_shared(m)


def _usage(t: "Task", m: Any, lo: int, hi: int) -> dict[str, int]:
    """smap_gather_stats for [lo, hi) of ``m``, in bytes (Pss exact to the byte, as Linux keeps
    it shifted): every resident page counts in Rss except the zero page (vm_normal_page has no
    page for it).  A page a fork shares (PAGE_SHARED in a private mapping) counts as shared by
    two (the usual case; emukern does not keep map counts), its Pss half a page; the pages of a
    shared mapping count as this process's own (mapped once).  Anonymous pages are dirty."""
    states = page_states(m, lo, hi)
    if states is None:                       # the host does not tell: all there, all private
        states = bytes([PAGE_OWN]) * ((hi - lo) // PAGE)
    own, shared = states.count(PAGE_OWN), states.count(PAGE_SHARED)
    u = dict.fromkeys(("rss", "pss", "shared_clean", "shared_dirty", "private_clean",
                       "private_dirty", "anon", "shmem", "file"), 0)
    anon, shm = _is_anon(m), is_shared(m)
    if shm:
        own, shared = own + shared, 0
    u["rss"] = (own + shared) * PAGE
    u["pss"] = own * PAGE + shared * PAGE // 2
    if anon or shm:
        u["private_dirty"], u["shared_dirty"] = own * PAGE, shared * PAGE
    else:
        u["private_clean"], u["shared_clean"] = own * PAGE, shared * PAGE
    if anon:
        u["anon"] = u["rss"]
    elif shm:
        u["shmem"] = u["rss"]
    else:
        u["file"] = u["rss"]
    return u


def vm_flags(m: Any, lock: int, sealed: bool = False) -> str:
    """show_smap_vma_flags: the mnemonics in Linux's bit order.  No 'sd': arm64 and riscv have
    no soft-dirty tracking in 6.12 (CONFIG_MEM_SOFT_DIRTY is not selectable there).  'sl' is
    VM_SEALED (mseal), bit 63: the last."""
    p, shm = m.perms, is_shared(m)
    f = [n for n, on in (("rd", "r" in p), ("wr", "w" in p), ("ex", "x" in p), ("sh", shm),
                         ("mr", True), ("mw", True), ("me", True), ("ms", shm),
                         ("gd", m.name == "[stack]"), ("lo", bool(lock & VM_LOCKED)),
                         ("lf", bool(lock & VM_LOCKONFAULT)),
                         # VM_ACCOUNT: private writable memory charged to the commit limit
                         ("ac", not shm and "w" in p and _is_anon(m)), ("sl", sealed)) if on]
    return " ".join(f) + " "


def _kb(n: int) -> int:
    return n >> 10


def _smap_body(u: dict[str, int], size: int | None, locked: int, rollup: bool) -> str:
    rows: list[tuple[str, int]] = []
    if size is not None:
        rows += [("Size:", size), ("KernelPageSize:", PAGE), ("MMUPageSize:", PAGE)]
    rows += [("Rss:", u["rss"]), ("Pss:", u["pss"]), ("Pss_Dirty:", u["pss_dirty"])]
    if rollup:
        rows += [("Pss_Anon:", u["pss_anon"]), ("Pss_File:", u["pss_file"]), ("Pss_Shmem:", u["pss_shmem"])]
    rows += [("Shared_Clean:", u["shared_clean"]), ("Shared_Dirty:", u["shared_dirty"]),
             ("Private_Clean:", u["private_clean"]), ("Private_Dirty:", u["private_dirty"]),
             ("Referenced:", u["rss"]), ("Anonymous:", u["anon"]), ("KSM:", 0), ("LazyFree:", 0),
             ("AnonHugePages:", 0), ("ShmemPmdMapped:", 0), ("FilePmdMapped:", 0),
             ("Shared_Hugetlb:", 0)]
    out = "".join(f"{n:<16}{_kb(v):8d} kB\n" for n, v in rows)
    out += f"Private_Hugetlb: {0:7d} kB\n"            # (the one name too long for the column)
    out += "".join(f"{n:<16}{_kb(v):8d} kB\n" for n, v in (("Swap:", 0), ("SwapPss:", 0), ("Locked:", locked)))
    return out


def _with_pss_parts(u: dict[str, int], m: Any) -> dict[str, int]:
    u["pss_dirty"] = u["pss"] if _is_anon(m) or is_shared(m) else 0
    u["pss_anon"] = u["pss"] if _is_anon(m) else 0
    u["pss_shmem"] = u["pss"] if is_shared(m) else 0
    u["pss_file"] = u["pss"] - u["pss_anon"] - u["pss_shmem"]
    return u


def proc_smaps(t: "Task") -> bytes:
    """show_smap: each vma's maps line, its sizes and page counts, and its VmFlags."""
    out = []
    for m in t.mm.mappings:
        for lo, hi, lock in lock_segments(t.mm, m):
            u = _with_pss_parts(_usage(t, m, lo, hi), m)
            out.append(_map_line(t, m, lo, hi) + "\n"
                       + _smap_body(u, hi - lo, u["pss"] if lock & VM_LOCKED else 0, False)
                       + "THPeligible:           0\n"
                       + f"VmFlags: {vm_flags(m, lock, mm_seal.range_sealed(t.mm, lo, lo + 1))}\n")
    return "".join(out).encode("utf-8", "surrogateescape")


def proc_smaps_rollup(t: "Task") -> bytes:
    """show_smaps_rollup: the sums over every vma, under one line spanning the first vma's
    start to the last one's end, named [rollup]."""
    maps = t.mm.mappings
    if not maps:
        return b""
    total: dict[str, int] = {}
    locked = 0
    for m in maps:
        for lo, hi, lock in lock_segments(t.mm, m):
            u = _with_pss_parts(_usage(t, m, lo, hi), m)
            for key, v in u.items():
                total[key] = total.get(key, 0) + v
            if lock & VM_LOCKED:
                locked += u["pss"]
    head = f"{maps[0].start:08x}-{maps[-1].end:08x} ---p 00000000 00:00 0 "
    return (head.ljust(73) + "[rollup]\n" + _smap_body(total, None, locked, True)).encode()


def status_rss(t: "Task") -> str:
    """task_mem's VmLck, VmRSS and its three parts (anonymous, file, shmem pages), in kB."""
    anon = file = shmem = 0
    lock_sync(t.mm)
    for m in t.mm.mappings:
        u = _usage(t, m, m.start, m.end)
        anon, file, shmem = anon + u["anon"], file + u["file"], shmem + u["shmem"]
    lck = locked_bytes(t.mm)
    return (f"VmLck:\t{_kb(lck):8d} kB\nVmRSS:\t{_kb(anon + file + shmem):8d} kB\n"
            f"RssAnon:\t{_kb(anon):8d} kB\nRssFile:\t{_kb(file):8d} kB\nRssShmem:\t{_kb(shmem):8d} kB\n")


# pagemap's entry bits (Documentation/admin-guide/mm/pagemap.rst)
PM_PRESENT, PM_FILE, PM_MMAP_EXCLUSIVE = 1 << 63, 1 << 61, 1 << 56


class PagemapFile(VfsFile):
    """/proc/PID/pagemap: 8 bytes per virtual page at offset vpn * 8 (pagemap_read): bit 63
    when a page is mapped there, 61 when it is a file's or shmem's page, 56 when this is its
    only mapping, and a PFN of 0 (what a reader without CAP_SYS_ADMIN sees; emukern has no
    physical frames to show).  Unmapped addresses and pages not faulted in read 0.  The
    offset and the count must be multiples of 8 (EINVAL); reads past TASK_SIZE are empty."""

    def __init__(self, node: Node, flags: int, t: "Task", task_size: int) -> None:
        super().__init__(node, flags)
        self.task = t
        self.task_size = task_size

    def pread(self, count: int, off: int) -> bytes | int:
        if off % 8 or count % 8:
            return -E.EINVAL
        count = min(count, MAX_IO)
        start = off // 8 * PAGE
        end = min(self.task_size, start + count // 8 * PAGE)
        if start >= end:
            return b""
        out = bytearray(8 * ((end - start) // PAGE))
        mm = self.task.mm
        lock_sync(mm)
        for m in mm.mappings:
            lo, hi = max(m.start, start), min(m.end, end)
            if lo >= hi:
                continue
            states = page_states(m, lo, hi)
            if states is None:
                states = bytes([PAGE_OWN]) * ((hi - lo) // PAGE)
            filed = not _is_anon(m)
            for i, st in enumerate(states):
                if st in (PAGE_NONE, PAGE_CACHED):
                    continue
                v = PM_PRESENT
                if st != PAGE_ZERO:
                    if filed:
                        v |= PM_FILE
                    if st == PAGE_OWN or (st == PAGE_SHARED and is_shared(m)):
                        v |= PM_MMAP_EXCLUSIVE
                j = (lo - start) // PAGE + i
                out[8 * j: 8 * j + 8] = v.to_bytes(8, "little")
        return bytes(out)


def _pagemap_node(path: str, t: "Task") -> Node:
    n = Node(path, S_IFREG | 0o400, dev=PROC_DEV)
    n.opener = lambda flags, n=n: PagemapFile(n, flags, t, PAGEMAP_TASK_SIZE)
    return n


# where pagemap's entries end: the 48-bit user address space Debian's arm64 and riscv64 kernels
# give a process (emukern maps nothing of the process's above it)
PAGEMAP_TASK_SIZE = 1 << 48


def map_files(t: "Task") -> list[tuple[str, str]]:
    """/proc/PID/map_files: one link per file-backed mapping, named ``start-end`` in hex without
    leading zeros (the one spelling proc_map_files_lookup accepts), to the file it maps."""
    out = []
    for m in t.mm.mappings:
        if m.name == "elf":
            target = exe_path(t)
        elif m.name.startswith(("file:", "shared:")):
            target = m.name.split(":", 1)[1]
        else:
            continue
        out.append((f"{m.start:x}-{m.end:x}", target))
    return out


def proc_wchan(t: "Task") -> bytes:
    """proc_pid_wchan: "0" for a task that is not asleep (the reader itself always runs); a
    sleeping task shows where it waits (emukern's name for the wait, not a kernel symbol)."""
    if t.state == TaskState.BLOCKED and t.wait_reason:
        return t.wait_reason.encode()
    return b"0"


def proc_auxv(t: "Task") -> bytes:
    """The auxv pairs as the process got them (mm->saved_auxv), AT_NULL included."""
    out = bytearray()
    for a, v in t.mm.saved_auxv:
        out += (a & (2**64 - 1)).to_bytes(8, "little") + (v & (2**64 - 1)).to_bytes(8, "little")
    return bytes(out)


O_ACCMODE_BITS, O_CLOEXEC_BIT = 3, 0o2000000


def fdinfo(t: "Task", fd: int, f: Any) -> bytes:
    """seq_show: the position, the status flags (O_CLOEXEC from the descriptor table, as Linux
    adds it), mnt_id and ino, then what the file kind shows (an eventfd's counter and mode)."""
    flags = getattr(f, "flags", None)
    if not isinstance(flags, int):
        flags = (2 if f.readable and f.writable else (1 if f.writable else 0)) | \
            (0o4000 if getattr(f, "nonblock", False) is True else 0)
    flags &= ~(0o100 | 0o200 | 0o1000 | O_CLOEXEC_BIT)          # open-time only: not kept
    if t.files is not None and fd in t.files.cloexec:
        flags |= O_CLOEXEC_BIT
    node = getattr(f, "node", None)
    ino = getattr(node, "ino", 0) or getattr(f, "ino", 0) or 0
    out = f"pos:\t{getattr(f, 'pos', 0) or 0}\nflags:\t0{flags:o}\nmnt_id:\t{getattr(node, 'dev', 0) or 0}\nino:\t{ino}\n"
    show = getattr(f, "show_fdinfo", None)
    if callable(show):
        out += show()
    elif getattr(f, "kind", "") == "eventfd":
        out += (f"eventfd-count: {getattr(f, 'count', 0):16x}\neventfd-id: {id(f) & 0xFFFF}\n"
                f"eventfd-semaphore: {int(bool(getattr(f, 'semaphore', False)))}\n")
    return out.encode()


class SeqFile(MemFile):
    """A /proc file that is made again by each read from offset 0 (seq_read restarts its show
    there): a program that keeps one descriptor and preads it sees the clock move."""

    def pread(self, count: int, off: int) -> bytes | int:
        if off == 0 and self.node.content is not None:
            self.data = self.node.content()
        return super().pread(count, off)


def _seq_file(path: str, content: Callable[[], bytes]) -> Node:
    n = _file(path, content)
    n.opener = lambda flags, n=n: SeqFile(n, flags, content())
    return n


class ProcMemFile(VfsFile):
    """/proc/PID/mem (fs/proc/base.c mem_rw): the file offset is a user address of the process,
    and a read or write goes through its page tables as a debugger's would (FOLL_FORCE): pages
    the process itself may not read or write are reached too, except that a write into a
    read-only *shared* mapping is refused (forcing it would change the file or the other
    processes' view; a private one just gets its own copy).  The mm is the one the process had
    at open, as mem_open pins it: after that process execs or exits the reads see nothing.

    The copy goes a page at a time, as access_remote_vm does: a page that cannot be reached
    ends the transfer, which is short, or EIO when not even the first byte moved."""

    kind = "proc-mem"

    def __init__(self, node: Node, flags: int, mm: Any) -> None:
        super().__init__(node, flags)
        self.mm = mm

    def _chunks(self, off: int, count: int):
        end = off + min(count, MAX_IO)
        while off < end:
            n = min(PAGE - off % PAGE, end - off)
            yield off, n
            off += n

    def _reachable(self, addr: int, write: bool) -> bool:
        m = self.mm.find(addr)
        if m is None or vma_is_secretmem(m):
            return False               # unmapped, or secretmem: never reachable from outside
        return not (write and "w" not in m.perms and is_shared(m))

    def pread(self, count: int, off: int) -> bytes | int:
        if self.mm.released or off >> 63:
            return b""                 # the mm is gone: mmget_not_zero fails, nothing to read
        out = bytearray()
        for addr, n in self._chunks(off, count):
            if not self._reachable(addr, False):
                break
            try:
                out += self.mm.read(addr, n, need="")
            except MemoryFault:
                break
        return bytes(out) if out or not count else -E.EIO

    def pwrite(self, data: bytes, off: int) -> int:
        if self.mm.released or off >> 63:
            return 0
        done = 0
        for addr, n in self._chunks(off, len(data)):
            if not self._reachable(addr, True):
                break
            try:
                self.mm.write(addr, data[done: done + n], need="")
            except MemoryFault:
                break
            done += n
        return done if done or not data else -E.EIO

    def llseek(self, offset: int, whence: int) -> int:
        """mem_lseek: SEEK_SET and SEEK_CUR only; an address is any unsigned offset."""
        if whence not in (0, 1):
            return -E.EINVAL
        self.pos = (offset if whence == 0 else self.pos + offset) & ((1 << 64) - 1)
        return self.pos


def _mem_node(path: str, t: "Task") -> Node:
    n = Node(path, S_IFREG | 0o600, dev=PROC_DEV)
    n.opener = lambda flags, n=n: ProcMemFile(n, flags, t.mm)
    return n
