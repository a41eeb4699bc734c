/* sendfile of 1 MiB into a blocking AF_UNIX stream socket that a forked child drains: the
 * call sleeps whenever the socket's buffer is full and returns the whole count, as Linux's
 * do_splice_direct does.  argv[1]: a writable directory for the scratch file. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char path[256]; snprintf(path, sizeof path, "%s/big", argv[1]);
    int f = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    static char buf[1 << 20];
    for (int i = 0; i < sizeof buf; i++) buf[i] = i * 7;
    write(f, buf, sizeof buf);
    int sv[2]; socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    if (fork() == 0) {
        long got = 0, n; unsigned sum = 0; static char r[65536];
        close(sv[0]);
        while ((n = read(sv[1], r, sizeof r)) > 0) { for (int i = 0; i < n; i++) sum = sum * 31 + (unsigned char)r[i]; got += n; }
        printf("child got %ld sum %u\n", got, sum); fflush(stdout); _exit(0);
    }
    close(sv[1]);
    off_t off = 0;
    long n = sendfile(sv[0], f, &off, sizeof buf);
    printf("sendfile %ld off %lld\n", n, (long long)off); fflush(stdout);
    close(sv[0]);
    wait(NULL);
    unlink(path);
    return 0;
}
