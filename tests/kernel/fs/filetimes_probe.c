/* File times and the realtime clock, printed one "name: values" per line for
   tests/kernel/fs/test_filetimes.py. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void st(const char *name, const char *path) {
    struct stat s;
    if (lstat(path, &s) != 0) { printf("%s: err\n", name); return; }
    printf("%s: %lld.%09ld %lld.%09ld %lld.%09ld\n", name,
           (long long)s.st_atim.tv_sec, s.st_atim.tv_nsec, (long long)s.st_mtim.tv_sec, s.st_mtim.tv_nsec,
           (long long)s.st_ctim.tv_sec, s.st_ctim.tv_nsec);
}

int main(int argc, char **argv) {
    struct timespec rt, mono, t2;
    struct timeval tv;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    gettimeofday(&tv, NULL);
    printf("realtime: %lld.%09ld\n", (long long)rt.tv_sec, rt.tv_nsec);
    printf("monotonic: %lld.%09ld\n", (long long)mono.tv_sec, mono.tv_nsec);
    printf("gettimeofday: %lld\n", (long long)tv.tv_sec);
    printf("time: %lld\n", (long long)time(NULL));
    st("host", "/data/old.txt");
    struct statx sx;
    if (statx(AT_FDCWD, "/data/old.txt", 0, STATX_BASIC_STATS, &sx) == 0)
        printf("statx: %lld.%09u\n", (long long)sx.stx_mtime.tv_sec, sx.stx_mtime.tv_nsec);
    st("proc", "/proc/self/status");
    st("devnull", "/dev/null");
    int p[2];
    struct stat ps;
    pipe(p);
    fstat(p[0], &ps);
    printf("pipe: %lld\n", (long long)ps.st_mtim.tv_sec);
    /* a file the guest makes: its times and its directory's are the guest's now */
    clock_gettime(CLOCK_REALTIME, &t2);
    printf("before_create: %lld.%09ld\n", (long long)t2.tv_sec, t2.tv_nsec);
    int fd = open("/data/new.txt", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    write(fd, "hello\n", 6);
    close(fd);
    st("new", "/data/new.txt");
    st("dir", "/data");
    /* a write to an old file: mtime/ctime now, atime stays */
    fd = open("/data/old.txt", O_WRONLY | O_APPEND);
    write(fd, "more\n", 5);
    close(fd);
    st("written", "/data/old.txt");
    struct timespec times[2] = {{1000000000, 5}, {1234567890, 123456789}};
    utimensat(AT_FDCWD, "/data/new.txt", times, 0);
    st("utimensat", "/data/new.txt");
    /* an absolute sleep on the realtime clock: 1 ms from now, not 56 years */
    clock_gettime(CLOCK_REALTIME, &t2);
    t2.tv_nsec += 1000000;
    if (t2.tv_nsec >= 1000000000) { t2.tv_sec++; t2.tv_nsec -= 1000000000; }
    struct timespec m0, m1;
    clock_gettime(CLOCK_MONOTONIC, &m0);
    int r = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &t2, NULL);
    clock_gettime(CLOCK_MONOTONIC, &m1);
    printf("abs_sleep: %d %lld\n", r,
           (long long)((m1.tv_sec - m0.tv_sec) * 1000000000LL + (m1.tv_nsec - m0.tv_nsec)));
    return 0;
}
