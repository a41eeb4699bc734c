/* mremap (emukern/kernel/mremap.py): grow in place, move, shrink, MREMAP_FIXED, MREMAP_DONTUNMAP,
 * code in a moved executable mapping, glibc realloc of a large block, the error cases.
 * Prints contents and errno, never addresses. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define P 4096
#define T(name, expr) do { errno = 0; long _r = (long)(expr); \
    printf("%-26s %ld errno=%d\n", name, _r, _r < 0 ? errno : 0); } while (0)
#define OK(p) ((p) != MAP_FAILED)

int main(void) {
    /* a hole after a 2-page mapping: grow in place */
    char *a = mmap(NULL, 4 * P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(a + 2 * P, 2 * P);
    memset(a, 'a', 2 * P);
    char *b = mremap(a, 2 * P, 4 * P, 0);
    T("grow-in-place", OK(b) && b == a);
    printf("kept %c %c new %d\n", b[0], b[2 * P - 1], b[3 * P]);
    b[4 * P - 1] = 'z';
    /* a neighbour after it: no room, no MAYMOVE -> ENOMEM; with MAYMOVE it moves */
    errno = 0;
    char *n = mmap(b + 4 * P, P, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    int present = OK(n) || errno == EEXIST;             /* (the next mapping may be there already) */
    T("neighbour-present", present);
    T("grow-no-maymove", (long)mremap(b, 4 * P, 8 * P, 0));
    char *c = mremap(b, 4 * P, 8 * P, MREMAP_MAYMOVE);
    T("grow-maymove-moved", OK(c) && c != b);
    printf("moved %c %c z=%c new %d\n", c[0], c[2 * P - 1], c[4 * P - 1], c[7 * P]);
    T("old-range-gone", msync(b, P, MS_ASYNC));
    /* shrink */
    char *d = mremap(c, 8 * P, 2 * P, 0);
    T("shrink", OK(d) && d == c);
    T("tail-gone", msync(c + 2 * P, P, MS_ASYNC));
    /* MREMAP_FIXED onto an existing mapping */
    char *t = mmap(NULL, 2 * P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(t, 't', 2 * P);
    char *f = mremap(d, 2 * P, 2 * P, MREMAP_MAYMOVE | MREMAP_FIXED, t);
    T("fixed", OK(f) && f == t);
    printf("fixed contents %c\n", f[0]);
    /* DONTUNMAP: the old range stays mapped, empty */
    char *g = mmap(NULL, P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    g[0] = 'g';
    char *h = mremap(g, P, P, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
    T("dontunmap", OK(h) && h != g);
    printf("dontunmap new %c old %d\n", h[0], g[0]);
    /* errors */
    T("bad-flags", (long)mremap(h, P, P, 0x10));
    T("fixed-without-maymove", (long)mremap(h, P, P, MREMAP_FIXED, t));
    T("dontunmap-size-change", (long)mremap(h, P, 2 * P, MREMAP_MAYMOVE | MREMAP_DONTUNMAP));
    T("unaligned", (long)mremap(h + 1, P, P, 0));
    T("zero-new-len", (long)mremap(h, P, 0, MREMAP_MAYMOVE));
    char *hole = mmap(NULL, P, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(hole, P);
    T("unmapped", (long)mremap(hole, P, 2 * P, MREMAP_MAYMOVE));
    T("across-vmas", (long)mremap(f, 4 * P, 8 * P, MREMAP_MAYMOVE));
    T("fixed-overlap", (long)mremap(f, 2 * P, 2 * P, MREMAP_MAYMOVE | MREMAP_FIXED, f + P));
    T("private-zero-old-len", (long)mremap(f, 0, P, MREMAP_MAYMOVE));
    /* code in a moved executable mapping keeps running */
    unsigned *code = mmap(NULL, P, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
#if defined(__aarch64__)
    code[0] = 0x52800540;   /* mov w0, #42 */
    code[1] = 0xd65f03c0;   /* ret */
    __builtin___clear_cache((char *)code, (char *)code + 8);
#else
    code[0] = 0x02a00513;   /* li a0, 42 */
    code[1] = 0x00008067;   /* ret */
    __builtin___clear_cache((char *)code, (char *)code + 8);
#endif
    printf("call before %d\n", ((int (*)(void))code)());
    munmap((char *)code + P, P);
    void *blocker = mmap((char *)code + P, P, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    (void)blocker;
    unsigned *code2 = mremap(code, P, 2 * P, MREMAP_MAYMOVE);
    T("code-moved", OK(code2) && code2 != code);
    printf("call after %d\n", ((int (*)(void))code2)());
    /* glibc realloc of an mmapped chunk */
    char *r = malloc(1 << 20);
    memset(r, 'r', 1 << 20);
    r = realloc(r, 8 << 20);
    printf("realloc %c %c\n", r[0], r[(1 << 20) - 1]);
    r[(8 << 20) - 1] = 1;
    free(r);
    /* a moved private mapping stays private across fork */
    char *s = mmap(NULL, P, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    s[0] = 's';
    char *s2 = mremap(s, P, P, MREMAP_MAYMOVE | MREMAP_FIXED, t);
    fflush(stdout);
    if (fork() == 0) { s2[0] = 'c'; _exit(0); }
    wait(NULL);
    printf("shared after move %c\n", s2[0]);
    return 0;
}
