/* POSIX shared memory through /dev/shm: shm_open (O_CREAT|O_EXCL), ftruncate, fstat, write,
 * mmap MAP_SHARED shared with a forked child (its stores seen by the parent, and by read),
 * a second shm_open of the same name, O_TRUNC, listing /dev/shm, shm_unlink.  One line per step;
 * the same under emukern and under qemu-user (the host's Linux, whose /dev/shm is a tmpfs). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *what, long r) {
    printf("%-30s %ld %d\n", what, r < 0 ? -1L : r, r < 0 ? errno : 0);
    errno = 0;
}

int main(void) {
    char name[64];
    snprintf(name, sizeof name, "/emukern-shm-probe-%d", (int)getpid() * 0 + 42);
    shm_unlink(name);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    show("shm_open create", fd >= 0 ? 0 : -1);
    show("shm_open excl again", shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600));
    show("ftruncate 3 pages", ftruncate(fd, 3 * 4096));
    struct stat sb;
    fstat(fd, &sb);
    printf("%-30s %lld %d\n", "  size, S_ISREG", (long long)sb.st_size, S_ISREG(sb.st_mode));
    show("pwrite", pwrite(fd, "via write", 9, 4096));
    char *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    show("mmap shared", p == MAP_FAILED ? -1 : 0);
    printf("%-30s \"%s\" %d\n", "  page 1 in map, page 0[0]", p + 4096, p[0]);
    pid_t pid = fork();
    if (pid == 0) {
        strcpy(p, "child wrote this");
        strcpy(p + 2 * 4096, "third page");
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    printf("%-30s \"%s\"\n", "  parent sees", p);
    char buf[32] = {0};
    pread(fd, buf, 10, 2 * 4096);
    printf("%-30s \"%s\"\n", "  read of page 2", buf);
    int fd2 = shm_open(name, O_RDONLY, 0);
    show("shm_open again rdonly", fd2 >= 0 ? 0 : -1);
    memset(buf, 0, sizeof buf);
    read(fd2, buf, 16);
    printf("%-30s \"%s\"\n", "  reads", buf);
    show("mmap rdonly fd PROT_WRITE", (long)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0));
    show("ftruncate shrink 100", ftruncate(fd, 100));
    printf("%-30s %d\n", "  map byte 200 after", p[200]);
    show("  read past end", pread(fd, buf, 10, 4096));
    int n = 0;
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (!strcmp(e->d_name, name + 1)) n++;
    if (d) closedir(d);
    printf("%-30s %d\n", "listed in /dev/shm", n);
    int fd3 = shm_open(name, O_RDWR | O_TRUNC, 0);
    fstat(fd3, &sb);
    printf("%-30s %lld\n", "O_TRUNC size", (long long)sb.st_size);
    show("shm_unlink", shm_unlink(name));
    show("shm_unlink again", shm_unlink(name));
    show("shm_open gone", shm_open(name, O_RDWR, 0));
    show("write after unlink", write(fd, "still", 5));
    munmap(p, 3 * 4096);
    return 0;
}
