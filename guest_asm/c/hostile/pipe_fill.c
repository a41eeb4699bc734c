/* Fill N pipes (non-blocking writes of a page until the pipe is full or memory runs out),
 * report how they stopped and how many bytes they hold, then close them all and fill one more.
 * Each pipe's buffer pages are charged to the machine's memory: under a limit too small for N
 * full pipes the later writes fail with ENOMEM (or pipe2 itself does), and the bytes stay under
 * the limit. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static long fill(int fd, int *err)
{
    static char page[4096];
    long got = 0;
    memset(page, 'p', sizeof page);
    for (;;) {
        ssize_t n = write(fd, page, sizeof page);
        if (n < 0) {
            *err = errno;
            return got;
        }
        got += n;
    }
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    struct rlimit rl = { 2 * n + 64, 2 * n + 64 };
    int (*fds)[2] = calloc(n, sizeof *fds);
    int made = 0, full = 0, nomem = 0, other = 0, perr = 0;
    long queued = 0;

    if (setrlimit(RLIMIT_NOFILE, &rl))
        perror("setrlimit");
    for (; made < n; made++) {
        int err = 0;
        if (pipe2(fds[made], O_NONBLOCK)) {
            perr = errno;
            break;
        }
        queued += fill(fds[made][1], &err);
        if (err == EAGAIN)
            full++;
        else if (err == ENOMEM)
            nomem++;
        else
            other++;
    }
    printf("pipes %d: full (EAGAIN) %d, out of memory (ENOMEM) %d, other %d\n", made, full, nomem, other);
    printf("queued %ld bytes\n", queued);
    printf("pipe2 errno %d\n", perr);
    for (int i = 0; i < made; i++) {
        close(fds[i][0]);
        close(fds[i][1]);
    }
    {
        int p[2], err = 0;
        long got;
        pipe2(p, O_NONBLOCK);
        got = fill(p[1], &err);
        printf("after closing all: one pipe takes %ld bytes, then errno %d\n", got, err);
    }
    return 0;
}
