"""The client side of the warm worker (``emukern serve``, :mod:`emukern.cli.serve`): what the
`emukern` process the user started does when EMUKERN_WARM is set.  It is the whole of that
process's work when a worker answers, so it imports as little as it can: the C halves of the
socket and signal modules (``_socket``, ``_signal``), whose Python wrappers spend a few
milliseconds building enums, and nothing of emukern beyond this file."""
from __future__ import annotations

import _signal  # type: ignore[import-not-found]
import _socket
import array
import json
import os
import sys

TYPE_CHECKING = False                # (not typing's, which this process would otherwise not load)
if TYPE_CHECKING:
    from typing import Any, Iterator, Sequence

# variables whose value is read while modules load (class attributes, module constants) or
# that change how the interpreter itself behaves: a worker serves only clients that agree on
# all of them, since its modules were loaded under its own values
LOAD_TIME_PREFIXES = ("EMUKERN_", "PYTHON", "LC_", "LANG")
NOT_LOAD_TIME = {"EMUKERN_WARM"}
RLIMITS = ("RLIMIT_NOFILE", "RLIMIT_STACK", "RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_CORE",
           "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NPROC", "RLIMIT_MEMLOCK")
PROTOCOL = 1
# set in the worker's forked child: the client's environment (EMUKERN_WARM included) is the
# child's, and the child must run the command, not ask a worker again
IN_WORKER = False
EXIT_INTERNAL = 70


def default_socket() -> str:
    base = os.environ.get("XDG_RUNTIME_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "emukern")
    return os.path.join(base, f"emukern-warm-{os.getuid()}.sock")


def socket_path(setting: str) -> str:
    """EMUKERN_WARM's value -> the socket: "1" (or "yes", "on", "true") is the default one."""
    return default_socket() if setting.lower() in ("1", "yes", "on", "true") else setting


def load_time_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(LOAD_TIME_PREFIXES) and k not in NOT_LOAD_TIME}


def package_dir() -> str:
    import emukern
    return os.path.dirname(os.path.abspath(emukern.__file__))


def rlimits() -> dict[str, list[int]]:
    import resource
    return {name: list(resource.getrlimit(getattr(resource, name))) for name in RLIMITS
            if hasattr(resource, name)}


def interpreter_options() -> list[str]:
    """The interpreter's command-line state that a forked child would inherit from the worker
    instead (-O, -u, -X dev, -W ...): the worker serves only clients that were started alike."""
    return [repr(sys.flags), repr(sorted(sys.warnoptions)), repr(sorted(sys._xoptions.items())),
            repr(unbuffered_stdio())]


def unbuffered_stdio() -> bool:
    """Whether this interpreter's stdout/stderr are unbuffered (-u, PYTHONUNBUFFERED), which
    sys.flags does not show: such streams write through."""
    for stream in (sys.__stdout__, sys.__stderr__):
        if stream is not None:
            return bool(getattr(stream, "write_through", False))
    return bool(os.environ.get("PYTHONUNBUFFERED"))


def _lines(conn: Any) -> Iterator[list[str]]:
    """The worker's reply lines, as they come (a run may take long between the two)."""
    pending = b""
    while True:
        while b"\n" not in pending:
            try:
                chunk = conn.recv(4096)
            except InterruptedError:
                continue
            if not chunk:
                return
            pending += chunk
        line, pending = pending.split(b"\n", 1)
        yield line.decode(errors="replace").split()


def run_warm(words: Sequence[str], setting: str) -> int | None:
    """Have a warm worker run ``emukern WORDS``; its exit status, or None when no worker answers
    or it refused (the caller then runs the command itself, as if EMUKERN_WARM were unset)."""
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        return _ask(conn, words, setting)
    finally:
        conn.close()


def _ask(conn: Any, words: Sequence[str], setting: str) -> int | None:
    try:
        conn.connect(socket_path(setting))
    except OSError:
        return None
    umask = os.umask(0)
    os.umask(umask)
    request = {"v": PROTOCOL, "argv": list(words), "argv0": sys.argv[0] if sys.argv else "",
               "cwd": os.getcwd(), "env": dict(os.environ), "exe": sys.executable, "pkg": package_dir(),
               "umask": umask, "rlimits": rlimits(), "interp": interpreter_options()}
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    try:
        conn.sendmsg([json.dumps(request).encode() + b"\n"],
                     [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, array.array("i", [0, 1, 2]).tobytes())])
    except OSError:
        return None                   # e.g. a closed fd 0..2: the ordinary run copes with that
    replies = _lines(conn)
    first = next(replies, [])
    if len(first) != 2 or first[0] != "start":
        return None                   # refused (or gone): nothing has been written yet
    group = int(first[1])

    def forward(sig: int, _frame: Any) -> None:
        try:
            os.killpg(group, sig)     # the child leads its own session: the supervised run too
        except OSError:
            pass
    for sig in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT):
        _signal.signal(sig, forward)
    last = next(replies, [])
    if len(last) == 2 and last[0] == "exit":
        return int(last[1])
    print("emukern: internal error: the warm worker's child ended without an exit status",
          file=sys.stderr)
    return EXIT_INTERNAL
