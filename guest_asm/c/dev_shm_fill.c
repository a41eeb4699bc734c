/* Fill a /dev/shm file with write() until the machine's memory limit stops it (ENOSPC under
 * emukern's --mem-limit, as a full tmpfs), then unlink it and show its pages came back: a new
 * file takes as much again.  Also a sparse ftruncate far past the limit (charges nothing). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static long fill(const char *name) {
    static char chunk[65536];
    int fd = shm_open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);
    long total = 0, n;
    while ((n = write(fd, chunk, sizeof chunk)) > 0 && total < (1L << 30)) total += n;
    printf("%s: %ld bytes then errno %d\n", name, total, n < 0 ? errno : 0);
    close(fd);
    return total;
}

int main(void) {
    long a = fill("/fill-a");
    shm_unlink("/fill-a");
    long b = fill("/fill-b");
    printf("same again after unlink: %d\n", a == b);
    int fd = shm_open("/sparse", O_RDWR | O_CREAT, 0600);
    printf("ftruncate 64 GiB: %d\n", ftruncate(fd, 64L << 30));
    shm_unlink("/sparse");
    shm_unlink("/fill-b");
    return 0;
}
