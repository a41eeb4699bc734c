/* select/pselect (pselect6, emukern/kernel/select.py): readiness of pipes, the time left written
 * back, a wait a child's write ends, EBADF/EINVAL/EFAULT, a signal ending the wait (EINTR), and
 * pselect's mask.  Prints only what is the same on every Linux (no raw times). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define T(name, expr) do { errno = 0; long _r = (long)(expr); \
    printf("%-24s %ld errno=%d\n", name, _r, _r < 0 ? errno : 0); } while (0)

static void on_usr1(int s) { (void)s; }

int main(void) {
    int p[2], q[2];
    pipe(p); pipe(q);
    fd_set r, w; struct timeval tv = {0, 0};
    FD_ZERO(&r); FD_SET(p[0], &r);
    T("select-empty-zero-tmo", select(p[0] + 1, &r, NULL, NULL, &tv));
    printf("isset %d\n", FD_ISSET(p[0], &r));
    write(p[1], "x", 1);
    FD_ZERO(&r); FD_SET(p[0], &r); FD_SET(q[0], &r); FD_ZERO(&w); FD_SET(p[1], &w);
    tv = (struct timeval){5, 0};
    T("select-ready", select(q[0] + 1, &r, &w, NULL, &tv));
    printf("r %d %d w %d left<=5s %d\n", FD_ISSET(p[0], &r), FD_ISSET(q[0], &r), FD_ISSET(p[1], &w),
           tv.tv_sec <= 5 && tv.tv_sec >= 4);
    FD_ZERO(&r); FD_SET(q[0], &r);
    tv = (struct timeval){0, 20000};
    T("select-timeout", select(q[0] + 1, &r, NULL, NULL, &tv));
    printf("after timeout left %ld %ld isset %d\n", (long)tv.tv_sec, (long)tv.tv_usec, FD_ISSET(q[0], &r));
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) { usleep(10000); write(q[1], "y", 1); _exit(0); }
    FD_ZERO(&r); FD_SET(q[0], &r);
    T("select-woken", select(q[0] + 1, &r, NULL, NULL, NULL));
    printf("isset %d\n", FD_ISSET(q[0], &r));
    waitpid(c, NULL, 0);
    close(p[1]);
    char b[4]; read(p[0], b, 1);
    FD_ZERO(&r); FD_SET(p[0], &r);
    T("select-eof-readable", select(p[0] + 1, &r, NULL, NULL, NULL));
    FD_ZERO(&r); FD_SET(p[1], &r);
    T("select-closed-fd", select(p[1] + 1, &r, NULL, NULL, NULL));
    T("select-negative-n", select(-1, NULL, NULL, NULL, NULL));
    tv = (struct timeval){0, -1};
    T("select-bad-tmo", select(1, NULL, NULL, NULL, &tv));
    T("select-efault-set", select(4, (fd_set *)8, NULL, NULL, NULL));
    struct timespec ts = {0, 1000000};
    T("pselect-nothing", pselect(0, NULL, NULL, NULL, &ts, NULL));
    struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_handler = on_usr1; sigaction(SIGUSR1, &sa, NULL);
    fflush(stdout);
    c = fork();
    if (c == 0) { usleep(10000); kill(getppid(), SIGUSR1); _exit(0); }
    FD_ZERO(&r); FD_SET(q[0], &r); read(q[0], b, 1);
    T("select-eintr", select(q[0] + 1, &r, NULL, NULL, NULL));
    waitpid(c, NULL, 0);
    sigset_t blk, none; sigemptyset(&blk); sigaddset(&blk, SIGUSR1); sigemptyset(&none);
    sigprocmask(SIG_BLOCK, &blk, NULL);
    kill(getpid(), SIGUSR1);                 /* pending while blocked */
    ts = (struct timespec){0, 1000000};
    T("pselect-blocked-mask", pselect(0, NULL, NULL, NULL, &ts, &blk));
    T("pselect-unblocks", pselect(0, NULL, NULL, NULL, &ts, &none));
    struct { const sigset_t *ss; size_t len; } arg = {&none, 7};
    T("pselect6-bad-sslen", syscall(SYS_pselect6, 0, NULL, NULL, NULL, &ts, &arg));
    return 0;
}
