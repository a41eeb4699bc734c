# emukern's riscv64 vDSO (linux-vdso.so.1), linked as a shared object by emukern/kernel/vdso.
#
# emukern's clock is the instruction counter: no counter the guest can read follows it the way
# the time CSR follows a real clocksource's vDSO data.  So, like Linux when the clocksource's
# vdso_clock_mode is VDSO_CLOCKMODE_NONE, every time call here takes the fallback: the syscall.
# getcpu and flush_icache are syscalls in Linux's riscv vDSO too.  riscv_hwprobe always takes
# Linux's fallback path (the syscall), never the vvar copy of the all-CPUs answers: the answers
# then come from the one place emukern computes them (kernel/arch/riscv/hwprobe.py).
#
# The sigreturn trampoline comes first in .text, which the linker script puts at the start of
# the image's second page: the kernel maps the image so that it stays at the address the old
# one-page trampoline had (riscv has no SA_RESTORER: every handler returns through it).

        .section .text.sigreturn, "ax", @progbits
        .globl  __vdso_rt_sigreturn
        .type   __vdso_rt_sigreturn, @function
__vdso_rt_sigreturn:
        .option push
        .option norvc                   # the full-size words libgcc's unwinder matches
        li      a7, 139                 # __NR_rt_sigreturn
        ecall
        .option pop
        .size   __vdso_rt_sigreturn, . - __vdso_rt_sigreturn

        .text
        .option push
        .option norvc
        .macro  vdso_syscall name, nr
        .balign 16
        .globl  \name
        .type   \name, @function
\name:
        li      a7, \nr
        ecall
        ret
        .size   \name, . - \name
        .endm

        vdso_syscall __vdso_clock_gettime, 113   # (clockid_t, struct timespec *)
        vdso_syscall __vdso_gettimeofday, 169    # (struct timeval *, struct timezone *)
        vdso_syscall __vdso_clock_getres, 114    # (clockid_t, struct timespec *)
        vdso_syscall __vdso_getcpu, 168          # (unsigned *cpu, unsigned *node, void *)
        vdso_syscall __vdso_riscv_hwprobe, 258   # (pairs, count, cpusetsize, cpus, flags)
        vdso_syscall __vdso_flush_icache, 259    # (start, end, flags)
        .option pop

# The ELF note every Linux vDSO carries: name "Linux", type 0, the kernel's LINUX_VERSION_CODE
# (the kernel patches the word at map time to the release it models).
        .section .note.Linux, "a", @note
        .balign 4
        .word   6, 4, 0
        .asciz  "Linux"
        .balign 4
linux_version_code:
        .word   0x060c00
        .balign 4
