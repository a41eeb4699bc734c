/* Process attributes and small file syscalls (emukern/kernel/syscalls_misc.py): credentials,
 * nice values, scheduling policies, personality, gettimeofday, the sync family, statfs,
 * preadv/pwritev[2], close_range.  Prints return values and errno only (no times, no sizes),
 * so its output is the same on every Linux: checked against misc_probe.expected by
 * tests/kernel/test_misc_syscalls.py and against Debian's kernels by the real-kernel oracle. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <sys/fsuid.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define T(name, expr) do { errno = 0; long _r = (long)(expr); \
    printf("%-26s %ld errno=%d\n", name, _r, _r < 0 ? errno : 0); } while (0)

int main(void) {
    struct timeval tv; struct timezone tz = {1, 1};
    T("gettimeofday", gettimeofday(&tv, &tz)); printf("tz %d %d\n", tz.tz_minuteswest, tz.tz_dsttime);
    T("gettimeofday-efault", syscall(SYS_gettimeofday, (void *)8, NULL));
    T("getpriority", getpriority(PRIO_PROCESS, 0));
    T("setpriority5", setpriority(PRIO_PROCESS, 0, 5));
    T("getpriority-after", getpriority(PRIO_PROCESS, 0));
    T("raw-getpriority", syscall(SYS_getpriority, PRIO_PROCESS, 0));
    T("setpriority-clamp", setpriority(PRIO_PROCESS, 0, 100));
    T("getpriority-clamped", getpriority(PRIO_PROCESS, 0));
    T("setpriority-back", setpriority(PRIO_PROCESS, 0, 0));
    T("getpriority-bad-which", getpriority(7, 0));
    T("getpriority-nopid", getpriority(PRIO_PROCESS, 99999));
    T("getpriority-pgrp", getpriority(PRIO_PGRP, 0));
    T("sched_getscheduler", sched_getscheduler(0));
    struct sched_param sp = {.sched_priority = 42};
    T("sched_getparam", sched_getparam(0, &sp)); printf("prio %d\n", sp.sched_priority);
    T("sched_getparam-null", syscall(SYS_sched_getparam, 0, NULL));
    T("sched_getparam-neg", sched_getparam(-1, &sp));
    T("prio_max_fifo", sched_get_priority_max(SCHED_FIFO));
    T("prio_min_rr", sched_get_priority_min(SCHED_RR));
    T("prio_max_other", sched_get_priority_max(SCHED_OTHER));
    T("prio_max_bad", sched_get_priority_max(77));
    sp.sched_priority = 0;
    T("setscheduler-batch", sched_setscheduler(0, SCHED_BATCH, &sp));
    T("getscheduler-batch", sched_getscheduler(0));
    sp.sched_priority = 10;
    T("setscheduler-other-prio10", sched_setscheduler(0, SCHED_OTHER, &sp));
    T("setscheduler-fifo-prio10", sched_setscheduler(0, SCHED_FIFO, &sp));
    T("getscheduler-fifo", sched_getscheduler(0));
    T("getparam-fifo", sched_getparam(0, &sp)); printf("prio %d\n", sp.sched_priority);
    sp.sched_priority = 0;
    T("setscheduler-fifo-prio0", sched_setscheduler(0, SCHED_FIFO, &sp));
    T("setscheduler-bad", sched_setscheduler(0, 77, &sp));
    T("setscheduler-reset", sched_setscheduler(0, SCHED_OTHER | SCHED_RESET_ON_FORK, &sp));
    T("getscheduler-reset", sched_getscheduler(0));
    struct timespec ts; T("rr_get_interval", sched_rr_get_interval(0, &ts));
    fflush(stdout);                 /* (a fully buffered stdout would be copied into the child) */
    pid_t c = fork();
    if (c == 0) { printf("child getscheduler %d\n", sched_getscheduler(0)); fflush(stdout); _exit(0); }
    waitpid(c, NULL, 0);
    uid_t r = 9, e = 9, s = 9; T("getresuid", getresuid(&r, &e, &s)); printf("ids %u %u %u\n", r, e, s);
    T("getresuid-efault", syscall(SYS_getresuid, &r, &e, (void *)8));
    gid_t groups[8]; T("getgroups0", getgroups(0, NULL));
    gid_t set[3] = {30, 10, 20};
    T("setgroups3", setgroups(3, set));
    T("getgroups-count", getgroups(0, NULL));
    T("getgroups-small", getgroups(1, groups));
    T("getgroups", getgroups(8, groups)); printf("groups %u %u %u\n", groups[0], groups[1], groups[2]);
    T("setgroups0", setgroups(0, NULL));
    int p[2]; T("pipe", pipe(p));
    T("fsync-pipe", fsync(p[0])); T("fdatasync-pipe", fdatasync(p[1])); T("fsync-bad", fsync(999));
    int d = open("/", O_RDONLY | O_DIRECTORY); T("open-root", d >= 0);
    T("fsync-dir", fsync(d)); T("syncfs-pipe", syncfs(p[0])); T("syncfs-bad", syncfs(999));
    sync(); printf("sync ok\n");
    struct statfs sf; T("statfs-root", statfs("/", &sf)); T("statfs-missing", statfs("/nonexistent", &sf));
    T("fstatfs-pipe", fstatfs(p[0], &sf)); printf("pipefs %d\n", sf.f_type == 0x50495045);
    T("fstatfs-bad", fstatfs(999, &sf));
    T("personality-query", personality(0xffffffff));
    T("personality-set", personality(ADDR_NO_RANDOMIZE));
    T("personality-now", personality(0xffffffff));
    T("personality-back", personality(PER_LINUX));
    write(p[1], "abcdefgh", 8);
    char b1[4] = {0}, b2[8] = {0}; struct iovec iov[2] = {{b1, 2}, {b2, 8}};
    T("readv-pipe", readv(p[0], iov, 2)); printf("%.2s|%.6s\n", b1, b2);
    T("preadv-pipe", preadv(p[0], iov, 2, 0));
    write(p[1], "xyz", 3);
    T("preadv2-pipe-cur", preadv2(p[0], iov, 2, -1, 0)); printf("%.2s|%.1s\n", b1, b2);
    T("preadv2-badflags", preadv2(d, iov, 2, 0, 0x100));
    T("preadv-neg", preadv(d, iov, 2, -5));
    T("preadv-dir", preadv(d, iov, 2, 0));
    int fds = dup(p[0]); dup(p[0]); dup(p[0]);
    T("close_range", close_range(fds, ~0U, 0)); T("fcntl-after", fcntl(fds, F_GETFD));
    T("close_range-bad", close_range(10, 5, 0)); T("close_range-badflags", close_range(3, 4, 0x80));
    T("close_range-cloexec", close_range(p[0], p[0], CLOSE_RANGE_CLOEXEC)); T("flags-after", fcntl(p[0], F_GETFD));
    T("setgid5", setgid(5)); T("getgid", getgid()); T("getegid", getegid());
    T("setresuid", setresuid(1000, 1000, 0));
    T("getuid", getuid()); T("geteuid", geteuid());
    T("setgroups-unpriv", setgroups(0, NULL));
    T("setuid-saved0", setuid(0)); T("geteuid-back", geteuid());
    T("seteuid-1000", seteuid(1000));
    T("setfsuid", setfsuid(1000)); T("setfsuid-old", setfsuid(-1));
    T("setuid-2000", setuid(2000));
    T("setreuid", setreuid(0, -1)); T("geteuid-root", geteuid());
    T("setresuid-all-1000", setresuid(1000, 1000, 1000));
    T("setuid-0-eperm", setuid(0)); T("setresuid-eperm", setresuid(-1, 0, -1));
    T("setpriority-unpriv-lower", setpriority(PRIO_PROCESS, 0, -1));
    T("setpriority-unpriv-raise", setpriority(PRIO_PROCESS, 0, 3));
    return 0;
}
