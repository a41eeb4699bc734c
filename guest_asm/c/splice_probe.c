/* sendfile into pipes and sockets, splice (file<->pipe, pipe<->socket, pipe->pipe), tee and
 * vmsplice, with their error cases: one line per call, "name ret errno".  argv[1]: a writable
 * directory for the scratch file.  Run under emukern and under qemu-user (which passes these
 * calls to the host kernel) the output must match. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *what, long r) {
    printf("%-28s %ld %d\n", what, r, r < 0 ? errno : 0);
    errno = 0;
}

static void drain(const char *what, int fd) {
    char buf[256];
    long n = read(fd, buf, sizeof buf - 1);
    if (n < 0) n = 0;
    buf[n] = 0;
    printf("%-28s \"%s\"\n", what, buf);
}

int main(int argc, char **argv) {
    char path[512];
    snprintf(path, sizeof path, "%s/splice_probe.dat", argc > 1 ? argv[1] : "/tmp");
    signal(SIGPIPE, SIG_IGN);
    int f = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(f, "0123456789abcdefghij", 20);
    int p[2], q[2], sv[2];
    pipe(p);
    pipe(q);
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    loff_t off = 5;

    /* sendfile: into a pipe, into a socket, from a pipe */
    show("sendfile file->pipe off", sendfile(p[1], f, &off, 4));
    printf("%-28s %lld\n", "  off after", (long long)off);
    drain("  pipe holds", p[0]);
    lseek(f, 10, SEEK_SET);
    show("sendfile file->pipe pos", sendfile(p[1], f, NULL, 100));
    printf("%-28s %lld\n", "  pos after", (long long)lseek(f, 0, SEEK_CUR));
    drain("  pipe holds", p[0]);
    off = 0;
    show("sendfile file->sock", sendfile(sv[0], f, &off, 8));
    drain("  sock holds", sv[1]);
    write(q[1], "xyz", 3);
    show("sendfile pipe->file", sendfile(f, q[0], NULL, 3));
    show("sendfile pipe off", sendfile(p[1], q[0], &off, 3));
    drain("  q still holds", q[0]);
    off = -1;
    show("sendfile neg off", sendfile(p[1], f, &off, 3));

    /* splice */
    loff_t o2 = 2;
    show("splice file->pipe", splice(f, &o2, p[1], NULL, 6, 0));
    printf("%-28s %lld\n", "  off after", (long long)o2);
    show("splice pipe->pipe", splice(p[0], NULL, q[1], NULL, 4, 0));
    drain("  q holds", q[0]);
    drain("  p holds", p[0]);
    write(p[1], "HELLO", 5);
    o2 = 30;
    show("splice pipe->file off", splice(p[0], NULL, f, &o2, 5, 0));
    char buf[64] = {0};
    pread(f, buf, 5, 30);
    printf("%-28s \"%s\" %lld\n", "  file at 30", buf, (long long)o2);
    write(p[1], "sock!", 5);
    show("splice pipe->sock", splice(p[0], NULL, sv[0], NULL, 5, 0));
    drain("  sock holds", sv[1]);
    write(sv[1], "back", 4);
    show("splice sock->pipe", splice(sv[0], NULL, p[1], NULL, 100, 0));
    drain("  p holds", p[0]);
    show("splice empty NONBLOCK", splice(p[0], NULL, q[1], NULL, 4, SPLICE_F_NONBLOCK));
    show("splice file->pipe len0", splice(f, NULL, p[1], NULL, 0, 0));
    show("splice bad flags", splice(f, NULL, p[1], NULL, 4, 0x100));
    show("splice pipe off_in", splice(p[0], &o2, q[1], NULL, 4, 0));
    show("splice pipe off_out", splice(f, NULL, p[1], &o2, 4, 0));
    show("splice pipe->same", splice(p[0], NULL, p[1], NULL, 4, 0));
    show("splice file->file", splice(f, NULL, f, NULL, 4, 0));
    show("splice sock off_in", splice(sv[0], &o2, p[1], NULL, 4, 0));
    show("splice bad fd", splice(99, NULL, p[1], NULL, 4, 0));
    show("splice wronly in", splice(p[1], NULL, q[1], NULL, 4, 0));
    o2 = -3;
    show("splice neg off", splice(f, &o2, p[1], NULL, 4, 0));

    /* tee */
    write(p[1], "teedata", 7);
    show("tee p->q", tee(p[0], q[1], 3, 0));
    drain("  q holds", q[0]);
    drain("  p holds", p[0]);
    show("tee empty NONBLOCK", tee(p[0], q[1], 3, SPLICE_F_NONBLOCK));
    show("tee same pipe", tee(p[0], p[1], 3, 0));
    show("tee file", tee(f, q[1], 3, 0));
    show("tee len0", tee(p[0], q[1], 0, 0));

    /* vmsplice */
    struct iovec iov[2] = {{"vm", 2}, {"splice", 6}};
    show("vmsplice to pipe", vmsplice(p[1], iov, 2, 0));
    char r1[4] = {0}, r2[8] = {0};
    struct iovec riov[2] = {{r1, 3}, {r2, 7}};
    show("vmsplice from pipe", vmsplice(p[0], riov, 2, 0));
    printf("%-28s \"%s\" \"%s\"\n", "  got", r1, r2);
    show("vmsplice empty NONBLOCK", vmsplice(p[0], riov, 2, SPLICE_F_NONBLOCK));
    show("vmsplice file", vmsplice(f, iov, 2, 0));
    show("vmsplice bad flags", vmsplice(p[1], iov, 2, 0x40));

    /* blocking: a child's splice and tee sleep on an empty pipe until the parent writes */
    int b[2], c[2];
    pipe(b);
    pipe(c);
    pid_t pid = fork();
    if (pid == 0) {
        long n = splice(b[0], NULL, c[1], NULL, 64, 0);
        _exit(n == 5 ? 0 : 1);
    }
    usleep(20000);
    write(b[1], "later", 5);
    int st = -1;
    waitpid(pid, &st, 0);
    printf("%-28s %d\n", "blocked splice child", WEXITSTATUS(st));
    drain("  c holds", c[0]);

    /* a full pipe, a pipe with no reader */
    fcntl(q[1], F_SETFL, O_NONBLOCK);
    static char big[70000];
    while (write(q[1], big, sizeof big) > 0) {}
    off = 0;
    show("sendfile full NONBLOCK", sendfile(q[1], f, &off, 4));
    show("splice full NONBLOCK", splice(f, NULL, q[1], NULL, 4, 0));
    close(q[0]);
    show("sendfile no reader", sendfile(q[1], f, &off, 4));
    show("splice no reader", splice(f, NULL, q[1], NULL, 4, 0));
    close(p[1]);
    show("splice eof", splice(p[0], NULL, sv[0], NULL, 4, 0));
    unlink(path);
    return 0;
}
