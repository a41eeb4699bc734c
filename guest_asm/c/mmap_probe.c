/* mmap_probe: file-backed mmap of a file in the root, as Linux defines it — MAP_PRIVATE is
 * copy-on-write (stores stay private), MAP_SHARED of a read-only descriptor is read-only
 * (PROT_WRITE or a later mprotect(PROT_WRITE) is EACCES), bytes past EOF in the last page are
 * zero, an offset must be page-aligned, a write-only descriptor cannot be mapped, and code
 * mapped PROT_EXEC from a file runs.  argv[1]: the path of the data file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SHOW(what, x) printf("%s: %s\n", what, (x) == MAP_FAILED ? strerror(errno) : "mapped")

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "/data/hello.txt";
    int fd = open(path, O_RDONLY);
    if (fd < 0) { printf("open: %s\n", strerror(errno)); return 1; }
    char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    SHOW("private rw", p);
    printf("private reads: %.11s tail-zero=%d\n", p, p[100] == 0 && p[4095] == 0);
    memcpy(p, "HELLO", 5);
    char *q = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    printf("after private store: mine=%.5s fresh=%.5s\n", p, q);
    char buf[16] = {0};
    pread(fd, buf, 5, 0);
    printf("file unchanged: %s\n", buf);
    char *s = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    SHOW("shared ro", s);
    printf("shared reads: %.5s\n", s);
    printf("mprotect shared +w: %s\n", mprotect(s, 4096, PROT_READ | PROT_WRITE) ? strerror(errno) : "ok");
    printf("mprotect private ro: %s\n", mprotect(q, 4096, PROT_READ) ? strerror(errno) : "ok");
    SHOW("shared rw of O_RDONLY", mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    SHOW("unaligned offset", mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 100));
    SHOW("bad fd", mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, 77, 0));
    int dfd = open("/dev/zero", O_RDONLY);
    char *z = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, dfd, 0);
    SHOW("/dev/zero", z);
    printf("zero page: %d\n", z != MAP_FAILED && z[10] == 0);
    munmap(p, 8192);
    printf("munmap: ok\n");
    return 0;
}
