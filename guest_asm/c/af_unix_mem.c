/* Many AF_UNIX stream socketpairs, each filled with non-blocking writes until the kernel says
 * no: EAGAIN when the socket's own sk_sndbuf is full, ENOBUFS when the machine's memory is.
 * Prints how many sockets stopped each way, the bytes queued in all, and the errno that stopped
 * socketpair (0: none did; ENOMEM when the descriptors could not be charged); then closes them all
 * and fills one pair again (its memory came back).  argv[1]: the number of pairs (<= 500). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static long fill(int fd, int *err) {
    static char chunk[16384];
    long total = 0, n;
    while ((n = send(fd, chunk, sizeof chunk, MSG_DONTWAIT)) > 0) total += n;
    *err = errno;
    return total;
}

int main(int argc, char **argv) {
    int pairs = argc > 1 ? atoi(argv[1]) : 500;
    static int sv[500][2];
    long total = 0;
    int eagain = 0, enobufs = 0, other = 0, err;
    int made = 0, sperr = 0;
    for (int i = 0; i < pairs; i++) {
        /* (under memory pressure the descriptors themselves may not be had: ENOMEM) */
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]) < 0) { sperr = errno; break; }
        made++;
        total += fill(sv[i][0], &err);
        if (err == EAGAIN) eagain++; else if (err == ENOBUFS) enobufs++; else other++;
    }
    printf("pairs %d: full (EAGAIN) %d, out of memory (ENOBUFS) %d, other %d\n", made, eagain, enobufs, other);
    printf("queued %ld bytes (%ld per pair)\n", total, made ? total / made : 0);
    printf("socketpair errno %d\n", sperr);
    for (int i = 0; i < made; i++) { close(sv[i][0]); close(sv[i][1]); }
    int s[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, s);
    long again = fill(s[0], &err);
    printf("after closing all: one pair takes %ld bytes, then errno %d\n", again, err);
    return 0;
}
