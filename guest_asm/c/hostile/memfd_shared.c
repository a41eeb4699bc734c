/* A memfd mapped MAP_SHARED and PROT_WRITE: the mapping, a second mapping, read/write on the
 * descriptor and a forked child all see one set of pages; then memfd_create's flags and the
 * seals (F_ADD_SEALS/F_GET_SEALS) with the errnos mm/memfd.c and mm/shmem.c give. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *what, long r)
{
    if (r < 0)
        printf("%s: -1 errno %d\n", what, errno);
    else
        printf("%s: %ld\n", what, r);
}

int main(void)
{
    char back[16] = {0};
    int fd = memfd_create("shared", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    int st, pfd[2];
    char *p, *q, *r;

    setvbuf(stdout, NULL, _IONBF, 0);
    show("F_GETFD (MFD_CLOEXEC)", fcntl(fd, F_GETFD));
    show("F_GET_SEALS", fcntl(fd, F_GET_SEALS));
    show("ftruncate 8192", ftruncate(fd, 8192));
    show("write hello", write(fd, "hello", 5));
    p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    printf("mmap shared rw: %s\n", p == MAP_FAILED ? strerror(errno) : "ok");
    if (p == MAP_FAILED)
        return 1;
    printf("map sees write: %.5s\n", p);
    strcpy(p + 4096, "from map");
    pread(fd, back, 8, 4096);
    printf("pread sees map: %s\n", back);
    q = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    p[100] = 'Z';
    printf("second map sees first: %c\n", q[100]);
    pwrite(fd, "W", 1, 101);
    printf("maps see pwrite: %c %c\n", p[101], q[101]);
    if (fork() == 0) {
        p[200] = 'C';
        pwrite(fd, "K", 1, 300);
        _exit(0);
    }
    wait(&st);
    printf("parent sees child: %c %c\n", p[200], p[300]);
    {
        static const char zeros[8];
        pwrite(fd, zeros, 8, 4096);             /* over a page only the mapping wrote */
        printf("zeros over the map's page: %d\n", p[4096] == 0 && p[4103] == 0 && p[4096 + 8] == 0);
    }
    show("F_ADD_SEALS write while mapped", fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE));
    munmap(p, 8192);
    munmap(q, 4096);
    r = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    printf("mmap shared ro: %s\n", r == MAP_FAILED ? strerror(errno) : "ok");
    show("F_ADD_SEALS write with a read-only map", fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE));
    munmap(r, 4096);
    show("F_ADD_SEALS write unmapped", fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE));
    r = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    printf("mmap shared ro sealed: %s\n", r == MAP_FAILED ? strerror(errno) : "ok");
    show("F_GET_SEALS", fcntl(fd, F_GET_SEALS));
    show("write sealed", pwrite(fd, "x", 1, 0));
    p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    printf("mmap shared rw sealed: %s\n", p == MAP_FAILED ? strerror(errno) : "ok");
    printf("ro map reads: %.5s\n", r);
    show("ftruncate sealed-write file", ftruncate(fd, 100));

    fd = memfd_create("size", MFD_ALLOW_SEALING);
    show("F_GETFD (no MFD_CLOEXEC)", fcntl(fd, F_GETFD));
    show("write 100", write(fd, "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789", 100));
    show("F_ADD_SEALS shrink|grow", fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW));
    show("ftruncate 50", ftruncate(fd, 50));
    show("ftruncate 200", ftruncate(fd, 200));
    show("ftruncate 100", ftruncate(fd, 100));
    show("pwrite 20 at 90", pwrite(fd, "abcdefghijklmnopqrst", 20, 90));
    show("ftruncate 5000 (grow sealed)", ftruncate(fd, 5000));
    show("pwrite 1 at 100", pwrite(fd, "a", 1, 100));
    show("pwrite 5 at 0", pwrite(fd, "ABCDE", 5, 0));
    show("F_ADD_SEALS unknown bit", fcntl(fd, F_ADD_SEALS, 0x100));
    show("F_ADD_SEALS seal", fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL));
    show("F_ADD_SEALS after seal", fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE));
    show("F_GET_SEALS", fcntl(fd, F_GET_SEALS));

    fd = memfd_create("plain", 0);
    show("F_GET_SEALS without MFD_ALLOW_SEALING", fcntl(fd, F_GET_SEALS));
    show("F_ADD_SEALS without MFD_ALLOW_SEALING", fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE));
    pipe(pfd);
    show("F_GET_SEALS on a pipe", fcntl(pfd[0], F_GET_SEALS));
    show("F_ADD_SEALS on a pipe", fcntl(pfd[1], F_ADD_SEALS, F_SEAL_WRITE));
    show("memfd_create bad flag", memfd_create("x", 0x1000));
    return 0;
}
