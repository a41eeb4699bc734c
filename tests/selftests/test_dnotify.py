"""fcntl(F_NOTIFY) (dnotify) and F_SETSIG, and epoll's edge-triggered and EINTR answers, from C
probes on both arches.  The expected lines are what Linux printed for the same programs (through
qemu-user on a 6.x host kernel): dnotify_test itself only pauses, so these are the checks that
its F_NOTIFY/F_SETSIG path delivers what a real kernel does."""
from __future__ import annotations

import pytest

from emukern.api import Machine
from emukern.config import MachineConfig
from tests.cguests import build_cguest

DNOTIFY_C = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/stat.h>
static volatile int got, gotfd, gotcode; static volatile long band;
static void h(int s, siginfo_t *si, void *d) { got++; gotfd = si->si_fd; gotcode = si->si_code; band = si->si_band; }
int main(void) {
    struct sigaction act = {0};
    act.sa_sigaction = h; act.sa_flags = SA_SIGINFO; sigemptyset(&act.sa_mask);
    sigaction(SIGRTMIN + 1, &act, NULL);
    mkdir("d", 0755);
    int fd = open("d", O_RDONLY);
    printf("setsig=%d getsig=%d\n", fcntl(fd, F_SETSIG, SIGRTMIN + 1), fcntl(fd, F_GETSIG));
    printf("notify=%d\n", fcntl(fd, F_NOTIFY, DN_MODIFY | DN_CREATE | DN_MULTISHOT));
    int f2 = open("d/x", O_CREAT | O_WRONLY, 0644);
    printf("create: got=%d fd=%d code=%d band=%#lx\n", got, gotfd == fd, gotcode, band);
    write(f2, "a", 1);
    printf("modify: got=%d\n", got);
    unlink("d/x");
    printf("delete (not asked): got=%d\n", got);
    printf("more=%d\n", fcntl(fd, F_NOTIFY, DN_DELETE));
    open("d/y", O_CREAT | O_WRONLY, 0644);
    unlink("d/y");
    printf("create+delete: got=%d\n", got);
    printf("off=%d\n", fcntl(fd, F_NOTIFY, 0));
    open("d/z", O_CREAT | O_WRONLY, 0644);
    printf("after off: got=%d\n", got);
    int nf = open("d/z", O_RDONLY);
    printf("file=%d\n", fcntl(nf, F_NOTIFY, DN_CREATE) < 0 ? -1 : 0);
    return 0;
}
"""

DNOTIFY_LINUX = """setsig=0 getsig=35
notify=0
create: got=1 fd=1 code=3 band=0x441
modify: got=2
delete (not asked): got=2
more=0
create+delete: got=4
off=0
after off: got=4
file=-1
"""

EPOLL_C = r"""
#include <sys/epoll.h>
#include <sys/socket.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <errno.h>
static int efd, sfd[2]; static volatile int count, eintr; static pthread_t mainth, waiter;
static void h(int s) {}
static void one_wait(void) {
    struct epoll_event e;
    int r = epoll_wait(efd, &e, 1, -1);
    if (r > 0) __sync_fetch_and_add(&count, 1);
    else if (r < 0 && errno == EINTR) __sync_fetch_and_add(&eintr, 1);
}
static void *w(void *d) { one_wait(); return 0; }
static void *em(void *d) { usleep(100000); write(sfd[1], "w", 1); usleep(300000);
                           pthread_kill(mainth, SIGUSR1); pthread_kill(waiter, SIGUSR1); return 0; }
int main(void) {
    pthread_t e; struct epoll_event ev;
    signal(SIGUSR1, h);                       /* SA_RESTART: epoll_wait still ends with EINTR */
    socketpair(AF_UNIX, SOCK_STREAM, 0, sfd);
    efd = epoll_create(1);
    ev.events = EPOLLIN | EPOLLET;
    epoll_ctl(efd, EPOLL_CTL_ADD, sfd[0], &ev);
    write(sfd[1], "w", 1);
    int a = epoll_wait(efd, &ev, 1, 0), b = epoll_wait(efd, &ev, 1, 0);
    printf("et: %d %d\n", a, b);
    mainth = pthread_self();
    pthread_create(&waiter, 0, w, 0);
    pthread_create(&e, 0, em, 0);
    one_wait();
    pthread_join(waiter, 0);
    pthread_join(e, 0);
    printf("woken=%d eintr=%d\n", count, eintr);
    return 0;
}
"""

PWAIT_C = r"""
#include <sys/epoll.h>
#include <signal.h>
#include <stdio.h>
#include <errno.h>
#include <unistd.h>
static volatile int handled;
static void h(int s) { handled++; }
int main(void) {
    sigset_t block, empty, now;
    int efd = epoll_create1(0), p[2];
    struct epoll_event ev = { .events = EPOLLIN };
    pipe(p);
    epoll_ctl(efd, EPOLL_CTL_ADD, p[0], &ev);
    signal(SIGUSR1, h);
    sigemptyset(&block); sigaddset(&block, SIGUSR1); sigemptyset(&empty);
    sigprocmask(SIG_BLOCK, &block, NULL);
    raise(SIGUSR1);                                   /* pending, blocked */
    int r = epoll_pwait(efd, &ev, 1, 1000, &block);   /* still blocked: times out */
    printf("blocked: r=%d handled=%d\n", r, handled);
    r = epoll_pwait(efd, &ev, 1, -1, &empty);         /* unblocked for the wait: EINTR */
    int err = errno;
    sigprocmask(SIG_BLOCK, NULL, &now);
    printf("empty: r=%d eintr=%d handled=%d still-blocked=%d\n", r, err == EINTR, handled,
           sigismember(&now, SIGUSR1));
    return 0;
}
"""


def _run(tmp_path, monkeypatch, arch: str, name: str, source: str) -> str:
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    exe = build_cguest(src, arch, "-pthread")
    root = tmp_path / "root"
    root.mkdir()
    (root / name).write_bytes(exe.read_bytes())
    (root / name).chmod(0o755)
    monkeypatch.chdir(root)
    m = Machine(MachineConfig(arch=arch, root=str(root), root_rw=True))
    m.load(f"./{name}")
    r = m.run()
    assert r.exit_status == 0, r.stderr
    return r.stdout.decode()


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_dnotify_signals_as_linux(tmp_path, monkeypatch, arch):
    assert _run(tmp_path, monkeypatch, arch, "dn", DNOTIFY_C) == DNOTIFY_LINUX


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_epoll_edge_triggered_wakes_one_and_signal_gives_eintr(tmp_path, monkeypatch, arch):
    # epoll10's shape: two threads wait on one edge-triggered item, one write gets exactly one
    # of them an event; the other's wait ends with EINTR at SIGUSR1 although the handler has
    # SA_RESTART (signal(7): epoll_wait is never restarted; qemu-user, which restarts it, is
    # not the reference here)
    assert _run(tmp_path, monkeypatch, arch, "ep", EPOLL_C) == "et: 1 0\nwoken=1 eintr=1\n"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_epoll_pwait_waits_under_its_sigmask(tmp_path, monkeypatch, arch):
    # set_user_sigmask: a signal the temporary mask unblocks ends the wait with EINTR after its
    # handler ran, and the caller's mask is back afterwards (restore_saved_sigmask_unless)
    assert _run(tmp_path, monkeypatch, arch, "pw", PWAIT_C) == (
        "blocked: r=0 handled=0\nempty: r=-1 eintr=1 handled=1 still-blocked=1\n")
