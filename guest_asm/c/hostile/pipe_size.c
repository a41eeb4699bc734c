/* F_GETPIPE_SZ / F_SETPIPE_SZ as fs/pipe.c answers them: sizes round up to a power-of-two
 * number of pages, a ring too small for the queued bytes is EBUSY, a file that is not a pipe is
 * EBADF; without CAP_SYS_RESOURCE a size above fs.pipe-max-size is EPERM, and once one user's
 * pipes hold more than fs.pipe-user-pages-soft pages, growing a pipe is EPERM and a new pipe
 * gets 2 pages. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
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
    static char buf[16384];
    int p[2], q[2], grown = 0, i;
    struct rlimit rl = { 4096, 4096 };

    setrlimit(RLIMIT_NOFILE, &rl);
    memset(buf, 'x', sizeof buf);
    pipe(p);
    show("default size", fcntl(p[0], F_GETPIPE_SZ));
    show("set 5000", fcntl(p[1], F_SETPIPE_SZ, 5000));
    show("set 1", fcntl(p[1], F_SETPIPE_SZ, 1));
    show("write 16384 into 4096", write(p[1], buf, 4096));
    show("set 1 with a page queued", fcntl(p[1], F_SETPIPE_SZ, 1));
    show("set 16384", fcntl(p[1], F_SETPIPE_SZ, 16384));
    show("write 8192 more", write(p[1], buf, 8192));
    show("shrink to 8192 with 12288 queued", fcntl(p[1], F_SETPIPE_SZ, 8192));
    show("root: set 2 MiB (above pipe-max-size)", fcntl(p[1], F_SETPIPE_SZ, 2 << 20));
    show("set 3 GiB", fcntl(p[1], F_SETPIPE_SZ, 3u << 30));
    show("set on /dev/null", fcntl(open("/dev/null", O_RDONLY), F_SETPIPE_SZ, 4096));
    show("get on /dev/null", fcntl(open("/dev/null", O_RDONLY), F_GETPIPE_SZ));
    if (setresuid(1000, 1000, 1000)) {
        printf("setresuid failed errno %d\n", errno);
        return 1;
    }
    pipe(q);
    show("user: set 2 MiB", fcntl(q[1], F_SETPIPE_SZ, 2 << 20));
    show("user: set 1 MiB", fcntl(q[1], F_SETPIPE_SZ, 1 << 20));
    show("user: set 1 MiB again (no growth)", fcntl(q[1], F_SETPIPE_SZ, 1 << 20));
    for (i = 0; i < 200; i++) {
        int r[2];
        if (pipe(r)) {
            printf("pipe %d errno %d\n", i, errno);
            break;
        }
        if (fcntl(r[1], F_SETPIPE_SZ, 1 << 20) < 0) {
            printf("user: 1 MiB pipes before EPERM: %d (errno %d)\n", grown, errno);
            break;
        }
        grown++;
    }
    pipe(q);
    show("user: a new pipe past the soft limit", fcntl(q[0], F_GETPIPE_SZ));
    show("user: grow it to 16384", fcntl(q[0], F_SETPIPE_SZ, 16384));
    show("user: shrink it to 4096", fcntl(q[0], F_SETPIPE_SZ, 4096));
    return 0;
}
