/* FIFOs: mkfifo (mknodat S_IFIFO), stat, fifo_open's rules (O_NONBLOCK reader, ENXIO writer,
 * O_RDWR, blocking opens met by a forked partner), data through the FIFO, EPIPE, unlink.
 * argv[1]: a writable directory.  With argv[2] = "ro": only mkfifo (a read-only root: EROFS);
 * with argv[2] = "pre": argv[1]/pre is a FIFO someone made already; it is used, not made.
 * One line per step; the same under emukern and under qemu-user (the host's Linux). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *what, long r) {
    printf("%-30s %ld %d\n", what, r < 0 ? -1L : r, r < 0 ? errno : 0);
    errno = 0;
}

static void on_alarm(int sig) { (void)sig; }

int main(int argc, char **argv) {
    char path[512];
    const char *mode = argc > 2 ? argv[2] : "";
    signal(SIGPIPE, SIG_IGN);
    if (!strcmp(mode, "ro")) {
        snprintf(path, sizeof path, "%s/ro_fifo", argv[1]);
        show("mkfifo read-only", mkfifo(path, 0600));
        show("mknod chr read-only", mknod(path, S_IFCHR | 0600, makedev(1, 3)));
        return 0;
    }
    snprintf(path, sizeof path, "%s/%s", argc > 1 ? argv[1] : "/tmp", !strcmp(mode, "pre") ? "pre" : "fifo");
    if (strcmp(mode, "pre"))
        show("mkfifo", mkfifo(path, 0640));
    show("mkfifo again", mkfifo(path, 0640));
    show("mknod chr", mknod(path, S_IFCHR | 0600, makedev(1, 3)));
    struct stat sb;
    show("stat", stat(path, &sb));
    printf("%-30s %d %o\n", "  S_ISFIFO, size", S_ISFIFO(sb.st_mode), (unsigned)sb.st_size);

    show("open wr NONBLOCK no reader", open(path, O_WRONLY | O_NONBLOCK));
    int r = open(path, O_RDONLY | O_NONBLOCK);
    show("open rd NONBLOCK", r);
    char buf[64] = {0};
    show("  read empty no writer", read(r, buf, sizeof buf));
    int w = open(path, O_WRONLY | O_NONBLOCK);
    show("open wr NONBLOCK reader", w);
    show("  read empty writer", read(r, buf, sizeof buf));
    show("  write", write(w, "through", 7));
    show("  read", read(r, buf, sizeof buf));
    printf("%-30s \"%s\"\n", "  got", buf);
    show("  lseek", lseek(r, 0, SEEK_SET));
    struct stat fsb;
    show("  fstat", fstat(w, &fsb));
    printf("%-30s %d\n", "  S_ISFIFO", S_ISFIFO(fsb.st_mode));
    close(r);
    show("  write no reader", write(w, "x", 1));
    close(w);

    int rw = open(path, O_RDWR);
    show("open rdwr", rw);
    show("  write", write(rw, "self", 4));
    memset(buf, 0, sizeof buf);
    show("  read", read(rw, buf, sizeof buf));
    printf("%-30s \"%s\"\n", "  got", buf);
    close(rw);

    /* blocking opens: the child's O_WRONLY open waits for the parent's O_RDONLY one */
    pid_t pid = fork();
    if (pid == 0) {
        int cw = open(path, O_WRONLY);
        if (cw < 0) _exit(2);
        write(cw, "from child", 10);
        close(cw);
        _exit(0);
    }
    usleep(20000);
    r = open(path, O_RDONLY);
    show("open rd (writer waiting)", r);
    memset(buf, 0, sizeof buf);
    long got = 0, n;
    while ((n = read(r, buf + got, sizeof buf - 1 - got)) > 0) got += n;
    printf("%-30s \"%s\"\n", "  got", buf);
    int st = -1;
    waitpid(pid, &st, 0);
    printf("%-30s %d\n", "  child status", WEXITSTATUS(st));
    close(r);

    /* and the parent's O_RDONLY open waits for the child's O_WRONLY one */
    pid = fork();
    if (pid == 0) {
        usleep(20000);
        int cw = open(path, O_WRONLY);
        write(cw, "late writer", 11);
        _exit(0);
    }
    r = open(path, O_RDONLY);
    show("open rd (waits for writer)", r);
    memset(buf, 0, sizeof buf);
    got = 0;
    while ((n = read(r, buf + got, sizeof buf - 1 - got)) > 0) got += n;
    printf("%-30s \"%s\"\n", "  got", buf);
    waitpid(pid, &st, 0);
    close(r);

    /* a waiting open interrupted by a signal without SA_RESTART: EINTR, and no reader is left
     * behind (a non-blocking writer still finds none) */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    alarm(1);
    show("open rd interrupted", open(path, O_RDONLY));
    fflush(stdout);
    if ((pid = fork()) == 0) {                  /* another process looks for the reader */
        show("open wr NONBLOCK after (child)", open(path, O_WRONLY | O_NONBLOCK));
        fflush(stdout);
        _exit(0);
    }
    waitpid(pid, &st, 0);

    show("unlink", unlink(path));
    show("stat after unlink", stat(path, &sb));
    return 0;
}
