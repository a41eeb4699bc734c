/* In-flight SCM_RIGHTS cycles: a socket sent into its own receive queue (with 64 KiB of data),
 * then both ends closed.  No descriptor reaches it any more; only the garbage collector
 * (unix_gc) frees it and its queued bytes.  Done 1000 times: under a memory limit smaller than
 * what 1000 leaked queues would hold, every send still succeeds. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int send_fd(int via, int fd, const char *data, size_t len) {
    char ctl[CMSG_SPACE(sizeof(int))];
    memset(ctl, 0, sizeof ctl);
    struct iovec iov = {(void *)data, len};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    return sendmsg(via, &m, MSG_DONTWAIT) < 0 ? errno : 0;
}

int main(void) {
    static char data[65536];
    int failed = 0, first = 0;
    for (int i = 0; i < 1000; i++) {
        int s[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) < 0) { printf("socketpair: errno %d\n", errno); return 1; }
        int e = send_fd(s[0], s[1], data, sizeof data);     /* s[1] lands in its own queue */
        if (e) { failed++; if (!first) first = e; }
        close(s[0]);
        close(s[1]);
    }
    printf("cycles 1000, failed sends %d (first errno %d)\n", failed, first);
    return 0;
}
