/*
 * emukern's exact instruction counter.
 *
 * Unicorn calls a UC_HOOK_CODE callback before every guest instruction.  A Python callback costs
 * about 0.8 us per instruction; this one is a few nanoseconds.  It counts instructions and stops
 * emulation *before* the instruction that would exceed `deadline`, so the scheduler can preempt a
 * task between any two instructions at an exact, deterministic count (the timer tick).
 *
 * The struct is shared with Python through ctypes (emukern/machine/counter.py); Python lowers
 * `deadline` when the kernel charges cycles inside a trap hook.
 */
#include <stdint.h>

typedef struct uc_struct uc_engine;
extern int uc_emu_stop(uc_engine *uc);

typedef struct {
    uint64_t count;     /* instructions executed so far */
    uint64_t deadline;  /* stop before executing instruction number deadline+1 */
} ek_counter;

void ek_count_hook(uc_engine *uc, uint64_t address, uint32_t size, void *user_data)
{
    ek_counter *c = (ek_counter *)user_data;
    (void)address;
    (void)size;
    if (c->count >= c->deadline) {
        uc_emu_stop(uc);
        return;
    }
    c->count++;
}

/*
 * The guard on machine-owned code (the arm64 kernel stubs).  Registered as a UC_HOOK_CODE over
 * the stub range only, so Unicorn calls it for stub instructions and for nothing else.  While
 * the machine runs a stub, `open` is set; an instruction in the range with `open` clear is user
 * code that jumped there: the hook records its address and stops the CPU before it executes.
 */
typedef struct {
    uint64_t open;      /* a kernel stub is running */
    uint64_t hit;       /* address of the user instruction stopped in the range, or 0 */
} ek_guard;

void ek_guard_hook(uc_engine *uc, uint64_t address, uint32_t size, void *user_data)
{
    ek_guard *g = (ek_guard *)user_data;
    (void)size;
    if (!g->open && !g->hit) {
        g->hit = address;
        uc_emu_stop(uc);
    }
}
