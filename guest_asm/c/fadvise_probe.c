/* fadvise64 (mm/fadvise.c) and readahead (mm/readahead.c) on the kinds of file a program meets:
 * a regular file read-only and write-only, a directory, both ends of a pipe, an eventfd, a
 * memfd, /proc/self/status, closed and negative descriptors, bad advice and lengths.  Raw
 * syscall() so the register's upper halves reach the kernel as written.  argv[1]: a writable
 * directory.  Prints return values and errnos only. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define T(name, expr) do { errno = 0; long _r = (long)(expr); \
    printf("%-28s %ld errno=%d\n", name, _r, _r < 0 ? errno : 0); } while (0)
#define FADV(fd, off, len, adv) syscall(SYS_fadvise64, (long)(fd), (long)(off), (long)(len), (long)(adv))
#define RA(fd, off, cnt) syscall(SYS_readahead, (long)(fd), (long)(off), (long)(cnt))

int main(int argc, char **argv) {
    char path[512];
    snprintf(path, sizeof path, "%s/fadv.dat", argc > 1 ? argv[1] : "/tmp");
    int w = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    char buf[8192];
    memset(buf, 'x', sizeof buf);
    if (w < 0 || write(w, buf, sizeof buf) != sizeof buf) { perror("setup"); return 1; }
    int r = open(path, O_RDONLY);
    int d = open(argc > 1 ? argv[1] : "/tmp", O_RDONLY | O_DIRECTORY);
    int p[2];
    pipe(p);
    int ev = eventfd(0, 0);
    int mf = memfd_create("m", 0);
    ftruncate(mf, 4096);
    int ps = open("/proc/self/status", O_RDONLY);

    for (int adv = -1; adv <= 7; adv++) {
        char n[32];
        snprintf(n, sizeof n, "fadvise file adv=%d", adv);
        T(n, FADV(r, 0, 0, adv));
    }
    T("fadvise adv hi bits", FADV(r, 0, 0, 0x100000003L));
    T("fadvise fd hi bits", FADV((1L << 32) | r, 0, 4096, 0));
    T("fadvise write-only", FADV(w, 0, 4096, 4));
    T("fadvise len -1", FADV(r, 0, -1, 0));
    T("fadvise off -1", FADV(r, -1, 4096, 0));
    T("fadvise willneed range", FADV(r, 4096, 1 << 20, 3));
    T("fadvise dontneed all", FADV(r, 0, 0, 4));
    T("fadvise dir", FADV(d, 0, 0, 1));
    T("fadvise dir bad adv", FADV(d, 0, 0, 9));
    T("fadvise pipe r", FADV(p[0], 0, 0, 0));
    T("fadvise pipe w", FADV(p[1], 0, 0, 0));
    T("fadvise pipe bad adv", FADV(p[0], 0, 0, 9));
    T("fadvise pipe len -1", FADV(p[0], 0, -1, 0));
    T("fadvise eventfd", FADV(ev, 0, 0, 2));
    T("fadvise eventfd bad adv", FADV(ev, 0, 0, 6));
    T("fadvise memfd", FADV(mf, 0, 4096, 3));
    T("fadvise proc", FADV(ps, 0, 0, 2));
    T("fadvise closed", FADV(1000, 0, 0, 0));
    T("fadvise closed bad adv", FADV(1000, 0, 0, 9));
    T("fadvise fd -1", FADV(-1, 0, 0, 0));
    T("posix_fadvise seq", -posix_fadvise(r, 0, 0, POSIX_FADV_SEQUENTIAL));
    T("posix_fadvise pipe", -posix_fadvise(p[0], 0, 0, POSIX_FADV_NORMAL));

    T("readahead file", RA(r, 0, 8192));
    T("readahead file past end", RA(r, 1 << 30, 4096));
    T("readahead off -1", RA(r, -1, 4096));
    T("readahead count 0", RA(r, 0, 0));
    T("readahead count 2^63", RA(r, 0, 1UL << 63));
    T("readahead count -1", RA(r, 0, -1L));
    T("readahead fd hi bits", RA((1L << 32) | r, 0, 4096));
    T("readahead write-only", RA(w, 0, 4096));
    T("readahead dir", RA(d, 0, 4096));
    T("readahead pipe r", RA(p[0], 0, 4096));
    T("readahead pipe w", RA(p[1], 0, 4096));
    T("readahead eventfd", RA(ev, 0, 4096));
    T("readahead memfd", RA(mf, 0, 4096));
    T("readahead proc", RA(ps, 0, 4096));
    T("readahead closed", RA(1000, 0, 4096));
    T("readahead fd -1", RA(-1, 0, 4096));
    unlink(path);
    return 0;
}
