/* fcntl record locks (POSIX and OFD) as Linux has them (fs/locks.c): conflicts across
 * processes, F_GETLK, merging and splitting, l_whence/l_len forms, close-releases-all, OFD
 * ownership, blocking F_SETLKW and its wakeup, EDEADLK, threads sharing the process's locks,
 * a signal ending a wait, exit releasing, and flock's independence.  Prints one line per fact;
 * tests/kernel/fs/test_posix_locks.py compares the output with qemu-user (the host kernel). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static char path[512];
static pid_t parent_pid;

static int lk(int fd, int cmd, short type, short whence, off_t start, off_t len)
{
    struct flock fl = {0};
    fl.l_type = type; fl.l_whence = whence; fl.l_start = start; fl.l_len = len;
    return fcntl(fd, cmd, &fl) < 0 ? -errno : 0;
}

static const char *tname(int t) { return t == F_RDLCK ? "R" : t == F_WRLCK ? "W" : t == F_UNLCK ? "U" : "?"; }

/* what another owner sees over bytes [0, n): one letter per byte (F_GETLK for a write lock) */
static void map(const char *what, int n)
{
    int fd = open(path, O_RDWR);
    char s[128];
    for (int b = 0; b < n; b++) {
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = b, .l_len = 1};
        if (fcntl(fd, F_GETLK, &fl) < 0) { s[b] = 'E'; continue; }
        s[b] = fl.l_type == F_UNLCK ? '.' : fl.l_type == F_RDLCK ? 'r' : 'w';
    }
    s[n] = 0;
    printf("%s: %s\n", what, s);
    close(fd);
}

/* F_GETLK as a separate process would issue it, with every field it reports */
static void getlk_line(const char *what, int fd, int cmd, short type, off_t start, off_t len)
{
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len, .l_pid = 0};
    int r = fcntl(fd, cmd, &fl) < 0 ? -errno : 0;
    const char *who = fl.l_pid == parent_pid ? "parent" : fl.l_pid == -1 ? "-1" : fl.l_pid == 0 ? "0" : "other";
    printf("%s: ret %d type %s whence %d start %lld len %lld pid %s\n", what, r, tname(fl.l_type),
           fl.l_whence, (long long)fl.l_start, (long long)fl.l_len, who);
}

/* run fn in a child process and wait for it */
static void in_child(void (*fn)(void))
{
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) { fn(); fflush(stdout); _exit(0); }
    int st; waitpid(p, &st, 0);
}

static void child_map40(void) { map("  seen by another process", 40); }
static void child_conflicts(void)
{
    int fd = open(path, O_RDWR);
    getlk_line("  child F_GETLK W 0..EOF", fd, F_GETLK, F_WRLCK, 0, 0);
    getlk_line("  child F_GETLK R 0..EOF", fd, F_GETLK, F_RDLCK, 0, 0);
    getlk_line("  child F_GETLK R 25+5", fd, F_GETLK, F_RDLCK, 25, 5);
    printf("  child F_SETLK W 15+10: %d\n", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 15, 10));
    printf("  child F_SETLK R 30+5: %d\n", lk(fd, F_SETLK, F_RDLCK, SEEK_SET, 30, 5));
    printf("  child F_SETLK W 20+1: %d\n", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 20, 1));
    printf("  child F_OFD_SETLK W 5+1: %d\n", lk(fd, F_OFD_SETLK, F_WRLCK, SEEK_SET, 5, 1));
    close(fd);
}

static int tfd;
static void *thread_lock(void *arg)
{
    (void)arg;
    printf("  thread F_SETLK W 0+10 (main holds R): %d\n", lk(tfd, F_SETLK, F_WRLCK, SEEK_SET, 0, 10));
    fflush(stdout);
    return NULL;
}
static void *thread_close(void *arg)
{
    int fd2 = open(path, O_RDONLY);
    close(fd2);        /* any close by the process drops all its locks on the file */
    (void)arg;
    return NULL;
}

static void on_alarm(int s) { (void)s; }

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    snprintf(path, sizeof path, "%s/locked", argc > 1 ? argv[1] : "/tmp");
    parent_pid = getpid();
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    char buf[100];
    memset(buf, 'x', sizeof buf);
    write(fd, buf, sizeof buf);
    printf("sizeof(struct flock) %zu\n", sizeof(struct flock));

    /* 1. conflicts seen from another process */
    printf("parent F_SETLK W 10+10: %d\n", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 10, 10));
    printf("parent F_SETLK R 20+10: %d\n", lk(fd, F_SETLK, F_RDLCK, SEEK_SET, 20, 10));
    in_child(child_conflicts);
    in_child(child_map40);
    getlk_line("own F_GETLK W 0..EOF", fd, F_GETLK, F_WRLCK, 0, 0);
    printf("unlock all: %d\n", lk(fd, F_SETLK, F_UNLCK, SEEK_SET, 0, 0));
    in_child(child_map40);

    /* 2. merging and splitting within one owner */
    lk(fd, F_SETLK, F_RDLCK, SEEK_SET, 0, 5);
    lk(fd, F_SETLK, F_RDLCK, SEEK_SET, 5, 5);       /* touches: one lock 0-9 */
    lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 3, 2);       /* splits: R 0-2, W 3-4, R 5-9 */
    lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 20, 5);
    lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 26, 4);      /* a gap of one: two locks */
    lk(fd, F_SETLK, F_RDLCK, SEEK_SET, 22, 6);      /* across both: W 20-21 R 22-27 W 28-29 */
    in_child(child_map40);
    lk(fd, F_SETLK, F_UNLCK, SEEK_SET, 1, 1);       /* a hole */
    lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 4, 3);       /* W 3-6 merges with W 3-4 */
    lk(fd, F_SETLK, F_UNLCK, SEEK_SET, 24, 100);
    in_child(child_map40);
    struct flock q = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 4, .l_len = 0};
    {
        int fd2 = open(path, O_RDWR);
        fflush(stdout);
        pid_t p = fork();
        if (p == 0) {
            struct flock g = q;
            fcntl(fd2, F_GETLK, &g);
            printf("  first conflict from 4: type %s start %lld len %lld\n", tname(g.l_type),
                   (long long)g.l_start, (long long)g.l_len);
            _exit(0);
        }
        waitpid(p, NULL, 0);
        close(fd2);     /* our own close: drops all of our locks on the file */
    }
    in_child(child_map40);

    /* 3. l_whence and l_len forms */
    lseek(fd, 30, SEEK_SET);
    printf("SEEK_CUR -5 len 3: %d\n", lk(fd, F_SETLK, F_WRLCK, SEEK_CUR, -5, 3));
    printf("SEEK_SET 12 len -4: %d\n", lk(fd, F_SETLK, F_RDLCK, SEEK_SET, 12, -4));
    printf("SEEK_END -68 len 2: %d\n", lk(fd, F_SETLK, F_WRLCK, SEEK_END, -68, 2));
    printf("SEEK_SET 36 len 0: %d\n", lk(fd, F_SETLK, F_RDLCK, SEEK_SET, 36, 0));
    in_child(child_map40);
    printf("bad whence: %d\n", lk(fd, F_SETLK, F_WRLCK, 7, 0, 1));
    printf("bad type: %d\n", lk(fd, F_SETLK, 9, SEEK_SET, 0, 1));
    printf("negative start: %d\n", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, -1, 1));
    printf("len reaching below 0: %d\n", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 2, -3));
    printf("F_GETLK with F_UNLCK: %d\n", lk(fd, F_GETLK, F_UNLCK, SEEK_SET, 0, 1));
    printf("overflow: %d\n", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0x7fffffffffffff00LL, 0x1000));
    {
        struct flock g = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 1LL << 40, .l_len = 1};
        fflush(stdout);
        pid_t p = fork();
        if (p == 0) {
            int fd3 = open(path, O_RDONLY);
            fcntl(fd3, F_GETLK, &g);
            printf("  far byte: type %s start %lld len %lld\n", tname(g.l_type), (long long)g.l_start,
                   (long long)g.l_len);
            _exit(0);
        }
        waitpid(p, NULL, 0);
    }
    int wo = open(path, O_WRONLY), ro = open(path, O_RDONLY);
    printf("R on O_WRONLY: %d\n", lk(wo, F_SETLK, F_RDLCK, SEEK_SET, 50, 1));
    printf("W on O_RDONLY: %d\n", lk(ro, F_SETLK, F_WRLCK, SEEK_SET, 50, 1));
    printf("U on O_RDONLY: %d\n", lk(ro, F_SETLK, F_UNLCK, SEEK_SET, 50, 1));
    printf("bad fd: %d\n", lk(99, F_SETLK, F_WRLCK, SEEK_SET, 0, 1));
    close(wo);            /* drops every lock of ours on the file */
    close(ro);
    in_child(child_map40);

    /* 4. dup'ed descriptors: closing the dup drops the locks too */
    lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 4);
    int d = dup(fd);
    close(d);
    in_child(child_map40);

    /* 5. OFD locks: owned by the description */
    int o1 = open(path, O_RDWR), o2 = open(path, O_RDWR);
    printf("OFD W 0+10 on o1: %d\n", lk(o1, F_OFD_SETLK, F_WRLCK, SEEK_SET, 0, 10));
    printf("OFD W 5+1 on o2 (another description): %d\n", lk(o2, F_OFD_SETLK, F_WRLCK, SEEK_SET, 5, 1));
    printf("POSIX W 5+1 (same process): %d\n", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 5, 1));
    getlk_line("POSIX F_GETLK sees OFD", fd, F_GETLK, F_WRLCK, 0, 0);
    getlk_line("OFD F_GETLK on o1 (own)", o1, F_OFD_GETLK, F_WRLCK, 0, 0);
    {
        struct flock g = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_pid = 5};
        printf("OFD with l_pid: %d\n", fcntl(o1, F_OFD_SETLK, &g) < 0 ? -errno : 0);
    }
    getlk_line("OFD F_GETLK F_UNLCK on o1 (its own lock)", o1, F_OFD_GETLK, F_UNLCK, 5, 1);
    getlk_line("OFD F_GETLK F_UNLCK on o2 (none of its own)", o2, F_OFD_GETLK, F_UNLCK, 0, 0);
    getlk_line("OFD F_GETLK type 7", o2, F_OFD_GETLK, 7, 0, 0);
    printf("POSIX W 20+5: %d\n", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 20, 5));
    getlk_line("OFD F_GETLK on o2 sees POSIX", o2, F_OFD_GETLK, F_RDLCK, 15, 0);
    close(o2);            /* drops our POSIX locks, not o1's OFD lock */
    in_child(child_map40);
    {
        fflush(stdout);
        pid_t p = fork();
        if (p == 0) {      /* the child shares o1's description: the same OFD owner */
            printf("  child OFD W 8+4 through inherited o1: %d\n", lk(o1, F_OFD_SETLK, F_WRLCK, SEEK_SET, 8, 4));
            printf("  child POSIX W 8+1 through o1: %d\n", lk(o1, F_SETLK, F_WRLCK, SEEK_SET, 8, 1));
            close(o1);     /* not the last reference: the OFD lock stays */
            _exit(0);
        }
        waitpid(p, NULL, 0);
    }
    in_child(child_map40);
    close(o1);             /* the last close of the description */
    in_child(child_map40);

    /* 6. threads share the process's locks */
    lk(fd, F_SETLK, F_RDLCK, SEEK_SET, 0, 10);
    tfd = fd;
    pthread_t th;
    pthread_create(&th, NULL, thread_lock, NULL);
    pthread_join(th, NULL);
    in_child(child_map40);
    pthread_create(&th, NULL, thread_close, NULL);
    pthread_join(th, NULL);
    in_child(child_map40);

    /* 7. F_SETLKW blocks and is woken; 8. EDEADLK */
    int pp[2];
    pipe(pp);
    lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 1);
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        int cfd = open(path, O_RDWR);
        printf("  child F_SETLK W 1+1: %d\n", lk(cfd, F_SETLK, F_WRLCK, SEEK_SET, 1, 1));
        write(pp[1], "x", 1);
        int r = lk(cfd, F_SETLKW, F_WRLCK, SEEK_SET, 0, 1);
        printf("  child F_SETLKW W 0+1 returned %d\n", r);
        _exit(0);
    }
    read(pp[0], buf, 1);
    usleep(200000);
    printf("parent F_SETLKW W 1+1 (child waits for us): %d\n", lk(fd, F_SETLKW, F_WRLCK, SEEK_SET, 1, 1));
    printf("parent F_SETLK W 1+1: %d\n", lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 1, 1));
    printf("parent unlocks 0+1\n");
    lk(fd, F_SETLK, F_UNLCK, SEEK_SET, 0, 1);
    waitpid(c, NULL, 0);
    in_child(child_map40);

    /* 9. a signal ends F_SETLKW: EINTR without SA_RESTART */
    lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 1);
    fflush(stdout);
    c = fork();
    if (c == 0) {
        struct sigaction sa = {0};
        sa.sa_handler = on_alarm;
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval it = {.it_value = {0, 50000}};
        setitimer(ITIMER_REAL, &it, NULL);
        int cfd = open(path, O_RDWR);
        printf("  child F_SETLKW interrupted: %d\n", lk(cfd, F_SETLKW, F_WRLCK, SEEK_SET, 0, 1));
        sa.sa_flags = SA_RESTART;
        sigaction(SIGALRM, &sa, NULL);
        setitimer(ITIMER_REAL, &it, NULL);
        write(pp[1], "x", 1);
        printf("  child F_SETLKW with SA_RESTART: %d\n", lk(cfd, F_SETLKW, F_WRLCK, SEEK_SET, 0, 1));
        _exit(0);
    }
    read(pp[0], buf, 1);
    usleep(300000);
    printf("parent unlocks 0+1 again\n");
    lk(fd, F_SETLK, F_UNLCK, SEEK_SET, 0, 1);
    waitpid(c, NULL, 0);

    /* 10. exit releases; flock and POSIX locks do not see each other */
    fflush(stdout);
    c = fork();
    if (c == 0) {
        int cfd = open(path, O_RDWR);
        lk(cfd, F_SETLK, F_WRLCK, SEEK_SET, 0, 40);
        flock(cfd, LOCK_EX);
        _exit(0);           /* both go with the process */
    }
    waitpid(c, NULL, 0);
    in_child(child_map40);
    printf("flock LOCK_EX: %d\n", flock(fd, LOCK_EX) < 0 ? -errno : 0);
    fflush(stdout);
    c = fork();
    if (c == 0) {
        int cfd = open(path, O_RDWR);
        printf("  child POSIX W over flock'd file: %d\n", lk(cfd, F_SETLK, F_WRLCK, SEEK_SET, 0, 0));
        printf("  child OFD W over flock'd file: %d\n", lk(cfd, F_OFD_SETLK, F_WRLCK, SEEK_SET, 50, 1));
        int f2 = open(path, O_RDWR);
        printf("  child flock LOCK_EX|LOCK_NB: %d\n", flock(f2, LOCK_EX | LOCK_NB) < 0 ? -errno : 0);
        _exit(0);
    }
    waitpid(c, NULL, 0);
    unlink(path);
    printf("done\n");
    return 0;
}
