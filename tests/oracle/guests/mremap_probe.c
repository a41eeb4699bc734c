/* mremap, mlock*, msync, mincore, membarrier: results printed for comparison with Linux. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PG 4096
static void show(const char *what, long r) {
    if (r == -1) printf("%s: -1 %s\n", what, strerrorname_np(errno));
    else printf("%s: ok\n", what);
}
static long mr(void *a, size_t o, size_t n, int f, void *na) {
    return (long)syscall(SYS_mremap, a, o, n, f, na);
}
static int add(int x, int y) { return x + y; }

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    /* realloc of a large block: glibc mremaps the mmapped chunk */
    char *big = malloc(1 << 20);
    memset(big, 0x5a, 1 << 20);
    big = realloc(big, 8 << 20);
    printf("realloc keeps: %d\n", big[0] == 0x5a && big[(1 << 20) - 1] == 0x5a);
    big[(8 << 20) - 1] = 1;
    free(big);

    /* grow in place: reserve 4 pages, free the last 3, grow back */
    char *p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(p + PG, 3 * PG);
    strcpy(p, "hello");
    char *q = (char *)mr(p, PG, 3 * PG, 0, NULL);
    printf("grow in place: %d %s %d\n", q == p, q, q[3 * PG - 1]);
    q[3 * PG - 1] = 7;
    /* no room and no MAYMOVE */
    char *blk = mmap(p + 3 * PG, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    show("grow blocked", mr(p, 3 * PG, 4 * PG, 0, NULL));
    /* move */
    char *m = (char *)mr(p, 3 * PG, 6 * PG, MREMAP_MAYMOVE, NULL);
    printf("move: %d %s %d %d\n", m != p, m, m[3 * PG - 1], m[6 * PG - 1]);
    unsigned char v[8];
    show("old gone mincore", mincore(p, PG, v));
    /* shrink */
    show("shrink", mr(m, 6 * PG, 2 * PG, 0, NULL));
    show("shrunk tail mincore", mincore(m + 2 * PG, PG, v));
    /* fixed */
    char *t = mmap(NULL, 8 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(t, 1, 8 * PG);
    char *f = (char *)mr(m, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, t + 4 * PG);
    printf("fixed: %d %s %d %d\n", f == t + 4 * PG, f, t[0], t[6 * PG]);
    /* dontunmap */
    char *d = (char *)mr(f, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
    printf("dontunmap: %d %s old=%d\n", d != f, d, f[0]);
    /* errors */
    show("bad flags", mr(d, PG, PG, 8, NULL));
    show("fixed without maymove", mr(d, PG, PG, MREMAP_FIXED, t));
    show("dontunmap size change", mr(d, PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL));
    show("unaligned", mr(d + 1, PG, PG, 0, NULL));
    show("new_len 0", mr(d, PG, 0, 0, NULL));
    show("old_len 0 private", mr(d, 0, PG, MREMAP_MAYMOVE, NULL));
    show("unmapped", mr(p, PG, 2 * PG, MREMAP_MAYMOVE, NULL));
    char *u = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(u + PG, PG, PROT_READ);
    show("spans two vmas", mr(u, 2 * PG, 3 * PG, MREMAP_MAYMOVE, NULL));
    mprotect(u + PG, PG, PROT_READ | PROT_WRITE);
    show("split by mprotect, one vma again", mr(u, 3 * PG, 3 * PG, 0, NULL));
    show("fixed overlap", mr(t, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, t + PG));
    show("fixed unaligned", mr(t, PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED, t + 1));
    /* shared anonymous: moved pages are the same object, seen by a duplicate */
    char *s = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    strcpy(s, "shared");
    char *s2 = (char *)mr(s, 0, 2 * PG, MREMAP_MAYMOVE, NULL);
    s2[PG] = 9;
    printf("dup shared: %d %s %d\n", s2 != s, s2, s[PG]);
    char *s3 = (char *)mr(s, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
    s3[0] = 'S';
    printf("dontunmap shared: %s %s\n", s3, s);
    /* code in a moved mapping */
    unsigned char *x = mmap(NULL, PG, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memcpy(x, (void *)add, 64);
    __builtin___clear_cache((char *)x, (char *)x + 64);
    int (*fn)(int, int) = (int (*)(int, int))x;
    printf("call before: %d\n", fn(2, 3));
    unsigned char *x2 = (unsigned char *)mr(x, PG, 2 * PG, MREMAP_MAYMOVE, NULL);
    char *blk2 = mmap(x, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    fn = (int (*)(int, int))x2;
    printf("call moved: %d %d\n", x2 != x, fn(20, 22));
    (void)blk; (void)blk2;

    /* mlock family; hole + PG is unmapped */
    char *hole = mmap(NULL, 3 * PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(hole + PG, PG);
    p = hole + PG;
    show("mlock", mlock(t, 4 * PG));
    show("mlock unaligned", mlock(t + 10, PG));
    show("mlock unmapped", mlock(p, PG));
    show("mlock across hole", mlock(hole, 3 * PG));
    show("mlock2 onfault", syscall(SYS_mlock2, t, PG, 1));
    show("mlock2 bad flags", syscall(SYS_mlock2, t, PG, 2));
    show("msync", msync(t, PG, MS_SYNC));
    show("msync invalidate locked", msync(t, PG, MS_INVALIDATE));
    show("munlock", munlock(t, 4 * PG));
    show("msync invalidate unlocked", msync(t, PG, MS_INVALIDATE));
    show("msync async+sync", msync(t, PG, MS_ASYNC | MS_SYNC));
    show("msync bad flag", msync(t, PG, 8));
    show("msync unaligned", msync(t + 1, PG, MS_SYNC));
    show("msync unmapped", msync(p, PG, MS_SYNC));
    show("munlock unmapped", munlock(p, PG));
    show("mlockall 0", mlockall(0));
    show("mlockall onfault alone", mlockall(MCL_ONFAULT));
    show("mlockall bad", mlockall(8));
    show("mlockall", mlockall(MCL_CURRENT | MCL_FUTURE));
    show("munlockall", munlockall());
    /* mincore */
    memset(v, 0xee, sizeof v);
    show("mincore", mincore(t, 3 * PG, v));
    printf("vec: %d %d %d %d\n", v[0] & 1, v[1] & 1, v[2] & 1, v[3]);
    show("mincore unaligned", mincore(t + 1, PG, v));
    show("mincore efault", mincore(t, PG, (unsigned char *)8));
    /* membarrier */
    long mask = syscall(SYS_membarrier, 0, 0, 0);
    printf("membarrier query has private expedited: %ld\n", (mask & 24) == 24);
    show("membarrier priv before register", syscall(SYS_membarrier, 8, 0, 0));
    show("membarrier register", syscall(SYS_membarrier, 16, 0, 0));
    show("membarrier priv", syscall(SYS_membarrier, 8, 0, 0));
    show("membarrier bad flags", syscall(SYS_membarrier, 8, 1, 0));
    show("membarrier bad cmd", syscall(SYS_membarrier, 3, 0, 0));
    show("membarrier global", syscall(SYS_membarrier, 1, 0, 0));
    return 0;
}
