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
    uint64_t count;       /* instructions executed so far */
    uint64_t deadline;    /* stop before executing instruction number deadline+1 */
    /* The guard on machine-owned code (the arm64 kernel stubs): while `guard_open` is clear,
     * an instruction in [guard_lo, guard_lo + guard_len) is user code that jumped there; it is
     * recorded in `guard_hit` and the CPU stops before it executes (uncounted).  Checked here
     * because this hook runs anyway: a second code hook, even one limited to the stub range,
     * made Unicorn's per-instruction helper about twice as slow. */
    uint64_t guard_lo;
    uint64_t guard_len;
    uint64_t guard_open;
    uint64_t guard_hit;
} ek_counter;

void ek_count_hook(uc_engine *uc, uint64_t address, uint32_t size, void *user_data)
{
    ek_counter *c = (ek_counter *)user_data;
    (void)size;
    if (c->count >= c->deadline) {
        uc_emu_stop(uc);
        return;
    }
    if (address - c->guard_lo < c->guard_len && !c->guard_open) {
        if (!c->guard_hit)
            c->guard_hit = address;
        uc_emu_stop(uc);
        return;
    }
    c->count++;
}

