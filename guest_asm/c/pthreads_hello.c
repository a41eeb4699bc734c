/* A static C program built by GCC and glibc (not by emukern's LLVM path): malloc, stdio via
 * writev/fstat, and four pthreads joined through FUTEX_WAIT_BITSET.  Exit status 3 on success.
 * tests/foundation/test_c_programs.py builds it with riscv64-linux-gnu-gcc / aarch64-linux-gnu-gcc
 * and compares emukern's output with qemu-user's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
static int counter;
static void *worker(void *arg) { for (int i = 0; i < 1000; i++) __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST); return arg; }
int main(int argc, char **argv) {
    char *p = malloc(100000);
    memset(p, 1, 100000);
    printf("hello from C, argc=%d argv0=%s pid=%d\n", argc, argv[0], getpid());
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    printf("counter=%d\n", counter);
    free(p);
    return 3;
}
