#define _GNU_SOURCE
/* AF_UNIX socketpair probe: stream/dgram/seqpacket, nonblocking, EPIPE/SIGPIPE, shutdown,
 * poll, getsockopt, fork ping-pong, blocking writer.  Output is compared with Linux. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static int sigpipes;
static void on_pipe(int s) { (void)s; sigpipes++; }
#define R(x) do { long _r = (long)(x); printf("%-44s = %ld%s%s\n", #x, _r, _r < 0 ? " " : "", _r < 0 ? strerrorname_np(errno) : ""); } while (0)

static int pollmask(int fd, short ev) {
    struct pollfd p = { fd, ev, 0 };
    int r = poll(&p, 1, 0);
    return r < 0 ? -1 : p.revents;
}

int main(void) {
    int sv[2], r;
    char buf[256];
    setvbuf(stdout, NULL, _IONBF, 0);
    signal(SIGPIPE, on_pipe);

    R(socket(AF_INET6 + 100, SOCK_STREAM, 0));
    R(socket(AF_UNIX, SOCK_RDM, 0));
    R(socket(AF_UNIX, SOCK_STREAM, 6));
    R(socketpair(AF_UNIX, SOCK_STREAM, 0, (int *)8));
    R(send(0, "x", 1, 0) < 0 && errno == ENOTSOCK);
    R(send(99, "x", 1, 0));

    /* stream */
    R(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    struct stat st; fstat(sv[0], &st);
    printf("S_ISSOCK %d\n", S_ISSOCK(st.st_mode));
    int v; socklen_t l = sizeof v;
    R(getsockopt(sv[0], SOL_SOCKET, SO_TYPE, &v, &l)); printf("type %d len %d\n", v, l);
    l = sizeof v; getsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &v, &l); printf("sndbuf %d\n", v);
    l = sizeof v; getsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &v, &l); printf("rcvbuf %d\n", v);
    l = sizeof v; getsockopt(sv[0], SOL_SOCKET, SO_DOMAIN, &v, &l); printf("domain %d\n", v);
    l = sizeof v; getsockopt(sv[0], SOL_SOCKET, SO_ACCEPTCONN, &v, &l); printf("acceptconn %d\n", v);
    l = sizeof v; R(getsockopt(sv[0], SOL_SOCKET, 12345, &v, &l));
    l = sizeof v; R(getsockopt(sv[0], 6, 1, &v, &l));
    struct ucred cr; l = sizeof cr;
    R(getsockopt(sv[0], SOL_SOCKET, SO_PEERCRED, &cr, &l));
    printf("peercred pid_ok %d uid %d gid %d len %d\n", cr.pid == getpid(), cr.uid, cr.gid, l);
    v = 10000; R(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &v, sizeof v));
    l = sizeof v; getsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &v, &l); printf("sndbuf now %d\n", v);
    v = 1; R(setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &v, 2));
    R(setsockopt(sv[0], SOL_SOCKET, 12345, &v, sizeof v));
    printf("poll empty 0x%x\n", pollmask(sv[1], POLLIN | POLLOUT | POLLRDHUP));
    R(recv(sv[1], buf, sizeof buf, MSG_DONTWAIT));
    R(write(sv[0], "hello", 5));
    R(send(sv[0], "world", 5, 0));
    printf("poll data 0x%x\n", pollmask(sv[1], POLLIN | POLLOUT | POLLRDHUP));
    R(recv(sv[1], buf, 3, MSG_PEEK)); printf("peek %.3s\n", buf);
    R(read(sv[1], buf, 7)); printf("got %.7s\n", buf);
    struct iovec iov[2] = { { "ab", 2 }, { "cde", 3 } };
    R(writev(sv[0], iov, 2));
    char b1[2], b2[10]; struct iovec riov[2] = { { b1, 2 }, { b2, 10 } };
    R(readv(sv[1], riov, 2)); printf("readv %.2s|%.6s\n", b1, b2);
    struct sockaddr_un_ { unsigned short f; char p[108]; } sa; socklen_t sl = sizeof sa;
    R(getsockname(sv[0], (void *)&sa, &sl)); printf("name len %d fam %d\n", sl, sa.f);
    sl = sizeof sa; R(getpeername(sv[0], (void *)&sa, &sl)); printf("peer len %d\n", sl);
    R(shutdown(sv[0], SHUT_WR));
    printf("poll after shut 0x%x / 0x%x\n", pollmask(sv[1], POLLIN | POLLOUT | POLLRDHUP),
           pollmask(sv[0], POLLIN | POLLOUT | POLLRDHUP));
    R(read(sv[1], buf, 10));
    R(write(sv[0], "x", 1)); printf("sigpipes %d\n", sigpipes);
    R(send(sv[0], "x", 1, MSG_NOSIGNAL)); printf("sigpipes %d\n", sigpipes);
    R(shutdown(sv[0], 7));
    close(sv[0]);
    printf("poll peer closed 0x%x\n", pollmask(sv[1], POLLIN | POLLOUT | POLLRDHUP));
    R(write(sv[1], "x", 1)); printf("sigpipes %d\n", sigpipes);
    close(sv[1]);

    /* nonblocking fill */
    R(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv));
    printf("cloexec %d nonblock %d\n", fcntl(sv[0], F_GETFD), !!(fcntl(sv[0], F_GETFL) & O_NONBLOCK));
    R(read(sv[0], buf, 1));
    static char big[65536];
    long total = 0;
    while ((r = write(sv[0], big, sizeof big)) > 0) total += r;
    printf("filled %d %s\n", total > 60000, strerrorname_np(errno));
    printf("poll full 0x%x\n", pollmask(sv[0], POLLOUT));
    close(sv[0]); close(sv[1]);

    /* dgram */
    R(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
    R(send(sv[0], "one", 3, 0));
    R(send(sv[0], "second", 6, 0));
    R(send(sv[0], "", 0, 0));
    R(recv(sv[1], buf, sizeof buf, 0)); printf("d %.3s\n", buf);
    R(recv(sv[1], buf, 3, MSG_PEEK | MSG_TRUNC));
    struct msghdr mh; memset(&mh, 0, sizeof mh);
    struct iovec mi = { buf, 3 }; mh.msg_iov = &mi; mh.msg_iovlen = 1;
    R(recvmsg(sv[1], &mh, 0)); printf("d %.3s flags 0x%x\n", buf, mh.msg_flags);
    R(recv(sv[1], buf, sizeof buf, 0));
    R(recv(sv[1], buf, sizeof buf, MSG_DONTWAIT));
    struct sockaddr_un_ from; socklen_t fl = sizeof from;
    send(sv[1], "back", 4, 0);
    R(recvfrom(sv[0], buf, sizeof buf, 0, (void *)&from, &fl)); printf("fromlen %d\n", fl);
    close(sv[1]);
    R(send(sv[0], "x", 1, 0)); printf("sigpipes %d\n", sigpipes);
    R(recv(sv[0], buf, 1, MSG_DONTWAIT));
    close(sv[0]);

    /* seqpacket */
    R(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv));
    R(send(sv[0], "abcdef", 6, 0));
    R(send(sv[0], "gh", 2, 0));
    R(recv(sv[1], buf, 4, 0));
    R(recv(sv[1], buf, 10, 0)); printf("s %.2s\n", buf);
    close(sv[1]);
    R(recv(sv[0], buf, 10, 0));
    R(send(sv[0], "x", 1, 0)); printf("sigpipes %d\n", sigpipes);
    close(sv[0]);

    /* fork ping-pong with a blocking reader and a writer that blocks on a full buffer */
    R(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        for (int i = 0; i < 3; i++) {
            int n = read(sv[1], buf, sizeof buf);
            buf[n] = 0;
            buf[0] = 'P';
            write(sv[1], buf, n);
        }
        long got = 0;
        while ((r = read(sv[1], big, sizeof big)) > 0) got += r;
        printf("child got %ld\n", got);
        _exit(0);
    }
    close(sv[1]);
    for (int i = 0; i < 3; i++) {
        snprintf(buf, sizeof buf, "ping%d", i);
        write(sv[0], buf, strlen(buf));
        int n = read(sv[0], buf, sizeof buf);
        printf("parent %.*s\n", n, buf);
    }
    long sent = 0;
    for (int i = 0; i < 20; i++) sent += write(sv[0], big, sizeof big);
    printf("parent sent %ld\n", sent);
    close(sv[0]);
    int status;
    waitpid(pid, &status, 0);
    printf("child status %d\n", status);
    return 0;
}
