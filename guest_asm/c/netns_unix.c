/* Network namespaces as AF_UNIX sees them: an abstract name is per namespace, a socket keeps
 * the namespace it was made in (also after SCM_RIGHTS carries it across), /proc/self/ns/net
 * changes with unshare(CLONE_NEWNET), and /proc/net/protocols counts the namespace's own
 * sockets. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static struct sockaddr_un addr = {.sun_family = AF_UNIX, .sun_path = "\0netns-a"};
static const socklen_t alen = sizeof(sa_family_t) + 8;

static int r(int x) { return x < 0 ? -errno : x; }

static void nslink(const char *tag) {
    char buf[64] = {0};
    readlink("/proc/self/ns/net", buf, sizeof buf - 1);
    printf("%s %s\n", tag, buf);
}

static int stream_count(void) {
    char line[256];
    int n = -1, size;
    FILE *f = fopen("/proc/net/protocols", "r");
    if (!f) return -errno;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "UNIX-STREAM ", 12)) sscanf(line + 12, "%d %d", &size, &n);
    fclose(f);
    return n;
}

static int listener(void) {
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (r(bind(s, (struct sockaddr *)&addr, alen)) < 0) return -errno;
    listen(s, 4);
    return s;
}

int main(void) {
    nslink("init");
    int a = listener(), old = socket(AF_UNIX, SOCK_STREAM, 0), sp[2];
    socketpair(AF_UNIX, SOCK_DGRAM, 0, sp);
    printf("listener a %s, stream sockets %d\n", a >= 0 ? "bound" : "failed", stream_count());
    printf("unshare(CLONE_NEWNET) = %d\n", r(unshare(CLONE_NEWNET)));
    nslink("new ");
    printf("stream sockets in the new namespace %d\n", stream_count());
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    printf("connect from the new namespace = %d\n", r(connect(c, (struct sockaddr *)&addr, alen)));
    printf("connect of a socket made before = %d\n", r(connect(old, (struct sockaddr *)&addr, alen)));
    int b = listener();
    printf("same name bound again here: %s, stream sockets %d\n", b >= 0 ? "yes" : "no", stream_count());
    /* carry the new namespace's listener through the socketpair made in the old one */
    char ctl[CMSG_SPACE(sizeof(int))] = {0}, byte = 'x';
    struct iovec iov = {&byte, 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET, cm->cmsg_type = SCM_RIGHTS, cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &b, sizeof b);
    printf("sendmsg = %d\n", r(sendmsg(sp[0], &m, 0)));
    close(b);
    memset(ctl, 0, sizeof ctl);
    printf("recvmsg = %d\n", r(recvmsg(sp[1], &m, 0)));
    int got;
    memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof got);
    int d = socket(AF_UNIX, SOCK_STREAM, 0);
    printf("connect in the new namespace = %d\n", r(connect(d, (struct sockaddr *)&addr, alen)));
    int acc = r(accept(got, NULL, NULL));
    printf("the received listener accepts it: %s\n", acc >= 0 ? "yes" : "no");
    close(acc), close(d), close(got), close(c);
    printf("stream sockets left in the new namespace %d\n", stream_count());
    return 0;
}
