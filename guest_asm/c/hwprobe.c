/* hwprobe (riscv64): riscv_hwprobe (syscall 258) for every key, an unknown key, bad flags, cpu
 * sets with and without an online CPU, RISCV_HWPROBE_WHICH_CPUS and a bad pointer.  Prints
 * "name: ret key=value" lines for the test to compare with the documented semantics. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

struct pair { long long key; unsigned long long value; };

static long hwprobe(struct pair *p, unsigned long n, unsigned long setsize, unsigned long *set,
                    unsigned flags) {
    long r = syscall(258, p, n, setsize, set, flags);
    return r < 0 ? -errno : r;
}

int main(void) {
    struct pair p[12];
    for (int i = 0; i < 10; i++) p[i].key = i;
    p[10].key = 1000;       /* unknown */
    p[11].key = -5;         /* unknown */
    long r = hwprobe(p, 12, 0, NULL, 0);
    printf("all: %ld\n", r);
    for (int i = 0; i < 12; i++) printf("key %lld = 0x%llx\n", p[i].key, p[i].value);
    struct pair one = {4, 0};
    unsigned long set = 1;
    printf("cpu0: %ld 0x%llx\n", hwprobe(&one, 1, sizeof set, &set, 0), one.value);
    set = 1UL << 40;        /* no such CPU online */
    printf("offline set: %ld\n", hwprobe(&one, 1, sizeof set, &set, 0));
    printf("bad flags: %ld\n", hwprobe(&one, 1, 0, NULL, 2));
    printf("bad pointer: %ld\n", hwprobe((struct pair *)8, 1, 0, NULL, 0));
    set = -1UL;     /* the kselftest's "fake CPU_SET": every bit */
    printf("set size 0 with a set: %ld\n", hwprobe(&one, 1, 0, &set, 0));
    printf("NULL set with size 1: %ld\n", hwprobe(&one, 1, 1, NULL, 0));
    printf("one-byte set: %ld\n", hwprobe(&one, 1, 1, &set, 0));
    /* WHICH_CPUS: which CPUs have IMA_EXT_0 bits FD|C ? all of them */
    struct pair q = {4, 3};
    set = 0;
    printf("which fd|c: %ld set=0x%lx\n", hwprobe(&q, 1, sizeof set, &set, 1), set);
    q.key = 4; q.value = 1ULL << 3;     /* Zba: nobody */
    set = 0;
    printf("which zba: %ld set=0x%lx\n", hwprobe(&q, 1, sizeof set, &set, 1), set);
    q.key = 999; q.value = 0;
    set = 0;
    printf("which unknown: %ld set=0x%lx key=%lld\n", hwprobe(&q, 1, sizeof set, &set, 1), set, q.key);
    printf("which without set: %ld\n", hwprobe(&q, 1, 0, NULL, 1));
    return 0;
}
