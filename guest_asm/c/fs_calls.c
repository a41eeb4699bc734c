/* fs_calls: the path and descriptor syscalls with absolute paths only, so that qemu-user -L
 * (which maps absolute open/stat paths into its prefix) is a valid oracle.  Prints modes, sizes
 * and errnos — never inode numbers, devices or times. argv[1] = the data directory. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static const char *D;
static char P[512];
static const char *at(const char *rel) { snprintf(P, sizeof P, "%s/%s", D, rel); return P; }
static const char *err(long r) { return r < 0 ? strerror(errno) : "ok"; }

int main(int argc, char **argv) {
    D = argc > 1 ? argv[1] : "/data";
    struct stat st;
    struct statx sx;
    char buf[256];
    printf("stat file: %s mode=%o size=%lld\n", err(stat(at("hello.txt"), &st)), st.st_mode, (long long)st.st_size);
    printf("stat dir: %s isdir=%d\n", err(stat(at("sub"), &st)), S_ISDIR(st.st_mode));
    printf("lstat link: %s islnk=%d size=%lld\n", err(lstat(at("rel"), &st)), S_ISLNK(st.st_mode), (long long)st.st_size);
    printf("stat via link: %s size=%lld\n", err(stat(at("rel"), &st)), (long long)st.st_size);
    printf("stat missing: %s\n", err(stat(at("nope"), &st)));
    printf("stat through file: %s\n", err(stat(at("hello.txt/x"), &st)));
    printf("statx: %s mask-basic=%d size=%lld mode=%o\n",
           err(statx(AT_FDCWD, at("hello.txt"), 0, STATX_BASIC_STATS, &sx)),
           (sx.stx_mask & STATX_BASIC_STATS) == STATX_BASIC_STATS, (long long)sx.stx_size, sx.stx_mode);
    int dfd = open(D, O_RDONLY | O_DIRECTORY);
    printf("openat relative to dirfd: %s\n", err(openat(dfd, "sub/nested.txt", O_RDONLY)));
    printf("fstatat AT_EMPTY_PATH: %s isdir=%d\n", err(fstatat(dfd, "", &st, AT_EMPTY_PATH)), S_ISDIR(st.st_mode));
    printf("O_DIRECTORY on a file: %s\n", err(open(at("hello.txt"), O_RDONLY | O_DIRECTORY)));
    printf("O_NOFOLLOW on a link: %s\n", err(open(at("rel"), O_RDONLY | O_NOFOLLOW)));
    printf("read a directory: %s\n", err(read(dfd, buf, 10)));
    long n = readlink(at("rel"), buf, 3);
    printf("readlink truncated: %ld %.3s\n", n, buf);
    printf("readlink of a file: %s\n", err(readlink(at("hello.txt"), buf, sizeof buf)));
    printf("access R_OK: %s X_OK on data file: %s\n", err(access(at("hello.txt"), R_OK)), err(access(at("hello.txt"), X_OK)));
    printf("faccessat2: %s\n", err(syscall(SYS_faccessat2, AT_FDCWD, at("sub"), X_OK, 0)));
    printf("faccessat2 bad flags: %s\n", err(syscall(SYS_faccessat2, AT_FDCWD, at("sub"), X_OK, 0x4)));
    int fd = open(at("hello.txt"), O_RDONLY);
    printf("lseek end: %lld cur-back: %lld negative: %s\n", (long long)lseek(fd, 0, SEEK_END),
           (long long)lseek(fd, -4, SEEK_CUR), err(lseek(fd, -100, SEEK_SET)));
    printf("lseek bad whence: %s\n", err(lseek(fd, 0, 9)));
    n = read(fd, buf, sizeof buf);
    printf("read tail: %ld\n", n);
    printf("write to O_RDONLY: %s\n", err(write(fd, "x", 1)));
    char a[4] = {0}, b[8] = {0};
    struct iovec iov[2] = {{a, 3}, {b, 7}};
    lseek(fd, 0, SEEK_SET);
    n = readv(fd, iov, 2);
    printf("readv: %ld '%.3s' '%.7s'\n", n, a, b);
    printf("fcntl getfd: %d\n", fcntl(fd, F_GETFD));
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    printf("fcntl getfd after set: %d getfl accmode: %d\n", fcntl(fd, F_GETFD), fcntl(fd, F_GETFL) & O_ACCMODE);
    int d2 = dup3(fd, 40, O_CLOEXEC);
    printf("dup3 cloexec: %d %d\n", d2, fcntl(d2, F_GETFD));
    DIR *d = opendir(at("sub"));
    int count = 0;
    while (readdir(d)) count++;
    printf("sub entries incl dot/dotdot: %d\n", count);
    printf("open missing dir component: %s\n", err(open(at("nope/x"), O_RDONLY)));
    printf("getdents on a file: %s\n", err(syscall(SYS_getdents64, fd, buf, sizeof buf)));
    return 0;
}
