/* coredump: set RLIMIT_CORE (argv[1], default unlimited), leave a marker in .data, then die in
 * crash_here() by the signal argv[2] names: "segv" (a store to an unmapped page, default),
 * "abort" (abort(), SIGABRT) or "thread" (SIGSEGV in a second thread while main waits in join).
 * tests/kernel/signal/test_coredump.py reads the core emukern writes with gdb-multiarch. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

volatile unsigned long marker = 0x1234abcd5678ef01UL;
static const char *how = "segv";

__attribute__((noinline)) void crash_here(int depth) {
    if (depth > 0) {
        crash_here(depth - 1);
        return;
    }
    if (!strcmp(how, "abort"))
        abort();
    *(volatile int *)16 = 1;
}

static void *worker(void *arg) {
    (void)arg;
    crash_here(2);
    return NULL;
}

int main(int argc, char **argv) {
    struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
    if (argc > 1 && strcmp(argv[1], "unlimited"))
        rl.rlim_cur = strtoul(argv[1], NULL, 0);
    if (argc > 2)
        how = argv[2];
    if (setrlimit(RLIMIT_CORE, &rl)) { perror("setrlimit"); return 1; }
    printf("pid %d marker %#lx\n", getpid(), marker);
    fflush(stdout);
    if (!strcmp(how, "thread")) {
        pthread_t t;
        pthread_create(&t, NULL, worker, NULL);
        pthread_join(t, NULL);
        return 0;
    }
    crash_here(3);
    return 0;
}
