/* pipe2's flags: O_NONBLOCK (EAGAIN on an empty read and a full write, per end, and what
 * fcntl F_GETFL/F_SETFL say and change) and O_CLOEXEC (both ends close-on-exec, gone in the
 * program execve starts, while a plain pipe's descriptors stay).  Run as `pipe_flags EXE`, EXE
 * being this program's own path in the guest (it execs itself as `pipe_flags - R W R2 W2`). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *err(long r) { return r < 0 ? strerror(errno) : "ok"; }

static void after_exec(char **argv) {
    for (int i = 2; i < 6; i++) {
        int fd = atoi(argv[i]);
        int r = fcntl(fd, F_GETFD);
        printf("after exec: fd %s %s\n", i < 4 ? "cloexec" : "plain", r < 0 ? strerror(errno) : "open");
    }
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 5 && strcmp(argv[1], "-") == 0) {
        after_exec(argv);
        return 0;
    }
    int p[2];
    char buf[4096];
    if (pipe2(p, O_NONBLOCK) != 0)
        return 1;
    printf("nb F_GETFL r=%#x w=%#x\n", fcntl(p[0], F_GETFL), fcntl(p[1], F_GETFL));
    long r = read(p[0], buf, sizeof buf);
    printf("nb empty read: %ld %s\n", r, err(r));
    memset(buf, 'x', sizeof buf);
    long total = 0;
    for (;;) {
        r = write(p[1], buf, sizeof buf);
        if (r < 0)
            break;
        total += r;
    }
    printf("nb fill: %ld bytes, then %s\n", total, strerror(errno));
    r = read(p[0], buf, 100);
    printf("nb read: %ld\n", r);
    /* clear O_NONBLOCK on the read end: only that end changes */
    fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) & ~O_NONBLOCK);
    printf("after F_SETFL 0: r=%#x w=%#x\n", fcntl(p[0], F_GETFL), fcntl(p[1], F_GETFL));
    close(p[0]);
    close(p[1]);

    int q[2];
    if (pipe(q) != 0)
        return 1;
    fcntl(q[0], F_SETFL, O_NONBLOCK);
    r = read(q[0], buf, 10);
    printf("F_SETFL O_NONBLOCK read: %ld %s F_GETFL=%#x\n", r, err(r), fcntl(q[0], F_GETFL));

    int c[2];
    if (pipe2(c, O_CLOEXEC) != 0)
        return 1;
    printf("cloexec F_GETFD r=%d w=%d; plain F_GETFD %d\n", fcntl(c[0], F_GETFD), fcntl(c[1], F_GETFD),
           fcntl(q[0], F_GETFD));
    if (argc > 1) {
        char a[4][16];
        snprintf(a[0], 16, "%d", c[0]);
        snprintf(a[1], 16, "%d", c[1]);
        snprintf(a[2], 16, "%d", q[0]);
        snprintf(a[3], 16, "%d", q[1]);
        char *args[] = {argv[1], "-", a[0], a[1], a[2], a[3], NULL};
        execv(argv[1], args);
        printf("execv: %s\n", strerror(errno));
    }
    return 0;
}
