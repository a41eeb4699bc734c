/* membarrier's rseq pair: MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, then
 * MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ restarts the rseq critical section a thread on another
 * CPU is spinning in (it returns through its abort handler), with Linux 6.12's errnos for the
 * command before registration and for bad flags.  Run with 2 CPUs.  (qemu-user answers rseq
 * with ENOSYS, so it cannot be the peer for the restart.) */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MEMBARRIER_CMD_GET_REGISTRATIONS
#define MEMBARRIER_CMD_GET_REGISTRATIONS (1 << 9)
#endif

#if defined(__aarch64__)
#define MY_SIG 0xd428bc00
asm(".text\n.p2align 2\n.globl spin_in_cs\n.type spin_in_cs,%function\nspin_in_cs:\n"
    "  str x1, [x0]\n"
    ".globl cs_start\ncs_start:\n"
    "1: b 1b\n"
    ".globl cs_post\ncs_post:\n"
    "  mov x0, #0\n  ret\n"
    ".inst 0xd428bc00\n"
    ".globl cs_abort\ncs_abort:\n"
    "  mov x0, #1\n  ret\n");
#elif defined(__riscv)
#define MY_SIG 0xf1401073
asm(".text\n.p2align 2\n.option push\n.option norvc\n.globl spin_in_cs\n.type spin_in_cs,@function\nspin_in_cs:\n"
    "  sd a1, 0(a0)\n"
    ".globl cs_start\ncs_start:\n"
    "1: j 1b\n"
    ".globl cs_post\ncs_post:\n"
    "  li a0, 0\n  ret\n"
    ".word 0xf1401073\n"
    ".globl cs_abort\ncs_abort:\n"
    "  li a0, 1\n  ret\n.option pop\n");
#endif

extern long spin_in_cs(volatile uint64_t *cs_field, struct rseq_cs *desc);
extern char cs_start[], cs_post[], cs_abort[];

struct krseq {
    uint32_t cpu_id_start, cpu_id;
    uint64_t rseq_cs;
    uint32_t flags, node_id, mm_cid;
} __attribute__((aligned(32)));

static __thread struct krseq own;
static struct rseq_cs desc;
static volatile int ready;
static volatile long result = -1;

static long mb(int cmd, unsigned flags, int cpu)
{
    long r = syscall(SYS_membarrier, cmd, flags, cpu);
    return r < 0 ? -errno : r;
}

static void *spinner(void *arg)
{
    struct krseq *a;
    (void)arg;
    if (__rseq_size > 0) {
        a = (struct krseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
    } else {
        a = &own;
        if (syscall(SYS_rseq, a, 32, 0, MY_SIG)) {
            printf("rseq: errno %d\n", errno);
            return NULL;
        }
    }
    ready = 1;
    result = spin_in_cs(&a->rseq_cs, &desc);
    return NULL;
}

int main(void)
{
    pthread_t t;
    long q;

    setvbuf(stdout, NULL, _IONBF, 0);
    q = mb(MEMBARRIER_CMD_QUERY, 0, 0);
    printf("query has the rseq pair: %d\n",
           (q & (MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ | MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ))
           == (MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ | MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ));
    printf("rseq barrier before registering: %ld\n", mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0));
    printf("bad flags: %ld\n", mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 2, 0));
    printf("register: %ld\n", mb(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0));
    printf("registrations: %#lx\n", mb(MEMBARRIER_CMD_GET_REGISTRATIONS, 0, 0));
    printf("flag cpu on another command: %ld\n", mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED, MEMBARRIER_CMD_FLAG_CPU, 0));
    printf("rseq barrier, nobody in a section: %ld\n", mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0));
    printf("rseq barrier on cpu 1000: %ld\n", mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, MEMBARRIER_CMD_FLAG_CPU, 1000));

    desc.start_ip = (uintptr_t)cs_start;
    desc.post_commit_offset = (uintptr_t)(cs_post - cs_start);
    desc.abort_ip = (uintptr_t)cs_abort;
    pthread_create(&t, NULL, spinner, NULL);
    while (!ready)
        ;
    for (volatile int i = 0; i < 20000; i++)       /* the spinner is inside its section now */
        ;
    printf("still spinning before the barrier: %d\n", result == -1);
    printf("rseq barrier: %ld\n", mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0));
    pthread_join(t, NULL);
    printf("the spinner's section returned %ld (1: its abort handler)\n", result);
    return 0;
}
