// emukern's arm64 vDSO (linux-vdso.so.1), linked as a shared object by emukern/kernel/vdso.
//
// emukern's clock is the instruction counter: no counter the guest can read follows it the way
// CNTVCT_EL0 follows a real clocksource's vDSO data.  So, like Linux when the clocksource's
// vdso_clock_mode is VDSO_CLOCKMODE_NONE, every time call here takes the fallback: the syscall.
// A program still runs real vDSO code and every time value stays on the one clock.
//
// The sigreturn trampoline comes first in .text, which the linker script puts at the start of
// the image's second page: the kernel maps the image so that it stays at the address the old
// one-page trampoline had (the return address of a handler installed without SA_RESTORER).

        .section .text.sigreturn, "ax", %progbits
        .globl  __kernel_rt_sigreturn
        .type   __kernel_rt_sigreturn, %function
__kernel_rt_sigreturn:
        mov     x8, #139                // __NR_rt_sigreturn (the unwinders match these two words)
        svc     #0
        .size   __kernel_rt_sigreturn, . - __kernel_rt_sigreturn

        .text
        .balign 16
        .globl  __kernel_clock_gettime
        .type   __kernel_clock_gettime, %function
__kernel_clock_gettime:                 // (clockid_t, struct timespec *)
        mov     x8, #113                // __NR_clock_gettime
        svc     #0
        ret
        .size   __kernel_clock_gettime, . - __kernel_clock_gettime

        .balign 16
        .globl  __kernel_gettimeofday
        .type   __kernel_gettimeofday, %function
__kernel_gettimeofday:                  // (struct timeval *, struct timezone *)
        mov     x8, #169                // __NR_gettimeofday
        svc     #0
        ret
        .size   __kernel_gettimeofday, . - __kernel_gettimeofday

        .balign 16
        .globl  __kernel_clock_getres
        .type   __kernel_clock_getres, %function
__kernel_clock_getres:                  // (clockid_t, struct timespec *)
        mov     x8, #114                // __NR_clock_getres
        svc     #0
        ret
        .size   __kernel_clock_getres, . - __kernel_clock_getres

// The ELF note every Linux vDSO carries: name "Linux", type 0, the kernel's LINUX_VERSION_CODE
// (the kernel patches the word at map time to the release it models).
        .section .note.Linux, "a", %note
        .balign 4
        .long   6, 4, 0
        .asciz  "Linux"
        .balign 4
linux_version_code:
        .long   0x060c00
        .balign 4
