"""Guest memory: address spaces made of page-aligned host buffers with permissions.

An :class:`AddressSpace` is what Linux calls an ``mm``: a set of mappings.  Each mapping's bytes
live in one anonymous host ``mmap``; every simulated CPU that runs a task of this mm maps the same
buffer into its Unicorn instance with ``mem_map_ptr`` — so a store on one CPU is seen by all
others immediately, as on real SMP hardware.  The kernel reads and writes guest memory through
the same buffers (``copy_from_user``/``copy_to_user``), with Linux's rules: an access outside any
mapping, or without the needed permission, is a fault (``-EFAULT`` for syscalls, SIGSEGV for the
guest).
"""
from __future__ import annotations

import bisect
import ctypes
import mmap
import os
import re
import weakref
from dataclasses import dataclass, field

from unicorn import UC_PROT_EXEC, UC_PROT_READ, UC_PROT_WRITE

from emukern.errors import MemoryFault

PAGE = 4096
AS_LIMIT = 4 << 30           # per address space, like an RLIMIT_AS: host memory is finite


_CHUNK = 1 << 20


class OutOfMemory(Exception):
    """The mapping cannot be created (too large, or the host refused): -ENOMEM for the guest."""


class MemoryPool:
    """The machine's guest RAM: every mapped byte of every address space is charged here.

    Like Linux's strict overcommit accounting (``vm_committed_as``), a mapping is charged by its
    size when it is created (map, fork) and uncharged when it goes (munmap, exit), so the total
    is what the guests could touch.  Past ``limit`` the allocation fails with
    :class:`OutOfMemory`, which the kernel turns into -ENOMEM; ``limit=None`` means no limit."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self.used = 0
        self.peak = 0

    def charge(self, size: int, what: str) -> None:
        if self.limit is not None and self.used + size > self.limit:
            raise OutOfMemory(f"{what}: {size:#x} more bytes would pass the machine's guest memory "
                              f"limit of {self.limit:#x} bytes (--mem-limit)")
        self.used += size
        if self.used > self.peak:
            self.peak = self.used

    def uncharge(self, size: int) -> None:
        self.used -= size


# the frozen host file each private buffer is a copy-on-write view of, once a fork has shared
# it (see _fork_buffer); a buffer without one is plain anonymous memory
_SNAPSHOTS: "weakref.WeakKeyDictionary[mmap.mmap, _Snapshot]" = weakref.WeakKeyDictionary()


class _Snapshot:
    """A memfd holding a private buffer's bytes as they were at a fork, never written again:
    the parent's and the child's buffers are MAP_PRIVATE views of it, so the host's MMU copies
    a page only when one of them writes it.  The file goes when the last view is gone."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __del__(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


def _host_buffer(size: int, what: str, fd: int = -1) -> mmap.mmap:
    """A host mapping for guest memory: anonymous, or (``fd``) a private view of a snapshot
    file; a host refusal is OutOfMemory, never OSError."""
    try:
        if fd < 0:
            buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            _no_huge_pages(buf, 0, size)
            return buf
        return mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    except (OSError, OverflowError, MemoryError) as exc:
        raise OutOfMemory(f"{what}: the host refused {size:#x} bytes "
                          f"({getattr(exc, 'strerror', None) or exc})") from None


def _no_huge_pages(buf: mmap.mmap, offset: int, size: int) -> None:
    """Keep the host's transparent huge pages out of guest memory: on a host whose THP is
    "always", one touched byte would fault in 512 pages at once, and the guest's residency
    (read from the host, see page_states) must count the pages the guest touched."""
    try:
        buf.madvise(_MADV_NOHUGEPAGE, offset, size)
    except (OSError, ValueError, AttributeError):
        pass


_MADV_NOHUGEPAGE = getattr(mmap, "MADV_NOHUGEPAGE", 15)
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
_MAP_FIXED = 0x10
_MAP_FAILED = ctypes.c_void_p(-1).value


def _freeze(buf: mmap.mmap) -> _Snapshot | None:
    """Put an anonymous buffer's bytes in a new memfd and make the buffer, at the same host
    address (Unicorn holds raw pointers to it), a MAP_PRIVATE view of that file.  One copy of
    the pages the buffer ever had (pagemap), by the host's write(); None when the host does
    not give what this needs (then fork copies)."""
    runs = _touched_runs(buf)
    if runs is None or not hasattr(os, "memfd_create"):
        return None
    try:
        fd = os.memfd_create("emukern-guest", os.MFD_CLOEXEC)
    except OSError:                       # e.g. out of descriptors: fork copies instead
        return None
    snap = _Snapshot(fd)
    try:
        os.ftruncate(fd, len(buf))
        view = memoryview(buf)
        try:
            for lo, hi in runs:
                while lo < hi:
                    lo += os.pwrite(fd, view[lo:hi], lo)
        finally:
            view.release()
    except OSError:
        return None
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    got = _libc.mmap(addr, len(buf), mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | _MAP_FIXED, fd, 0)
    if got != addr:
        # MAP_FIXED failed: the old mapping is still there only if mmap left it; it always
        # does on failure (the kernel checks before unmapping), so the bytes are intact
        return None
    _SNAPSHOTS[buf] = snap
    return snap


def _fork_buffer(buf: mmap.mmap) -> mmap.mmap:
    """The child's copy of a private buffer at fork (dup_mmap's copy-on-write): a MAP_PRIVATE
    view of the buffer's snapshot (made now if it has none), plus a copy of the pages the
    parent wrote since that snapshot was taken.  Falls back to copying the pages the host gave
    the buffer when no snapshot can be made."""
    snap = _SNAPSHOTS.get(buf)
    if snap is None:
        snap = _freeze(buf)
        dirty: list[tuple[int, int]] | None = []
    else:
        dirty = _touched_runs(buf, _WRITTEN_SINCE_SNAPSHOT) if snap is not None else None
    if snap is None or dirty is None:
        nb = _host_buffer(len(buf), "fork")
        runs = _touched_runs(buf)
        if runs is None:
            # copy in chunks, skipping all-zero ones: the new mapping is already zero and
            # never-touched anonymous memory should stay unmaterialised on the host
            for off in range(0, len(buf), _CHUNK):
                chunk = buf[off: off + _CHUNK]
                if chunk.count(0) != len(chunk):
                    nb[off: off + len(chunk)] = chunk
        else:
            # only the pages the host ever gave this buffer: the others read as zero, as the
            # new buffer does, and are neither read nor materialised here
            for lo, hi in runs:
                nb[lo:hi] = buf[lo:hi]
        return nb
    nb = _host_buffer(len(buf), "fork", snap.fd)
    _SNAPSHOTS[nb] = snap
    gone = _DETACHED.get(buf)
    if gone:
        # the parts the parent dropped (MADV_DONTNEED) read as zero in the child too, not as
        # the snapshot's old bytes
        for lo, hi in gone:
            _detach(nb, lo, hi - lo)
    for lo, hi in dirty:
        nb[lo:hi] = buf[lo:hi]
    return nb


def _discard(buf: mmap.mmap, offset: int, size: int) -> None:
    """MADV_DONTNEED a page-aligned part of a host buffer: its RSS goes, it reads back as zero."""
    if size > 0 and not buf.closed and hasattr(buf, "madvise"):
        try:
            buf.madvise(mmap.MADV_DONTNEED, offset, size)
        except (OSError, ValueError):
            pass


# the parts of a snapshot view (see _fork_buffer) that were dropped since: anonymous host memory
# now, so a later fork must not show the snapshot's bytes there
_DETACHED: "weakref.WeakKeyDictionary[mmap.mmap, list[tuple[int, int]]]" = weakref.WeakKeyDictionary()


def _detach(buf: mmap.mmap, offset: int, size: int) -> bool:
    """Replace a page-aligned part of a snapshot view by fresh anonymous host memory at the same
    host address (Unicorn holds raw pointers into it): it reads as zero and holds no page."""
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf)) + offset
    got = _libc.mmap(addr, size, mmap.PROT_READ | mmap.PROT_WRITE,
                     mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_FIXED, -1, 0)
    if got != addr:
        return False
    _no_huge_pages(buf, offset, size)
    _DETACHED.setdefault(buf, []).append((offset, offset + size))
    return True


_PAGEMAP: list[int | None] = []      # [pid, fd]: that process's /proc/self/pagemap, opened on first use
# a pagemap entry's top byte (bits 56..63): 0x80 present, 0x40 swapped, 0x20 a page of the
# mapped file (not a private copy).  Each table maps it to b"1" for the pages wanted.
_ANY_PAGE = bytes(b"1"[0] if b & 0xC0 else b"0"[0] for b in range(256))
_WRITTEN_SINCE_SNAPSHOT = bytes(b"1"[0] if b & 0x40 or (b & 0x80 and not b & 0x20) else b"0"[0]
                                for b in range(256))
_RUN = re.compile(rb"1+")


def _pagemap_fd() -> int | None:
    """This process's /proc/self/pagemap, opened on first use; None when the host has none."""
    if not _PAGEMAP or _PAGEMAP[0] != os.getpid():
        # (per process: an inherited descriptor would still show the parent's pages)
        if _PAGEMAP and _PAGEMAP[1] is not None:
            os.close(_PAGEMAP[1])
        try:
            fd0: int | None = os.open("/proc/self/pagemap", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            fd0 = None
        _PAGEMAP[:] = [os.getpid(), fd0]
    return _PAGEMAP[1]


def _touched_runs(buf: mmap.mmap, table: bytes = _ANY_PAGE) -> list[tuple[int, int]] | None:
    """The byte ranges of a host buffer whose pages the host has given it (present in RAM or
    swapped out), from /proc/self/pagemap; in an anonymous buffer the rest never was touched
    and reads as zero.  With ``_WRITTEN_SINCE_SNAPSHOT``, in a private view of a snapshot:
    the pages it has its own copy of.  None when the host does not tell (no pagemap)."""
    fd = _pagemap_fd()
    if fd is None or len(buf) % PAGE:
        return None
    base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    n = len(buf) // PAGE
    try:
        entries = os.pread(fd, 8 * n, base // PAGE * 8)
    except OSError:
        return None
    if len(entries) != 8 * n:
        return None
    tops = entries[7::8].translate(table)     # little-endian: each entry's bits 56..63
    return [(h.start() * PAGE, h.end() * PAGE) for h in _RUN.finditer(tops)]


# ---- page residency: which guest pages hold memory, read from the host ----------------------
# Guest memory is host memory, so the host kernel already knows which guest pages were touched:
# its pagemap tells, per page of a buffer, whether the page is there, whether it is the shared
# zero page (a read of never-written anonymous memory) and whether another mapping shares it.
# The codes page_states answers, one byte per page:
PAGE_NONE = 0        # no page: never touched, or dropped (MADV_DONTNEED, munmap)
PAGE_ZERO = 1        # the zero page, mapped by a read of untouched anonymous memory
PAGE_OWN = 2         # a page of this mapping's own (written, or a file's private copy)
PAGE_SHARED = 3      # a page shared with another copy: a fork's snapshot, a shared file's page
PAGE_CACHED = 4      # a shared file's page in memory that this mapping has not faulted in
# host pagemap top byte (bits 56..63): 0x80 present, 0x40 swapped, 0x20 file or shared, 0x01
# exclusively mapped
_STATE_OF_TOP = bytes(PAGE_OWN if t & 0x40 else
                      (PAGE_SHARED if t & 0x20 else PAGE_OWN if t & 0x01 else PAGE_ZERO) if t & 0x80
                      else PAGE_NONE for t in range(256))
_libc.mincore.restype = ctypes.c_int
_libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
MADV_POPULATE_READ, MADV_POPULATE_WRITE = 22, 23


def page_states(m: Mapping, lo: int, hi: int) -> bytes | None:
    """One PAGE_* code per page of [lo, hi) (guest addresses inside ``m``), from the host's
    pagemap of the buffer behind it; None when the host does not tell.  A page of a file the
    buffer maps (a fork's snapshot, a shared memfd) that is in memory but not yet faulted into
    this buffer is PAGE_SHARED for a snapshot (the fork copied the page table entry, as
    Linux's copy_page_range does) and PAGE_CACHED for a shared file."""
    n = (hi - lo) // PAGE
    if n <= 0:
        return b""
    fd = _pagemap_fd()
    if fd is None:
        return None
    addr = m.host_addr() + (lo - m.start)
    try:
        entries = os.pread(fd, 8 * n, addr // PAGE * 8)
    except OSError:
        return None
    if len(entries) != 8 * n:
        return None
    states = entries[7::8].translate(_STATE_OF_TOP)
    filed = m.buf in _SNAPSHOTS or is_shared(m)
    if filed and PAGE_NONE in states:
        vec = ctypes.create_string_buffer(n)
        if _libc.mincore(addr, n * PAGE, vec) == 0:
            cached = PAGE_CACHED if is_shared(m) else PAGE_SHARED
            gone = [(a, b) for a, b in _DETACHED.get(m.buf, ())]
            out = bytearray(states)
            for i, v in enumerate(vec.raw):
                if out[i] == PAGE_NONE and v & 1:
                    off = m.offset + (lo - m.start) + i * PAGE
                    if not any(a <= off < b for a, b in gone):
                        out[i] = cached
            states = bytes(out)
    return states


def populate(m: Mapping, lo: int, hi: int, write: bool) -> bool:
    """Fault [lo, hi) of ``m`` in on the host (MADV_POPULATE_READ/WRITE): a read maps the zero
    page of untouched anonymous memory, a write gives each page its own memory."""
    try:
        m.buf.madvise(MADV_POPULATE_WRITE if write else MADV_POPULATE_READ,
                      m.offset + lo - m.start, hi - lo)
    except (OSError, ValueError):
        return False
    return True


def discard(m: Mapping, lo: int, hi: int) -> None:
    """MADV_DONTNEED [lo, hi) of a private mapping: its pages go and it reads as zero (a
    snapshot view gets anonymous memory there, since dropping its pages would bring back the
    snapshot's bytes)."""
    off = m.offset + lo - m.start
    if m.buf in _SNAPSHOTS:
        if not _detach(m.buf, off, hi - lo):
            m.buf[off: off + hi - lo] = bytes(hi - lo)      # the host refused: zeros, by hand
        return
    _discard(m.buf, off, hi - lo)


def page_down(x: int) -> int:
    return x & ~(PAGE - 1)


def page_up(x: int) -> int:
    return (x + PAGE - 1) & ~(PAGE - 1)


def uc_prot(perms: str) -> int:
    p = 0
    if "r" in perms:
        p |= UC_PROT_READ
    if "w" in perms:
        p |= UC_PROT_WRITE
    if "x" in perms:
        p |= UC_PROT_EXEC
    return p


@dataclass(eq=False)
class Mapping:
    start: int
    size: int
    perms: str          # e.g. "r-x", "rw-"
    name: str
    buf: mmap.mmap
    offset: int = 0     # offset of `start` inside buf (a split mapping shares its buffer)

    @property
    def end(self) -> int:
        return self.start + self.size

    def host_addr(self) -> int:
        return ctypes.addressof(ctypes.c_char.from_buffer(self.buf)) + self.offset


_UNTAG = (1 << 56) - 1               # a user pointer without its top byte (tag)
SHARED_PREFIX = "shared:"            # the name of a MAP_SHARED mapping starts so ('s' in maps)
SHARED_ANON = SHARED_PREFIX + "/dev/zero (deleted)"     # shared anonymous memory (shmem)


def is_shared(m: Mapping) -> bool:
    """A MAP_SHARED mapping: its buffer is shared with the address spaces forked from this one."""
    return m.name.startswith(SHARED_PREFIX)


# Buffers whose tail the guest may not touch, and how many bytes from their start it may: the
# kernel's shared file mappings longer than their file (the pages past the file's end raise
# SIGBUS in Linux).  The CPUs map such a tail with no access at all, so a guest load or store
# there is a memory fault the kernel sees.  Empty for nearly every run.
_ACCESS_LIMIT: "weakref.WeakKeyDictionary[mmap.mmap, int]" = weakref.WeakKeyDictionary()
# every live address space, so a changed limit can tell those that map the buffer (their CPUs
# remap it on the version bump)
_SPACES: "weakref.WeakSet[AddressSpace]" = weakref.WeakSet()


def set_access_limit(buf: mmap.mmap, limit: int | None) -> None:
    """The guest may touch only the first ``limit`` bytes of ``buf`` (None: all of it)."""
    old = _ACCESS_LIMIT.get(buf)
    if limit is None or limit >= len(buf):
        if old is None:
            return
        del _ACCESS_LIMIT[buf]
    elif old == limit:
        return
    else:
        _ACCESS_LIMIT[buf] = limit
    for space in list(_SPACES):
        if any(m.buf is buf for m in space.mappings):
            space.version += 1


def access_limit(buf: mmap.mmap) -> int | None:
    """How many bytes from its start the guest may touch in ``buf`` (None: all)."""
    return _ACCESS_LIMIT.get(buf) if _ACCESS_LIMIT else None


# Buffers whose pages are a file's (the kernel's shared mappings of a root file): the host's page
# cache, not the machine's guest memory, so mapping them charges nothing to the MemoryPool (as
# Linux's overcommit accounting leaves shared file mappings out of Committed_AS).  They still
# count in an address space's ``mapped`` (its address-space limit).
_UNCHARGED: "weakref.WeakSet[mmap.mmap]" = weakref.WeakSet()


def set_uncharged(buf: mmap.mmap) -> None:
    """Mappings of ``buf`` are not charged to the pool (see _UNCHARGED)."""
    _UNCHARGED.add(buf)


def is_uncharged(buf: mmap.mmap) -> bool:
    return bool(_UNCHARGED) and buf in _UNCHARGED


def _uncharged_bytes(mappings: "list[Mapping]") -> int:
    if not _UNCHARGED:
        return 0
    return sum(m.size for m in mappings if m.buf in _UNCHARGED)


def engine_regions(m: Mapping, prot: int) -> list[tuple[int, int, int, int]]:
    """(start, size, prot, host address) of what a CPU maps for ``m``: the whole mapping with
    ``prot``, or with an access limit on its buffer, the part past it with no access."""
    host = m.host_addr()
    lim = _ACCESS_LIMIT.get(m.buf)
    if lim is None or m.offset + m.size <= lim:
        return [(m.start, m.size, prot, host)]
    ok = max(0, lim - m.offset)
    out = [(m.start, ok, prot, host)] if ok else []
    out.append((m.start + ok, m.size - ok, 0, host + ok))
    return out


@dataclass(eq=False)
class AddressSpace:
    """A process's memory: its mappings and the host buffers behind them, and the accessors the
    CPUs and the kernel's user copies go through.  The kernel's bookkeeping around it (brk,
    mmap_base, users, the stack limit, the auxv: Linux's mm_struct) is
    :class:`emukern.kernel.mm.mm_struct.MmStruct`, a subclass the machine never looks into."""

    mappings: list[Mapping] = field(default_factory=list)
    version: int = 0            # bumped on every map change; CPUs resync their Unicorn maps
    # Top Byte Ignore for the accessors (read/write/read_cstr): a pointer's top byte is ignored
    # when its bit 55 is clear, as the hardware's TBI does for the program's own accesses (the
    # kernel turns it on for arm64's tagged address ABI)
    tbi: bool = False
    pool: MemoryPool | None = None   # the machine's guest memory budget (charged per mapped byte)
    mapped: int = 0             # bytes mapped (sum of the mappings' sizes), kept up to date
    code_gen: int = 0           # bumped when executable memory was written behind the CPUs' scans
    # scan-on-execute across CPUs: page -> how many CPUs have it executable after a scan; the
    # other CPUs keep such a page write-protected in their view (see cpu_base)
    scanned: dict[int, int] = field(default_factory=dict)
    scan_gen: int = 0           # bumped when `scanned` gains or loses a page
    released: bool = False      # release() ran: a CPU's engine kept for it is closed or reused
    # find's caches: the mapping of the last hit, the four last found by a search (Linux's
    # per-thread vmacache had four slots, VMACACHE_SIZE) and the sorted start addresses; every change of ``mappings`` (map, unmap, protect, release) drops
    # them through _changed.  The kernel looks up the same few mappings again and again (the
    # stack for a signal frame, the code or vDSO page of an svc it reads), so most lookups hit.
    _hit: Mapping | None = field(default=None, repr=False)
    _vmacache: list[Mapping | None] = field(default_factory=lambda: [None] * 4, repr=False)
    _starts_list: list[int] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        _SPACES.add(self)

    # ----- layout -----------------------------------------------------------------------------
    def _changed(self) -> None:
        self._hit = None
        self._vmacache = [None] * 4
        self._starts_list = None

    def _starts(self) -> list[int]:
        s = self._starts_list
        if s is None:
            s = self._starts_list = [m.start for m in self.mappings]
        return s

    def untag(self, addr: int) -> int:
        """untagged_addr() under the tagged address ABI: a user pointer (bit 55 clear) without
        its top byte; anything else, or any pointer while the ABI is off, as given."""
        if self.tbi and not addr >> 55 & 1:
            return addr & _UNTAG
        return addr

    def find(self, addr: int) -> Mapping | None:
        m = self._hit
        if m is not None and m.start <= addr < m.start + m.size:
            return m
        for m in self._vmacache:
            if m is not None and m.start <= addr < m.start + m.size:
                self._hit = m
                return m
        i = bisect.bisect_right(self._starts(), addr) - 1
        if i >= 0:
            m = self.mappings[i]
            if m.start <= addr < m.start + m.size:
                vc = self._vmacache         # the oldest of the four makes room
                vc.pop()
                vc.insert(0, m)
                self._hit = m
                return m
        return None

    def overlaps(self, start: int, size: int) -> bool:
        return any(m.start < start + size and start < m.end for m in self.mappings)

    def map(self, start: int, size: int, perms: str, name: str, data: bytes = b"") -> Mapping:
        if start % PAGE or size <= 0:
            raise ValueError(f"unaligned mapping {start:#x}+{size:#x}")
        size = page_up(size)
        if self.overlaps(start, size):
            raise ValueError(f"mapping {name} at {start:#x}+{size:#x} overlaps an existing one")
        if self.mapped + size > AS_LIMIT:
            raise OutOfMemory(f"{name}: {size:#x} bytes would pass the {AS_LIMIT >> 30} GiB address-space limit")
        if self.pool is not None:
            self.pool.charge(size, name)
        try:
            buf = _host_buffer(size, name)
        except OutOfMemory:
            if self.pool is not None:
                self.pool.uncharge(size)
            raise
        if data:
            buf[: len(data)] = data
        m = Mapping(start, size, perms, name, buf)
        bisect.insort(self.mappings, m, key=lambda x: x.start)
        self._changed()
        self.mapped += size
        self.version += 1
        return m

    def unmap(self, start: int, size: int) -> None:
        """Remove [start, start+size), splitting mappings at page granularity (munmap)."""
        end = start + page_up(size)
        keep: list[Mapping] = []
        removed = free = 0          # (free: bytes of them that were never charged)
        for m in self.mappings:
            if m.end <= start or m.start >= end:
                keep.append(m)
                continue
            lo, hi = max(m.start, start), min(m.end, end)
            removed += hi - lo
            if _UNCHARGED and m.buf in _UNCHARGED:
                free += hi - lo
            # give the host pages back now (a split mapping keeps its buffer alive); a shared
            # mapping's pages stay: other address spaces map the same buffer
            if not is_shared(m):
                _discard(m.buf, m.offset + lo - m.start, hi - lo)
            if m.start < start:
                keep.append(Mapping(m.start, start - m.start, m.perms, m.name, m.buf, m.offset))
            if m.end > end:
                keep.append(Mapping(end, m.end - end, m.perms, m.name, m.buf, m.offset + (end - m.start)))
        self.mappings = sorted(keep, key=lambda x: x.start)
        self._changed()
        self.mapped -= removed
        if self.pool is not None:
            self.pool.uncharge(removed - free)
        self.version += 1

    def release(self) -> None:
        """exit_mmap: the last user went away; every mapping goes and the host memory with it.

        The caller makes sure no CPU has this mm mapped any more (Unicorn holds raw pointers)."""
        # (a shared buffer is left to the garbage collector: another address space may map it)
        bufs = {id(m.buf): m.buf for m in self.mappings if not is_shared(m)}
        free = _uncharged_bytes(self.mappings)
        self.released = True
        self.mappings = []
        self._changed()
        if self.pool is not None:
            self.pool.uncharge(self.mapped - free)
        self.mapped = 0
        self.version += 1
        for buf in bufs.values():
            # (its snapshot file, if a fork shared it, closes with the last view that needs it,
            # not when this buffer object is finally collected)
            _SNAPSHOTS.pop(buf, None)
            try:
                buf.close()
            except BufferError:          # still exported somewhere: freed when that goes
                pass

    def protect(self, start: int, size: int, perms: str) -> None:
        end = start + page_up(size)
        out: list[Mapping] = []
        for m in self.mappings:
            if m.end <= start or m.start >= end:
                out.append(m)
                continue
            cuts = sorted({m.start, max(m.start, start), min(m.end, end), m.end})
            for a, b in zip(cuts, cuts[1:]):
                if a < b:
                    p = perms if start <= a and b <= end else m.perms
                    out.append(Mapping(a, b - a, p, m.name, m.buf, m.offset + (a - m.start)))
        self.mappings = sorted(out, key=lambda x: x.start)
        self._changed()
        self.version += 1

    def fork(self) -> "AddressSpace":
        """A copy of every private mapping (fork without copy-on-write: same result, simpler);
        a shared one (MAP_SHARED) is the same buffer in both (dup_mmap shares its pages)."""
        child = type(self)(pool=self.pool)     # (the kernel's subclass copies its own fields)
        if self.pool is not None:
            self.pool.charge(self.mapped - _uncharged_bytes(self.mappings), "fork")
        child.mapped = self.mapped
        try:
            self._copy_into(child)
        except OutOfMemory:
            child.release()              # gives back the charge and what was copied so far
            raise
        return child

    def _copy_into(self, child: "AddressSpace") -> None:
        bufs: dict[int, mmap.mmap] = {}
        for m in self.mappings:
            if is_shared(m):
                bufs[id(m.buf)] = m.buf
            if id(m.buf) not in bufs:
                bufs[id(m.buf)] = _fork_buffer(m.buf)
            child.mappings.append(Mapping(m.start, m.size, m.perms, m.name, bufs[id(m.buf)], m.offset))
        child._changed()

    # ----- kernel access (copy_from_user / copy_to_user) ---------------------------------------
    def _span(self, addr: int, size: int, need: str) -> list[tuple[Mapping, int, int]]:
        out = []
        cur, left = addr, size
        while left > 0:
            m = self.find(cur)
            if m is None or need not in m.perms:
                raise MemoryFault(cur, need, size)
            n = min(left, m.end - cur)
            out.append((m, m.offset + cur - m.start, n))
            cur += n
            left -= n
        return out

    def read(self, addr: int, size: int, need: str = "r") -> bytes:
        if size == 0:
            return b""
        m = self._hit                   # inside find's last hit: what find would answer
        if m is not None and m.start <= addr and addr + size <= m.start + m.size and need in m.perms:
            off = m.offset + addr - m.start
            return m.buf[off: off + size]
        if addr < 0 or addr + size > 1 << 64:
            raise MemoryFault(addr, need, size)
        if addr >> 56 and self.tbi:
            addr = self.untag(addr)
        m = self.find(addr)
        if m is not None and need in m.perms and addr + size <= m.start + m.size:   # fast path
            off = m.offset + addr - m.start
            return m.buf[off: off + size]
        return b"".join(m.buf[o: o + n] for m, o, n in self._span(addr, size, need))

    def write(self, addr: int, data: bytes, need: str = "w") -> None:
        if not data:
            return
        m = self._hit                   # inside find's last hit: what find would answer
        if m is not None and m.start <= addr and addr + len(data) <= m.start + m.size and need in m.perms:
            off = m.offset + addr - m.start
            m.buf[off: off + len(data)] = data
            if "x" in m.perms:
                self.code_gen += 1
            return
        if addr < 0 or addr + len(data) > 1 << 64:
            raise MemoryFault(addr, need, len(data))
        if addr >> 56 and self.tbi:
            addr = self.untag(addr)
        m = self.find(addr)
        if m is not None and need in m.perms and addr + len(data) <= m.start + m.size:   # fast path
            off = m.offset + addr - m.start
            m.buf[off: off + len(data)] = data
            if "x" in m.perms:
                self.code_gen += 1
            return
        pos = 0
        for m, o, n in self._span(addr, len(data), need):
            m.buf[o: o + n] = data[pos: pos + n]
            pos += n
            if "x" in m.perms:
                self.code_gen += 1      # CPUs scanned this code before the write

    def read_cstr(self, addr: int, limit: int = 4096) -> bytes:
        out = bytearray()
        while len(out) < limit:
            chunk = self.read(addr + len(out), 1)
            if chunk == b"\0":
                return bytes(out)
            out += chunk
        raise MemoryFault(addr + len(out), "r")

    def read_u64(self, addr: int) -> int:
        return int.from_bytes(self.read(addr, 8), "little")

    def write_u64(self, addr: int, value: int) -> None:
        self.write(addr, (value & (2**64 - 1)).to_bytes(8, "little"))

    def read_u32(self, addr: int) -> int:
        return int.from_bytes(self.read(addr, 4), "little")

    def write_u32(self, addr: int, value: int) -> None:
        self.write(addr, (value & 0xFFFFFFFF).to_bytes(4, "little"))

    def fetch_insn(self, addr: int, size: int = 4) -> int:
        """Read an instruction word the way the kernel does (get_user on the PC)."""
        return int.from_bytes(self.read(addr, size, "x"), "little")
