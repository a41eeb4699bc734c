/* fstat of fds 0-2 and glibc's buffering choice, with all three descriptors set up as a pipe, a
 * regular file and /dev/null in turn (the setups `emukern run` passes through from the host:
 * `prog | cat`, `prog > file 2>&1 < file`, `prog </dev/null >/dev/null 2>&1`).  Each setup runs
 * in a child that dup2()s the object onto 0, 1 and 2, so the probe makes the same setups itself
 * under any kernel, including the real ones under `emukern compare` (whose runner gives every
 * program pipes).  Printed: only what does not name an inode or a time; and which came first
 * into the object, a printf line (buffered unless stdout is a terminal) or a write(1) after it.
 * argv[1]: a writable directory (default /tmp).
 *
 * `stdio_setups --report`: only the report of the descriptors the probe was started with (the
 * host's own, under `emukern run`), written to fd 1 when that is a pipe or a file, else to fd 2. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

static int report_fd;

static void report(const char *setup)
{
    char buf[512];
    int len = snprintf(buf, sizeof buf, "%s:\n", setup);
    for (int fd = 0; fd < 3; fd++) {
        struct stat st;
        if (fstat(fd, &st) != 0) {
            len += snprintf(buf + len, sizeof buf - len, "  fd %d: fstat failed\n", fd);
            continue;
        }
        len += snprintf(buf + len, sizeof buf - len,
                        "  fd %d: type %o perm %o rdev %u:%u size %lld blksize %ld isatty %d\n",
                        fd, (unsigned)(st.st_mode & S_IFMT), (unsigned)(st.st_mode & 07777),
                        major(st.st_rdev), minor(st.st_rdev), (long long)st.st_size,
                        (long)st.st_blksize, isatty(fd));
    }
    write(report_fd, buf, len);
}

/* the child: the object on 0, 1 and 2, then the report and the buffering race */
static void child(int obj, const char *setup)
{
    for (int fd = 0; fd < 3; fd++)
        dup2(obj, fd);
    if (obj > 2)
        close(obj);
    report(setup);
    printf("printf line\n");
    write(1, "write line\n", 11);
    exit(0);                      /* the printf line is flushed here when stdout is buffered */
}

static void run(const char *setup, int obj, int reader)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (reader >= 0)
            close(reader);
        child(obj, setup);
    }
    close(obj);
    int status;
    waitpid(pid, &status, 0);
    char got[64] = "";
    if (reader >= 0) {
        int n = read(reader, got, sizeof got - 1);
        got[n > 0 ? n : 0] = 0;
        close(reader);
    }
    for (char *p = got; *p; p++)
        if (*p == '\n')
            *p = '|';
    dprintf(report_fd, "  exit %d, then read back: %s\n", WEXITSTATUS(status), got);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--report") == 0) {
        struct stat st;
        report_fd = fstat(1, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode)) ? 1 : 2;
        report("as started");
        return 0;
    }
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    char path[256];
    report_fd = dup(1);
    umask(022);

    int p[2];
    pipe(p);
    run("pipe", p[1], p[0]);

    snprintf(path, sizeof path, "%s/stdio_setups.out", dir);
    int f = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (f < 0) {
        perror("open");
        return 1;
    }
    run("file", f, open(path, O_RDONLY));
    unlink(path);

    run("null", open("/dev/null", O_RDWR), -1);
    return 0;
}
