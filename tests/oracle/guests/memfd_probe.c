/* memfd_create: a file in memory, read/write/lseek/ftruncate/fstat/mmap, and its errors. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static void show(const char *what, long r) {
    if (r < 0) printf("%s: -1 %s\n", what, strerrorname_np(errno));
    else printf("%s: %ld\n", what, r);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int fd = memfd_create("probe", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    printf("fd >= 3: %d cloexec: %d\n", fd >= 3, fcntl(fd, F_GETFD) & FD_CLOEXEC);
    show("write", write(fd, "hello memfd", 11));
    struct stat st;
    fstat(fd, &st);
    printf("size %ld regular %d mode %o\n", (long)st.st_size, S_ISREG(st.st_mode), st.st_mode & 0777);
    show("lseek set", lseek(fd, 6, SEEK_SET));
    char buf[32] = {0};
    show("read", read(fd, buf, sizeof buf - 1));
    printf("read: %s\n", buf);
    show("lseek end", lseek(fd, 0, SEEK_END));
    show("ftruncate", ftruncate(fd, 8192));
    fstat(fd, &st);
    printf("size %ld\n", (long)st.st_size);
    char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    printf("mmap private: %s %d\n", m == MAP_FAILED ? "failed" : m, m == MAP_FAILED ? -1 : m[8191]);
    show("pread", pread(fd, buf, 5, 0));
    show("ftruncate shrink", ftruncate(fd, 5));
    show("lseek end", lseek(fd, 0, SEEK_END));
    char link[128] = {0};
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    show("readlink", readlink(path, link, sizeof link - 1));
    printf("link: %s\n", link);
    char name[300];
    memset(name, 'a', sizeof name);
    name[249] = 0;
    int f2 = memfd_create(name, 0);
    printf("249 bytes: %d cloexec: %d\n", f2 >= 0, fcntl(f2, F_GETFD) & FD_CLOEXEC);
    name[249] = 'a';
    name[250] = 0;
    show("250 bytes", memfd_create(name, 0));
    show("bad flags", memfd_create("x", 0x100));
    show("exec+noexec_seal", memfd_create("x", 0x18));
    show("bad name", syscall(SYS_memfd_create, (char *)8, 0));
    return 0;
}
