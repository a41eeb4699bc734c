/* splice from a pipe into a non-blocking AF_UNIX socket until it is full (EAGAIN), then into a
 * socket whose peer is gone (EPIPE and SIGPIPE, as splice_to_socket's sendmsg). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>
static int got;
static void h(int s) { got = s; }
int main(void) {
    signal(SIGPIPE, h);
    int p[2], sv[2]; pipe(p); socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    static char big[300000];
    int w = fcntl(p[1], F_SETFL, O_NONBLOCK);
    long total = 0, n;
    for (;;) {
        n = write(p[1], big, 65536);
        if (n <= 0) break;
        n = splice(p[0], NULL, sv[0], NULL, 65536, 0);
        if (n < 0) break;
        total += n;
        if (n < 65536) { /* drain the rest */ char t[65536]; read(p[0], t, sizeof t); }
    }
    printf("filled %ld then %ld errno %d\n", total, n, errno);
    close(sv[1]);
    char t[65536]; fcntl(p[0], F_SETFL, O_NONBLOCK); while (read(p[0], t, sizeof t) > 0) {}
    write(p[1], "x", 1);
    n = splice(p[0], NULL, sv[0], NULL, 1, 0);
    printf("peer gone: %ld errno %d sig %d\n", n, errno, got);
    (void)w; (void)big;
    return 0;
}
