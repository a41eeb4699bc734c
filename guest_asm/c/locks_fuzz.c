/* Record locks driven by a seeded generator: argv[2] (seed) and argv[3] (count) pick commands
 * (F_SETLK, F_GETLK, F_OFD_SETLK, F_OFD_GETLK), types (including an invalid one), l_whence values
 * (including invalid ones) and starts/lengths from the edges of the range arithmetic (0, 1,
 * OFFSET_MAX and its neighbours, LLONG_MIN, negatives), with the file position and size moved now
 * and then, so every SEEK_CUR/SEEK_END base is exercised too.  Each call prints its result (and
 * what F_GETLK reported); every 40 calls a child prints how the lock table looks from another
 * process (bytes 0-63 and a few far ranges).  The same seed prints the same text on every kernel
 * that agrees.  argv[1]: a writable directory (default /tmp). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t state;

static unsigned pick(unsigned n)
{
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(state >> 33) % n;
}

static const long long starts[] = {0, 1, 2, 5, 10, 63, 64, 100, LLONG_MAX, LLONG_MAX - 1, LLONG_MAX - 100,
                                   LLONG_MIN, -1, -5, -100, 1LL << 40};
static const long long lens[] = {0, 1, 2, 3, 10, -1, -2, -5, -10, -100, LLONG_MAX, LLONG_MIN, -LLONG_MAX,
                                 1LL << 40, 64};
static const short whences[] = {SEEK_SET, SEEK_SET, SEEK_SET, SEEK_CUR, SEEK_END, 3, -1};
static const short types[] = {F_RDLCK, F_WRLCK, F_UNLCK, F_UNLCK, 3};
static const struct { int cmd; const char *name; } cmds[] = {
    {F_SETLK, "SETLK"}, {F_SETLK, "SETLK"}, {F_GETLK, "GETLK"}, {F_OFD_SETLK, "OFD_SETLK"},
    {F_OFD_GETLK, "OFD_GETLK"},
};

static char tname(short t)
{
    return t == F_RDLCK ? 'R' : t == F_WRLCK ? 'W' : t == F_UNLCK ? 'U' : '?';
}

static void view(const char *path)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(path, O_RDWR);
        char map[65];
        for (int b = 0; b < 64; b++) {
            struct flock g = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = b, .l_len = 1};
            fcntl(fd, F_GETLK, &g);
            map[b] = g.l_type == F_UNLCK ? '.' : g.l_type == F_RDLCK ? 'r' : 'w';
        }
        map[64] = 0;
        printf("  view %s\n", map);
        static const long long far[] = {64, 1LL << 40, LLONG_MAX - 100, LLONG_MAX};
        for (unsigned i = 0; i < sizeof far / sizeof *far; i++) {
            struct flock g = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = far[i], .l_len = 0};
            int r = fcntl(fd, F_GETLK, &g) < 0 ? -errno : 0;
            printf("  view from %lld: %d %c %lld+%lld\n", far[i], r, tname(g.l_type),
                   g.l_type == F_UNLCK ? 0 : (long long)g.l_start, g.l_type == F_UNLCK ? 0 : (long long)g.l_len);
        }
        fflush(stdout);
        _exit(0);
    }
    waitpid(pid, NULL, 0);
}

int main(int argc, char **argv)
{
    char path[256];
    snprintf(path, sizeof path, "%s/locks_fuzz", argc > 1 ? argv[1] : "/tmp");
    state = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
    int count = argc > 3 ? atoi(argv[3]) : 200;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    int ofd = open(path, O_RDWR);                  /* a second description for the OFD commands */
    if (fd < 0 || ofd < 0) {
        perror("open");
        return 1;
    }
    for (int i = 0; i < count; i++) {
        unsigned what = pick(20);
        if (what == 0) {
            long long pos = starts[pick(8)];
            printf("%d lseek %lld\n", i, (long long)lseek(fd, pos, SEEK_SET));
            continue;
        }
        if (what == 1) {
            long long size = starts[pick(8)];
            printf("%d ftruncate %lld: %d\n", i, size, ftruncate(fd, size) < 0 ? -errno : 0);
            continue;
        }
        unsigned c = pick(sizeof cmds / sizeof *cmds);
        struct flock fl = {.l_type = types[pick(sizeof types / sizeof *types)],
                           .l_whence = whences[pick(sizeof whences / sizeof *whences)],
                           .l_start = starts[pick(sizeof starts / sizeof *starts)],
                           .l_len = lens[pick(sizeof lens / sizeof *lens)]};
        int use = cmds[c].cmd == F_OFD_SETLK || cmds[c].cmd == F_OFD_GETLK ? ofd : fd;
        printf("%d %s %c whence %d %lld%+lld:", i, cmds[c].name, tname(fl.l_type), fl.l_whence,
               (long long)fl.l_start, (long long)fl.l_len);
        int r = fcntl(use, cmds[c].cmd, &fl) < 0 ? -errno : 0;
        if (r == 0 && (cmds[c].cmd == F_GETLK || cmds[c].cmd == F_OFD_GETLK))
            printf(" 0 -> %c whence %d %lld+%lld pid %s\n", tname(fl.l_type), fl.l_whence,
                   (long long)fl.l_start, (long long)fl.l_len,
                   fl.l_pid == 0 ? "0" : fl.l_pid == -1 ? "-1" : fl.l_pid == getpid() ? "self" : "other");
        else
            printf(" %d\n", r);
        if (i % 40 == 39)
            view(path);
    }
    view(path);
    unlink(path);
    printf("done\n");
    return 0;
}
