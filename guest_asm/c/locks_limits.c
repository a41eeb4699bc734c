/* fcntl record locks at the edges of the range arithmetic (fs/locks.c's conversion of a struct
 * flock into a byte range) and a F_SETLKW deadlock through three processes.  Every line is the
 * return value, 0 or -errno, so the expected text is the same on every kernel that agrees:
 * ranges that end exactly at OFFSET_MAX and one byte past it (EOVERFLOW), negative lengths that
 * reach byte 0 and one byte before it (EINVAL), SEEK_CUR/SEEK_END offsets that overflow, every
 * l_whence that is not SEEK_SET/CUR/END, l_type values out of range, the OFD commands' l_pid rule,
 * and a wait-for cycle A -> B -> C -> A that the last waiter sees as EDEADLK.
 * argv[1]: a writable directory (default /tmp). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int lk(int fd, int cmd, short type, short whence, long long start, long long len)
{
    struct flock fl = {.l_type = type, .l_whence = whence, .l_start = start, .l_len = len};
    return fcntl(fd, cmd, &fl) < 0 ? -errno : 0;
}

static void show(const char *what, int r)
{
    printf("%-44s %d\n", what, r);
}

static char path[256];

/* one process of the cycle: hold byte `mine`, say so, wait for the go, then wait for `next` */
static void link_in_cycle(int mine, int next, int ready_w, int go_r, int result_w)
{
    int fd = open(path, O_RDWR);
    int r = lk(fd, F_SETLK, F_WRLCK, SEEK_SET, mine, 1);
    write(ready_w, &r, sizeof r);
    char c;
    read(go_r, &c, 1);
    r = lk(fd, F_SETLKW, F_WRLCK, SEEK_SET, next, 1);
    write(result_w, &r, sizeof r);
    read(go_r, &c, 1);           /* hold everything until the parent has read the results */
    _exit(0);                    /* not exit(): the parent's stdio buffer is not ours to flush */
}

int main(int argc, char **argv)
{
    snprintf(path, sizeof path, "%s/locks_limits", argc > 1 ? argv[1] : "/tmp");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror("open");
        return 1;
    }
    write(fd, "0123456789", 10);             /* i_size 10 for SEEK_END */
    const long long MAX = LLONG_MAX;

    /* 1. the end of the range: start + len - 1 may reach OFFSET_MAX, not pass it */
    show("SET start MAX len 1", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, MAX, 1));
    show("SET start MAX len 2", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, MAX, 2));
    show("SET start 0 len MAX", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, MAX));
    show("SET start 1 len MAX", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 1, MAX));
    show("SET start MAX len 0 (to EOF)", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, MAX, 0));
    show("SET start MAX len -1", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, MAX, -1));
    show("unlock all", lk(fd, F_SETLK, F_UNLCK, SEEK_SET, 0, 0));

    /* 2. negative lengths: the range [start + len, start - 1] must not go below byte 0 */
    show("SET start 5 len -5", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 5, -5));
    show("SET start 5 len -6", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 5, -6));
    show("SET start 0 len -1", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, -1));
    show("SET start 0 len MIN", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, LLONG_MIN));
    show("SET start MAX len MIN", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, MAX, LLONG_MIN));
    show("SET start MAX len -MAX", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, MAX, -MAX));
    show("SET start -1 len 0", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, -1, 0));
    show("SET start MIN len 1", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, LLONG_MIN, 1));

    /* 3. SEEK_CUR (file position 100) and SEEK_END (size 10) */
    lseek(fd, 100, SEEK_SET);
    show("CUR -100 len 1", lk(fd, F_SETLK, F_WRLCK, SEEK_CUR, -100, 1));
    show("CUR -101 len 1", lk(fd, F_SETLK, F_WRLCK, SEEK_CUR, -101, 1));
    show("CUR MAX len 1", lk(fd, F_SETLK, F_WRLCK, SEEK_CUR, MAX, 1));
    show("CUR MAX-100 len 1", lk(fd, F_SETLK, F_WRLCK, SEEK_CUR, MAX - 100, 1));
    show("CUR MAX-100 len 2", lk(fd, F_SETLK, F_WRLCK, SEEK_CUR, MAX - 100, 2));
    show("CUR MIN len 1", lk(fd, F_SETLK, F_WRLCK, SEEK_CUR, LLONG_MIN, 1));
    show("END 0 len -10", lk(fd, F_SETLK, F_WRLCK, SEEK_END, 0, -10));
    show("END 0 len -11", lk(fd, F_SETLK, F_WRLCK, SEEK_END, 0, -11));
    show("END MAX len 1", lk(fd, F_SETLK, F_WRLCK, SEEK_END, MAX, 1));
    show("END -11 len 1", lk(fd, F_SETLK, F_WRLCK, SEEK_END, -11, 1));
    show("unlock all", lk(fd, F_SETLK, F_UNLCK, SEEK_SET, 0, 0));

    /* 4. l_whence and l_type outside their values, through every command */
    static const short whences[] = {-1, 3, 4, 5, 0x7fff};
    for (unsigned i = 0; i < sizeof whences / sizeof *whences; i++) {
        char what[64];
        snprintf(what, sizeof what, "SETLK whence %d", whences[i]);
        show(what, lk(fd, F_SETLK, F_WRLCK, whences[i], 0, 1));
        snprintf(what, sizeof what, "GETLK whence %d", whences[i]);
        show(what, lk(fd, F_GETLK, F_WRLCK, whences[i], 0, 1));
        snprintf(what, sizeof what, "OFD_SETLK whence %d", whences[i]);
        show(what, lk(fd, F_OFD_SETLK, F_WRLCK, whences[i], 0, 1));
    }
    show("SETLK type -1", lk(fd, F_SETLK, -1, SEEK_SET, 0, 1));
    show("SETLK type 3", lk(fd, F_SETLK, 3, SEEK_SET, 0, 1));
    show("GETLK type 3", lk(fd, F_GETLK, 3, SEEK_SET, 0, 1));
    show("GETLK type F_UNLCK", lk(fd, F_GETLK, F_UNLCK, SEEK_SET, 0, 1));
    show("OFD_GETLK type F_UNLCK", lk(fd, F_OFD_GETLK, F_UNLCK, SEEK_SET, 0, 1));
    show("GETLK start MAX len 2", lk(fd, F_GETLK, F_WRLCK, SEEK_SET, MAX, 2));
    show("GETLK start 0 len -1", lk(fd, F_GETLK, F_WRLCK, SEEK_SET, 0, -1));
    {
        struct flock g = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1, .l_pid = 1};
        show("OFD_GETLK with l_pid 1", fcntl(fd, F_OFD_GETLK, &g) < 0 ? -errno : 0);
        g.l_pid = -1;
        show("OFD_SETLKW with l_pid -1", fcntl(fd, F_OFD_SETLKW, &g) < 0 ? -errno : 0);
        g.l_pid = 0;
        show("OFD_SETLK with l_pid 0", fcntl(fd, F_OFD_SETLK, &g) < 0 ? -errno : 0);
        g.l_type = F_UNLCK;
        show("OFD unlock", fcntl(fd, F_OFD_SETLK, &g) < 0 ? -errno : 0);
    }
    show("SETLK NULL pointer", fcntl(fd, F_SETLK, (struct flock *)0) < 0 ? -errno : 0);
    show("GETLK bad pointer", fcntl(fd, F_GETLK, (struct flock *)16) < 0 ? -errno : 0);

    /* 5. a three-process wait-for cycle: A holds 0 waits 1, B holds 1 waits 2, C holds 2 waits 0 */
    fflush(stdout);
    int ready[2], result[2], go[3][2];
    pipe(ready);
    pipe(result);
    pid_t pids[3];
    for (int i = 0; i < 3; i++) {
        pipe(go[i]);
        pids[i] = fork();
        if (pids[i] == 0)
            link_in_cycle(i, (i + 1) % 3, ready[1], go[i][0], result[1]);
    }
    for (int i = 0; i < 3; i++) {
        int r;
        read(ready[0], &r, sizeof r);
        printf("cycle: a holder took its byte: %d\n", r);
    }
    /* A, then B wait (nothing to detect yet); give each time to block before the next goes */
    write(go[0][1], "g", 1);
    usleep(200000);
    write(go[1][1], "g", 1);
    usleep(200000);
    write(go[2][1], "g", 1);           /* C closes the cycle: EDEADLK, and it stays a holder */
    int r;
    read(result[0], &r, sizeof r);
    printf("cycle: the waiter that closes it: %d\n", r);
    /* C goes away: its byte 2 is released, B gets it, B goes away, A gets byte 1 */
    write(go[2][1], "g", 1);
    waitpid(pids[2], NULL, 0);
    read(result[0], &r, sizeof r);
    printf("cycle: next waiter woken: %d\n", r);
    write(go[1][1], "g", 1);
    waitpid(pids[1], NULL, 0);
    read(result[0], &r, sizeof r);
    printf("cycle: last waiter woken: %d\n", r);
    write(go[0][1], "g", 1);
    waitpid(pids[0], NULL, 0);
    unlink(path);
    printf("done\n");
    return 0;
}
