/* pipe round trips between two processes (mode p), two threads (mode t); fork+exit+wait (mode f),
   the parent having first written argv[3] MiB of heap (default 0) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static int ab[2], ba[2];
static long n;
static void *peer(void *arg) {
    char c;
    for (long i = 0; i < n; i++) {
        if (read(ab[0], &c, 1) != 1) break;
        if (write(ba[1], &c, 1) != 1) break;
    }
    return arg;
}
int main(int argc, char **argv) {
    char mode = argc > 1 ? argv[1][0] : 'p';
    n = argc > 2 ? atol(argv[2]) : 100;
    if (mode == 'f') {
        long mib = argc > 3 ? atol(argv[3]) : 0;
        char *heap = mib ? malloc(mib << 20) : 0;
        if (heap) memset(heap, 1, mib << 20);
        for (long i = 0; i < n; i++) {
            pid_t p = fork();
            if (p == 0) _exit(0);
            int st;
            waitpid(p, &st, 0);
        }
        printf("forks %ld\n", n);
        return 0;
    }
    if (pipe(ab) || pipe(ba)) return 1;
    pthread_t th;
    pid_t pid = -1;
    if (mode == 't') pthread_create(&th, 0, peer, 0);
    else if ((pid = fork()) == 0) { peer(0); _exit(0); }
    char c = 'x';
    for (long i = 0; i < n; i++) {
        if (write(ab[1], &c, 1) != 1) return 2;
        if (read(ba[0], &c, 1) != 1) return 3;
    }
    if (mode == 't') pthread_join(th, 0); else waitpid(pid, 0, 0);
    printf("round trips %ld\n", n);
    return 0;
}
