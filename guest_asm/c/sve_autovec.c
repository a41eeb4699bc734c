/* Built by GCC with -O3 -march=armv8-a+sve: the compiler's own SVE loops (whilelo, ld1w, st1w)
 * with a getpid() between them, so every policy of the SVE access trap and the syscall flush is
 * exercised by code emukern did not write.  Prints one checksum; exit status 0. */
#include <stdio.h>
#include <unistd.h>
#define N 10000
static int a[N], b[N], c[N];
int main(void) {
    for (int i = 0; i < N; i++) { a[i] = i; b[i] = 3 * i; }
    long sum = 0;
    for (int r = 0; r < 20; r++) {
        for (int i = 0; i < N; i++) c[i] = a[i] * 2 + b[i];
        sum += getpid() > 0;                   /* a syscall between SVE loops */
    }
    for (int i = 0; i < N; i++) sum += c[i];
    printf("sum=%ld\n", sum);
    return 0;
}
