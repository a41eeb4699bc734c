/* proc_syscalls: process groups and sessions, umask, rusage/times/sysinfo, clock_getres and
 * prctl names — what real programs and the kernel selftests call besides files. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/times.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *thread_chdir(void *arg) { chdir((const char *)arg); return NULL; }

#define R(x) ({ long r_ = (long)(x); r_ < 0 ? -errno : r_; })

int main(void) {
    pid_t me = getpid();
    printf("pgid(0)==pid: %d sid(0)==pid: %d\n", getpgid(0) == me, getsid(0) == me);
    printf("setsid as group leader: %ld\n", R(setsid()));
    printf("getpgid(no such pid): %ld\n", R(getpgid(4242)));
    int fds[2];
    pipe(fds);
    pid_t kid = fork();
    if (kid == 0) {
        char c;
        read(fds[0], &c, 1);            /* wait until the parent moved us */
        long pg = getpgid(0);
        long s = R(setsid());
        printf("moved child: pgid=%s setsid=%ld (a group leader)\n", pg == getpid() ? "own" : "other", s);
        fflush(stdout);
        _exit(5);
    }
    printf("setpgid(child, 0): %ld\n", R(setpgid(kid, 0)));
    printf("child pgid==child: %d\n", getpgid(kid) == kid);
    printf("setpgid(bad pgid): %ld\n", R(setpgid(0, -3)));
    fflush(stdout);
    write(fds[1], "x", 1);
    int st;
    waitpid(kid, &st, 0);
    printf("child status %d\n", WEXITSTATUS(st));
    kid = fork();
    if (kid == 0) {
        long s = R(setsid());
        printf("second child: setsid=%s sid=%s pgid=%s setpgid-after=%ld\n", s == getpid() ? "own" : "fail",
               getsid(0) == getpid() ? "own" : "other", getpgid(0) == getpid() ? "own" : "other",
               R(setpgid(0, 0)));
        fflush(stdout);
        _exit(6);
    }
    waitpid(kid, &st, 0);
    printf("second child status %d, its sid now: %ld\n", WEXITSTATUS(st), R(getsid(kid)));
    mode_t old = umask(027);
    printf("umask old=%o new=%o\n", old, umask(old));
    /* fs_struct: fork copies cwd and umask, threads share them */
    char cwd[64];
    chdir("/proc");
    umask(077);
    kid = fork();
    if (kid == 0) {
        usleep(1000);           /* the parent changes its own cwd meanwhile */
        mode_t m = umask(0);
        printf("forked child cwd=%s umask=%o\n", getcwd(cwd, sizeof cwd), m);
        fflush(stdout);
        _exit(0);
    }
    chdir("/dev");
    waitpid(kid, &st, 0);
    pthread_t th;
    pthread_create(&th, NULL, thread_chdir, "/proc/self");
    pthread_join(th, NULL);
    printf("after a thread's chdir: %s\n", getcwd(cwd, sizeof cwd));
    umask(022);
    struct rusage ru;
    printf("getrusage self: %ld utime>0: %d\n", R(getrusage(RUSAGE_SELF, &ru)),
           ru.ru_utime.tv_sec > 0 || ru.ru_utime.tv_usec > 0);
    printf("getrusage bad who: %ld\n", R(getrusage(42, &ru)));
    struct tms t;
    printf("times >= 0: %d\n", times(&t) >= 0);
    struct sysinfo si;
    printf("sysinfo: %ld procs>=1: %d totalram>0: %d\n", R(sysinfo(&si)), si.procs >= 1, si.totalram > 0);
    struct timespec res;
    printf("clock_getres monotonic: %ld %ld.%09ld\n", R(clock_getres(CLOCK_MONOTONIC, &res)),
           (long)res.tv_sec, res.tv_nsec);
    printf("clock_getres coarse: %ld ns=%ld\n", R(clock_getres(CLOCK_MONOTONIC_COARSE, &res)), res.tv_nsec);
    printf("clock_getres bad: %ld\n", R(clock_getres(77, &res)));
    char name[16];
    prctl(PR_SET_NAME, "renamed-task");
    prctl(PR_GET_NAME, name);
    printf("prctl name: %s\n", name);
    return 0;
}
