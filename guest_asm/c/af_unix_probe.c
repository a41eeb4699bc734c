#define _GNU_SOURCE
/* AF_UNIX names and connections, compared with Linux (qemu-user passes them to the host):
 * bind/listen/connect/accept4 on path and abstract names, stream/dgram/seqpacket, backlog,
 * poll/epoll of listeners, fork and threads, SCM_RIGHTS, SCM_CREDENTIALS, bad input.
 * argv[1]: a writable directory for the socket inodes (it is never printed); a second
 * argument leaves out the one check qemu-user cannot pass on (see the end). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define R(x) do { long _r = (long)(x); printf("%-52s = %ld%s%s\n", #x, _r, _r < 0 ? " " : "", _r < 0 ? strerrorname_np(errno) : ""); } while (0)

static const char *dir;
static char abs_name[64];

static socklen_t mkaddr(struct sockaddr_un *a, const char *name) {
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    snprintf(a->sun_path, sizeof a->sun_path, "%s/%s", dir, name);
    return offsetof(struct sockaddr_un, sun_path) + strlen(a->sun_path) + 1;
}

static socklen_t mkabs(struct sockaddr_un *a, const char *tag) {
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "%s-%s", abs_name, tag);
    return offsetof(struct sockaddr_un, sun_path) + 1 + n;
}

/* the name a socket reports, with the directory replaced by "D" */
static void show_name(const char *what, int fd, int peer) {
    struct sockaddr_un a;
    socklen_t len = sizeof a;
    memset(&a, 0x55, sizeof a);
    int r = peer ? getpeername(fd, (struct sockaddr *)&a, &len) : getsockname(fd, (struct sockaddr *)&a, &len);
    if (r < 0) { printf("%s: %s\n", what, strerrorname_np(errno)); return; }
    size_t dl = strlen(dir);
    if (len <= 2) printf("%s: len %u unnamed\n", what, len);
    else if (a.sun_path[0] == 0) printf("%s: len %u abstract\n", what, len);
    else if (!strncmp(a.sun_path, dir, dl)) printf("%s: len-dir %u D%s\n", what, (unsigned)(len - dl), a.sun_path + dl);
    else printf("%s: len %u %s\n", what, len, a.sun_path);
}

static int pollmask(int fd) {
    struct pollfd p = { fd, POLLIN | POLLOUT, 0 };
    return poll(&p, 1, 0) < 0 ? -1 : p.revents;
}

static void *thread_server(void *arg) {
    int l = *(int *)arg, c = accept(l, NULL, NULL);
    char b[16];
    ssize_t n = read(c, b, sizeof b);
    write(c, b, n);
    close(c);
    return NULL;
}

static int send_fds(int s, int *fds, int n) {
    char data = 'F';
    struct iovec iov = { &data, 1 };
    union { char buf[CMSG_SPACE(4 * 8)]; struct cmsghdr align; } u;
    memset(&u, 0, sizeof u);
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = CMSG_SPACE(4 * n) };
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(4 * n);
    memcpy(CMSG_DATA(c), fds, 4 * n);
    return sendmsg(s, &m, 0);
}

static int recv_fds(int s, int *fds, size_t space, int flags, int *mflags, size_t *clen) {
    char data;
    struct iovec iov = { &data, 1 };
    union { char buf[256]; struct cmsghdr align; } u;
    memset(&u, 0, sizeof u);
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = space };
    int r = recvmsg(s, &m, flags);
    int n = 0;
    *mflags = m.msg_flags;
    *clen = m.msg_controllen;
    if (r < 0) return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
            for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / 4; i++)
                memcpy(&fds[n++], CMSG_DATA(c) + 4 * i, 4);
    return n;
}

int main(int argc, char **argv) {
    struct sockaddr_un a, b;
    socklen_t al, bl;
    char buf[256];
    struct stat st;
    int r;
    setvbuf(stdout, NULL, _IONBF, 0);
    dir = argc > 1 ? argv[1] : "/tmp";
    snprintf(abs_name, sizeof abs_name, "emk-afunix-%08d", (int)getpid());   /* one length for every pid */

    puts("== path stream server, fork");
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    al = mkaddr(&a, "srv");
    unlink(a.sun_path);
    R(bind(l, (struct sockaddr *)&a, al));
    R(stat(a.sun_path, &st) == 0 && S_ISSOCK(st.st_mode));
    int l2 = socket(AF_UNIX, SOCK_STREAM, 0);
    R(bind(l2, (struct sockaddr *)&a, al));
    R(bind(l, (struct sockaddr *)&a, al));
    bl = mkaddr(&b, "other");
    unlink(b.sun_path);
    R(bind(l, (struct sockaddr *)&b, bl));
    R(access(b.sun_path, F_OK));
    show_name("listener name", l, 0);
    R(accept(l, NULL, NULL));
    R(listen(l, 4));
    R(pollmask(l));
    pid_t pid = fork();
    if (pid == 0) {
        int c = socket(AF_UNIX, SOCK_STREAM, 0);
        if (connect(c, (struct sockaddr *)&a, al) < 0) _exit(10);
        write(c, "ping", 4);
        ssize_t n = read(c, buf, sizeof buf);
        _exit(n == 4 && !memcmp(buf, "pong", 4) ? 0 : 11);
    }
    struct pollfd p = { l, POLLIN, 0 };
    R(poll(&p, 1, -1));
    R(p.revents);
    struct sockaddr_un peer;
    socklen_t pl = sizeof peer;
    int s = accept4(l, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC | SOCK_NONBLOCK);
    R(s >= 0);
    R(pl);
    R(fcntl(s, F_GETFD));
    R(fcntl(s, F_GETFL) & O_NONBLOCK);
    show_name("accepted name", s, 0);
    show_name("accepted peer", s, 1);
    p.fd = s;
    R(poll(&p, 1, -1));
    R(read(s, buf, sizeof buf));
    R(write(s, "pong", 4));
    int status;
    waitpid(pid, &status, 0);
    R(WEXITSTATUS(status));
    R(read(s, buf, sizeof buf));
    close(s);
    fcntl(l, F_SETFL, O_NONBLOCK);
    R(accept(l, NULL, NULL));
    fcntl(l, F_SETFL, 0);
    int opt;
    socklen_t ol = sizeof opt;
    R(getsockopt(l, SOL_SOCKET, SO_ACCEPTCONN, &opt, &ol) == 0 && opt == 1);

    puts("== connect errors");
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    bl = mkaddr(&b, "missing");
    R(connect(c, (struct sockaddr *)&b, bl));
    bl = mkaddr(&b, "plain");
    close(open(b.sun_path, O_CREAT | O_WRONLY, 0644));
    R(connect(c, (struct sockaddr *)&b, bl));
    unlink(b.sun_path);
    memset(&b, 0, sizeof b);
    b.sun_family = AF_UNIX;
    strcpy(b.sun_path, "/var/run/nscd/socket");
    R(connect(c, (struct sockaddr *)&b, sizeof b));
    R(connect(l, (struct sockaddr *)&a, al));
    int d = socket(AF_UNIX, SOCK_DGRAM, 0);
    R(connect(d, (struct sockaddr *)&a, al));
    close(d);
    R(connect(c, (struct sockaddr *)&a, al));
    R(connect(c, (struct sockaddr *)&a, al));
    close(c);
    s = accept(l, NULL, NULL);
    close(s);

    puts("== backlog");
    int q = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    al = mkabs(&a, "q");
    R(bind(q, (struct sockaddr *)&a, al));
    R(listen(q, 0));
    int c1 = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
    int c2 = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
    R(connect(c1, (struct sockaddr *)&a, al));
    R(connect(c2, (struct sockaddr *)&a, al));
    R(pollmask(c1));
    R(send(c1, "m1", 2, 0));
    R(send(c1, "m22", 3, 0));
    int ep = epoll_create1(0);
    struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 7 }, out;
    R(epoll_ctl(ep, EPOLL_CTL_ADD, q, &ev));
    R(epoll_wait(ep, &out, 1, 0));
    R(out.events);
    s = accept(q, NULL, NULL);
    R(recv(s, buf, 1, 0));
    R(recv(s, buf, sizeof buf, 0));
    R(epoll_wait(ep, &out, 1, 0));
    R(connect(c2, (struct sockaddr *)&a, al));
    R(shutdown(q, SHUT_RD));
    int c3 = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    R(connect(c3, (struct sockaddr *)&a, al));
    close(q);
    R(recv(c2, buf, sizeof buf, 0));
    R(send(c2, "x", 1, MSG_NOSIGNAL));
    close(c1); close(c2); close(c3); close(s); close(ep);

    puts("== abstract names");
    int x = socket(AF_UNIX, SOCK_STREAM, 0);
    al = mkabs(&a, "abs");
    R(bind(x, (struct sockaddr *)&a, al));
    show_name("abstract name", x, 0);
    int y = socket(AF_UNIX, SOCK_STREAM, 0);
    R(bind(y, (struct sockaddr *)&a, al));
    R(listen(x, 5));
    R(connect(y, (struct sockaddr *)&a, al));
    d = socket(AF_UNIX, SOCK_DGRAM, 0);
    R(bind(d, (struct sockaddr *)&a, al));
    close(d);
    show_name("client peer", y, 1);
    close(x);
    R(recv(y, buf, 1, 0));
    close(y);
    y = socket(AF_UNIX, SOCK_STREAM, 0);
    R(connect(y, (struct sockaddr *)&a, al));
    close(y);

    puts("== datagrams with addresses");
    int ds = socket(AF_UNIX, SOCK_DGRAM, 0);
    al = mkaddr(&a, "dg");
    unlink(a.sun_path);
    R(bind(ds, (struct sockaddr *)&a, al));
    int dc = socket(AF_UNIX, SOCK_DGRAM, 0);
    R(sendto(dc, "anon", 4, 0, (struct sockaddr *)&a, al));
    pl = sizeof peer;
    R(recvfrom(ds, buf, sizeof buf, 0, (struct sockaddr *)&peer, &pl));
    R(pl);
    bl = mkaddr(&b, "dgc");
    unlink(b.sun_path);
    R(bind(dc, (struct sockaddr *)&b, bl));
    R(sendto(dc, "named", 5, 0, (struct sockaddr *)&a, al));
    pl = sizeof peer;
    R(recvfrom(ds, buf, sizeof buf, 0, (struct sockaddr *)&peer, &pl));
    R(pl - strlen(dir));
    R(connect(dc, (struct sockaddr *)&a, al));
    show_name("dgram peer", dc, 1);
    R(send(dc, "conn", 4, 0));
    R(recv(ds, buf, sizeof buf, 0));
    int dz = socket(AF_UNIX, SOCK_DGRAM, 0);
    R(connect(ds, (struct sockaddr *)&b, bl));
    R(sendto(dz, "z", 1, 0, (struct sockaddr *)&a, al));
    close(dz); close(ds); close(dc);

    puts("== threads");
    al = mkaddr(&a, "thr");
    unlink(a.sun_path);
    int tl = socket(AF_UNIX, SOCK_STREAM, 0);
    R(bind(tl, (struct sockaddr *)&a, al));
    R(listen(tl, 1));
    pthread_t t;
    pthread_create(&t, NULL, thread_server, &tl);
    c = socket(AF_UNIX, SOCK_STREAM, 0);
    R(connect(c, (struct sockaddr *)&a, al));
    R(write(c, "echo", 4));
    R(read(c, buf, sizeof buf));
    pthread_join(t, NULL);
    R(read(c, buf, sizeof buf));
    close(c); close(tl);
    R(unlink(a.sun_path));
    c = socket(AF_UNIX, SOCK_STREAM, 0);
    R(connect(c, (struct sockaddr *)&a, al));
    close(c);

    puts("== SCM_RIGHTS");
    int sv[2], pp[2], got[8], mf;
    size_t clen;
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    pipe(pp);
    R(send_fds(sv[0], &pp[1], 1));
    close(pp[1]);
    r = recv_fds(sv[1], got, 256, 0, &mf, &clen);
    R(r);
    R(mf);
    R(clen);
    R(got[0] > pp[0]);
    R(write(got[0], "via-fd", 6));
    close(got[0]);
    R(read(pp[0], buf, sizeof buf));
    R(read(pp[0], buf, sizeof buf));
    close(pp[0]);
    int two[2] = { 0, 1 };
    R(send_fds(sv[0], two, 2));
    r = recv_fds(sv[1], got, CMSG_LEN(4), MSG_CMSG_CLOEXEC, &mf, &clen);
    R(r);
    R(mf & MSG_CTRUNC);
    R(clen);
    R(fcntl(got[0], F_GETFD));
    close(got[0]);
    R(send_fds(sv[0], two, 2));
    r = recv_fds(sv[1], got, 0, 0, &mf, &clen);
    R(r);
    R(mf & MSG_CTRUNC);
    int bad = 999;
    R(send_fds(sv[0], &bad, 1));
    close(sv[0]); close(sv[1]);

    puts("== SCM_CREDENTIALS");
    socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
    int one = 1;
    R(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof one));
    R(send(sv[0], "c", 1, 0));
    {
        union { char b[CMSG_SPACE(sizeof(struct ucred))]; struct cmsghdr al; } u;
        char db;
        struct iovec io = { &db, 1 };
        struct msghdr mm = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof u.b };
        R(recvmsg(sv[1], &mm, 0));
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mm);
        R(cm && cm->cmsg_type == SCM_CREDENTIALS && cm->cmsg_len == CMSG_LEN(sizeof(struct ucred)));
        struct ucred uc;
        memcpy(&uc, CMSG_DATA(cm), sizeof uc);
        R(uc.pid == getpid() && uc.uid == getuid() && uc.gid == getgid());
        R(mm.msg_controllen);
        R(send(sv[0], "c", 1, 0));
        mm.msg_controllen = 20;
        R(recvmsg(sv[1], &mm, 0));
        R(mm.msg_flags);
        R(mm.msg_controllen);
    }
    show_name("passcred autobind", sv[0], 0);
    close(sv[0]); close(sv[1]);

    puts("== bad input");
    s = socket(AF_UNIX, SOCK_STREAM, 0);
    memset(&b, 0, sizeof b);
    b.sun_family = AF_UNIX;
    R(bind(s, (struct sockaddr *)&b, 1));
    R(bind(s, (struct sockaddr *)&b, sizeof b + 1));
    R(bind(s, (struct sockaddr *)&b, 200));
    R(bind(s, (struct sockaddr *)&b, -1));
    R(connect(s, (struct sockaddr *)&b, 2));
    b.sun_family = AF_INET;
    R(bind(s, (struct sockaddr *)&b, 10));
    R(listen(s, 1));
    d = socket(AF_UNIX, SOCK_DGRAM, 0);
    R(listen(d, 1));
    R(accept(d, NULL, NULL));
    R(accept4(s, NULL, NULL, 1));
    R(accept(s, NULL, NULL));
    b.sun_family = AF_UNIX;
    R(bind(s, (struct sockaddr *)&b, 2));
    show_name("autobind", s, 0);
    R(bind(s, (struct sockaddr *)&b, 2));
    close(s);
    s = socket(AF_UNIX, SOCK_STREAM, 0);
    size_t dl = strlen(dir);
    memcpy(b.sun_path, dir, dl);
    b.sun_path[dl] = '/';
    memset(b.sun_path + dl + 1, 'n', sizeof b.sun_path - dl - 1);
    R(bind(s, (struct sockaddr *)&b, sizeof b));
    {   /* the name comes back with its NUL: one byte longer than a sockaddr_un */
        union { struct sockaddr_un u; char raw[200]; } nb;
        socklen_t nl = sizeof nb;
        R(getsockname(s, (struct sockaddr *)&nb, &nl));
        R(nl);
    }
    char full[120];
    memcpy(full, b.sun_path, sizeof b.sun_path);
    full[sizeof b.sun_path] = 0;
    R(unlink(full));
    close(s); close(d);
    al = mkaddr(&a, "srv");
    unlink(a.sun_path);
    al = mkaddr(&a, "dg");
    unlink(a.sun_path);
    al = mkaddr(&a, "dgc");
    unlink(a.sun_path);
    close(l); close(l2);
    if (argc < 3) {
        /* last, and not under qemu-user, which faults on a 1 TiB control buffer itself */
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
        struct msghdr m = { 0 };
        struct iovec iov = { "h", 1 };
        m.msg_iov = &iov; m.msg_iovlen = 1;
        m.msg_control = buf; m.msg_controllen = (size_t)1 << 40;
        R(sendmsg(sv[0], &m, 0));
    }
    return 0;
}
