"""`emukern serve`: a warm worker that has already imported what a run needs, and forks once per
run.  A short run spends nearly all of its time importing emukern and Unicorn (see
``emukern bench --only startup``); a process that imported them once and forks a child per run
pays that only once.  It is opt-in: ``EMUKERN_WARM=1 emukern run ...`` (or ``EMUKERN_WARM=PATH``
for a socket other than the default) asks a running ``emukern serve`` to do the run, and falls
back to an ordinary run when none answers or it cannot give exactly the same result.

What the forked child is given, so that its output, exit status and files are those of an
ordinary run: the client's own stdin/stdout/stderr descriptors (passed over the socket, so a
pipe stays a pipe and a terminal a terminal), its working directory, environment, umask and
resource limits, and Python's standard streams rebuilt the way a fresh interpreter builds them
for those descriptors.  The worker refuses (and the client runs the program itself) when the
client is another interpreter or another emukern tree, when a variable that is read while
modules load differs (``EMUKERN_*``, ``PYTHON*``, the locale), or when a source file the worker
loaded has changed since.  The worker only imports: it never runs a guest itself, so each
child starts from the state a fresh process has after its imports.

The protocol is one JSON request with the three descriptors attached (SCM_RIGHTS), then lines
back: ``refuse REASON``, or ``start PID`` and, when the run ends, ``exit STATUS``.
"""
from __future__ import annotations

import argparse
import array
import io
import json
import os
import signal
import socket
import sys
from typing import Any

from emukern.cli import warm
from emukern.cli.warm import default_socket

# ---- the worker ----------------------------------------------------------------------------------

def add_serve_command(sub: Any) -> None:
    s = sub.add_parser(
        "serve", help="a warm worker: runs `emukern run` without paying for imports (EMUKERN_WARM=1)",
        description=__doc__.split("\n\n")[0] + "\n\nStart it once (it stays in the foreground; "
        "`&` it), then run with EMUKERN_WARM=1.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--socket", default=None, metavar="PATH", help=f"where to listen (default {default_socket()})")
    s.add_argument("--no-preload", action="store_true",
                   help="import only the command line (for testing the fallback paths)")
    s.set_defaults(func=cmd_serve)


def _modules_of_a_run() -> list[str]:
    """The modules an `emukern run` of each example hello.S imports, in the order it imports
    them, learnt from throwaway runs in forked children (so no guest ever runs in the worker)."""
    from emukern.resources import guest_asm_dir
    names: list[str] = []
    for arch in ("riscv", "arm64"):
        hello = guest_asm_dir() / arch / "hello.S"
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:                                   # the throwaway run
            os.close(r)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            try:
                from emukern.cli import main
                os.environ["EMUKERN_NO_FORK"] = "1"
                main(["run", str(hello)])
            finally:
                os.write(w, json.dumps(list(sys.modules)).encode())
                os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            data = f.read()
        os.waitpid(pid, 0)
        try:
            names += [n for n in json.loads(data) if n not in names]
        except ValueError:
            pass
    return names


def _loaded_sources() -> dict[str, int]:
    """The emukern source files this worker has loaded, and their modification times."""
    out = {}
    for mod in list(sys.modules.values()):
        path = getattr(mod, "__file__", None)
        if path and mod.__name__.startswith("emukern"):
            try:
                out[path] = os.stat(path).st_mtime_ns
            except OSError:
                out[path] = -1
    return out


def _stale(sources: dict[str, int]) -> str | None:
    for path, mtime in sources.items():
        try:
            now = os.stat(path).st_mtime_ns
        except OSError:
            now = -1
        if now != mtime:
            return f"{path} changed since the worker started"
    return None


def _refusal(req: dict[str, Any], sources: dict[str, int]) -> str | None:
    if req.get("v") != warm.PROTOCOL:
        return "another protocol version"
    if req.get("exe") != sys.executable:
        return "another Python interpreter"
    if req.get("pkg") != warm.package_dir():
        return "another emukern tree"
    if warm.load_time_env(req.get("env", {})) != warm.load_time_env(dict(os.environ)):
        return "another load-time environment (EMUKERN_*, PYTHON*, locale)"
    if req.get("interp") != warm.interpreter_options():
        return "other interpreter options (-O, -u, -X, -W)"
    return _stale(sources)


def _fresh_stdio() -> None:
    """Rebuild sys.stdin/stdout/stderr over fds 0..2 as a fresh interpreter would for them
    (line buffering on a terminal, stderr always line-buffered, unbuffered under -u), so output
    interleaves exactly as in an ordinary run."""
    old = {0: sys.__stdin__, 1: sys.__stdout__, 2: sys.__stderr__}
    # -u or PYTHONUNBUFFERED: the worker's own streams say (a client that differs was refused)
    unbuffered = warm.unbuffered_stdio()
    made: dict[int, Any] = {}
    for fd, mode in ((0, "rb"), (1, "wb"), (2, "wb")):
        try:
            raw = io.FileIO(fd, mode, closefd=False)
        except OSError:
            made[fd] = None
            continue
        buffered = not unbuffered or fd == 0
        buf: Any = (io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)) if buffered else raw
        ref = old[fd]
        made[fd] = io.TextIOWrapper(buf, encoding=getattr(ref, "encoding", None) or "utf-8",
                                    errors=getattr(ref, "errors", None) or "strict", newline="\n",
                                    line_buffering=buffered and (raw.isatty() or fd == 2),
                                    write_through=not buffered)
    for name, fd in (("stdin", 0), ("stdout", 1), ("stderr", 2)):
        setattr(sys, name, made[fd])
        setattr(sys, f"__{name}__", made[fd])   # (a fresh interpreter's: the same object)


def _child(conn: socket.socket, fds: list[int], req: dict[str, Any], listener: socket.socket) -> None:
    """The forked child: become the client's process, run the command, report its status."""
    import atexit
    import resource
    listener.close()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)   # as in a fresh interpreter
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)                # Python ignores SIGPIPE
    # a session (and group) of its own: the client's signals reach the supervised run too, and
    # the client's terminal, if it passed one, is not a controlling terminal here to stop us on
    os.setsid()
    try:
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.chdir(req["cwd"])
        os.umask(req["umask"])
        for name, (soft, hard) in req["rlimits"].items():
            if list(resource.getrlimit(getattr(resource, name))) != [soft, hard]:
                resource.setrlimit(getattr(resource, name), (soft, hard))
    except (OSError, ValueError) as exc:
        conn.sendall(f"refuse cannot-take-the-client's-state:{type(exc).__name__}\n".encode())
        os._exit(0)
    warm.IN_WORKER = True            # (EMUKERN_WARM is in the client's environment: do not ask again)
    os.environ.clear()
    os.environ.update(req["env"])
    sys.argv = [req.get("argv0", sys.argv[0])] + list(req["argv"])
    _fresh_stdio()
    conn.sendall(f"start {os.getpid()}\n".encode())
    from emukern.cli import main
    rc: Any = 1
    try:
        rc = main(req["argv"])
    except SystemExit as exc:        # argparse's usage errors and --help end this way
        rc = exc.code
        if rc is None:
            rc = 0
        elif not isinstance(rc, int):
            print(rc, file=sys.stderr)
            rc = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except OSError:
            pass
    status = int(rc) & 0xFF
    try:
        conn.sendall(f"exit {status}\n".encode())
    except OSError:
        pass
    os._exit(status)


def _receive(conn: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    data, fds = b"", array.array("i")
    while not data.endswith(b"\n"):
        msg, anc, _flags, _addr = conn.recvmsg(1 << 20, socket.CMSG_SPACE(3 * fds.itemsize))
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
        if not msg:
            break
        data += msg
    try:
        return json.loads(data), list(fds)
    except ValueError:
        return None, list(fds)


def _peer_uid(conn: socket.socket) -> int:
    """The connecting process's user (SO_PEERCRED: pid, uid, gid), -1 if the host cannot say."""
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, array.array("i").itemsize * 3)
    except (OSError, AttributeError):
        return -1
    return array.array("i", creds)[1]


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def serve(path: str, preload: bool = True, ready: Any = None) -> int:
    """Listen on ``path`` and fork one child per request, until SIGTERM/SIGINT."""
    import importlib
    if preload:
        for name in _modules_of_a_run():
            if name not in sys.modules and not name.endswith("__main__"):   # (a __main__ runs a command)
                try:
                    importlib.import_module(name)
                except ImportError:
                    pass
    import emukern.cli  # noqa: F401 - the child's main()
    sources = _loaded_sources()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
        from emukern.errors import ConfigError
        raise ConfigError(f"a worker already listens on {path}", hint="stop it first, or give --socket another path")
    except OSError:
        pass                         # nobody there: a socket file left by a worker that died is replaced
    finally:
        probe.close()
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o077)      # the socket is its owner's alone: a run is done as the worker's user
    try:
        listener.bind(path)
    finally:
        os.umask(old_umask)
    listener.listen(64)
    listener.settimeout(1.0)         # wake up now and then to reap finished children
    print(f"emukern serve: listening on {path} ({len(sources)} emukern modules loaded)",
          file=sys.stderr, flush=True)
    if ready is not None:
        ready()
    served = refused = 0
    try:
        while True:
            _reap()
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                continue
            conn.settimeout(10.0)    # a client that connects and says nothing does not stall the others
            try:
                req, fds = _receive(conn)
            except OSError:
                req, fds = None, []
            conn.settimeout(None)
            if req is None and not fds:
                conn.close()         # a connection that sent nothing (another worker checking the path)
                continue
            why = "bad request" if req is None else _refusal(req, sources)
            if _peer_uid(conn) != os.getuid():
                why = "another user"
            if why is None and req is not None:
                served += 1
                if os.fork() == 0:
                    try:
                        _child(conn, fds, req, listener)
                    finally:
                        os._exit(70)     # only if _child itself failed: never a second worker loop
            else:
                refused += 1
                print(f"emukern serve: refused a run: {why} (the client runs it itself)",
                      file=sys.stderr, flush=True)
                try:
                    conn.sendall(f"refuse {why}\n".encode())
                except OSError:
                    pass
            for fd in fds:
                os.close(fd)
            conn.close()
    except KeyboardInterrupt:
        return 0
    finally:
        print(f"emukern serve: {served} runs served, {refused} refused", file=sys.stderr, flush=True)
        listener.close()
        try:
            os.unlink(path)
        except OSError:
            pass


def cmd_serve(a: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    return serve(a.socket or default_socket(), preload=not a.no_preload)
