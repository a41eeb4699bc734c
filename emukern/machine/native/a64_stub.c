/*
 * The return from an arm64 kernel flush sequence, done in C (emukern/machine/cpu_arm64.py).
 *
 * A syscall of a task with TIF_SVE set runs the kernel's real sve_flush_live instructions on the
 * CPU before the task's next user instruction.  The kernel arms it in the CPU's (Python) INTR
 * hook; ek_a64_stub_enter, the next INTR hook, points the PC at the sequence and lets Unicorn go
 * on; the sequence ends in `brk #0xe4e` (its "ret").  Taking that brk as an exception costs a
 * second Python callback per syscall.  Instead, a code hook bounded
 * to the address of that closing brk does, when the Python side armed it, what the exception
 * return does: the brk counts as the retired "ret" (the block counter counted it with its
 * block), the PC goes back to the user PC, the code guard closes, the counter's deadline is the
 * user's again.  (On Unicorn's physical TLB, the TLB is also flushed: the stub page is
 * execute-only, and the fetches of the sequence filled entries a user load would hit.  The arm64
 * CPU runs on the virtual TLB, whose entries carry only the permission of the access that filled
 * them, so there is nothing to flush: see cpu_arm64.py, "Machine pages".)  Python settles the statistics (stub
 * instructions, runs per sequence) at its next entry, from `before` and `done_count`.
 *
 * Unarmed (stub_sync's direct runs, a chain of several sequences, exact counting), the hook does
 * nothing and the brk goes to the INTR hook as before.
 *
 * Measured with Unicorn 2.1.4 (tests/machine/test_stub_native_return.py): a PC written from a
 * code hook bounded to one address leaves the instruction there unexecuted (no exception is
 * taken) and the CPU resumes at the PC written, within the same emu_start.
 */
#include <stdbool.h>
#include <stdint.h>
#include <unicorn/unicorn.h>

typedef struct {
    /* fields of the native instruction counter (counter.c's ek_counter), by address */
    uint64_t *count;
    uint64_t *deadline;
    uint64_t *guard_open;
    uint64_t *gx_lo;
    uint64_t *gx_hi;
    uint64_t *resync;
    uint64_t *blk_start;
    uint64_t *blk_end;
    uint64_t pc_reg;       /* Unicorn's id of the PC */
    uint64_t guard_lo;     /* the guarded range, as the closed guard has it */
    uint64_t guard_hi;
    /* armed by Python in the trap hook: the sequence to enter when the INTR hooks are done */
    uint64_t entry;        /* its first instruction (0: nothing armed) */
    uint64_t length;       /* its instructions, the closing brk included */
    /* the sequence in flight, set at entry and cleared when its closing brk is reached */
    uint64_t in_flight;
    uint64_t ret_pc;       /* the user PC to return to */
    uint64_t ret_deadline; /* the counter's deadline to put back */
    uint64_t before;       /* the count when the sequence was entered */
    uint64_t done_count;   /* the count after its closing brk, for Python's accounting */
    uint64_t returns;      /* statistics: returns done here */
    uint64_t tlb_flush;    /* flush the TLB on return (a CPU on Unicorn's physical TLB) */
    /* a uc_arm64_cp_reg to write on return, once (0: none): CPACR_EL1 with EL0 SVE trapping
     * again, when the flush runs before a task that may not use SVE (the sequence itself
     * needs it enabled) */
    uint64_t cp_ret;
} ek_a64_ret;

/* An INTR hook added after the CPU's Python one (Unicorn calls them in the order they were
 * added, all of them): when the kernel armed a flush during the trap, the user PC it is to
 * return to is the PC now (the syscall may have changed it: a signal frame, a sigreturn), and
 * the PC goes into the sequence, bounded by the counter's deadline as a chained stub is, with
 * the code guard open.  Done here, not in Python, to save the two libunicorn calls (read the
 * PC, write it) a syscall. */
void ek_a64_stub_enter(uc_engine *uc, uint32_t intno, void *user_data)
{
    ek_a64_ret *r = (ek_a64_ret *)user_data;
    uint64_t pc = r->entry;
    (void)intno;
    if (!pc)
        return;
    r->entry = 0;
    uc_reg_read(uc, (int)r->pc_reg, &r->ret_pc);
    r->in_flight = 1;
    r->before = *r->count;
    r->ret_deadline = *r->deadline;
    *r->deadline = *r->count + r->length;
    *r->guard_open = 1;
    *r->gx_lo = 0;
    *r->gx_hi = 0;
    uc_reg_write(uc, (int)r->pc_reg, &pc);
    *r->resync = 1;
}

void ek_a64_stub_ret(uc_engine *uc, uint64_t address, uint32_t size, void *user_data)
{
    ek_a64_ret *r = (ek_a64_ret *)user_data;
    uint64_t pc = r->ret_pc;
    (void)address;
    (void)size;
    if (!r->in_flight)
        return;
    r->in_flight = 0;
    r->done_count = *r->count;
    r->returns++;
    uc_reg_write(uc, (int)r->pc_reg, &pc);
    *r->resync = 1;                 /* a hook wrote the PC (see ek_block_hook's resync) */
    /* the block (counted whole, this brk included) is left here: nothing of it is left to
     * correct, and a split's stop hook on this address (stub_sync's runs leave one on each
     * sequence's brk) must not take the guard closed below for user code running into it */
    *r->blk_start = 0;
    *r->blk_end = 0;
    *r->guard_open = 0;             /* the code guard closes, with its range back */
    *r->gx_lo = r->guard_lo;
    *r->gx_hi = r->guard_hi;
    *r->deadline = r->ret_deadline;
    if (r->cp_ret) {
        uc_reg_write(uc, UC_ARM64_REG_CP_REG, (void *)(uintptr_t)r->cp_ret);
        r->cp_ret = 0;
    }
    if (r->tlb_flush)
        uc_ctl_flush_tlb(uc);
}

/* Unicorn's virtual TLB fill (UC_HOOK_TLB_FILL, every address): the identity mapping, which is
 * what the physical TLB gives with the MMU off (the memory regions' own permissions are still
 * checked on the fill, as there); an instruction fetch's entry gets every permission and a data
 * access's read+write only (see counter.c's ek_tlb_fill: stores are 10x faster so), except for
 * the machine's stub page:
 * an entry there has only the permission of the access that filled it, so the kernel stubs'
 * instruction fetches leave no TLB entry a user load or store could hit, and a stub run needs no
 * TLB flush after it.  (Without a fill hook the virtual TLB does that for every page, and a page
 * both read and written then refills at every switch between the two: measured 4x slower.) */
bool ek_a64_tlb_fill(uc_engine *uc, uint64_t address, uc_mem_type type, uc_tlb_entry *result,
                     void *user_data)
{
    ek_a64_ret *r = (ek_a64_ret *)user_data;
    (void)uc;
    /* Top Byte Ignore for EL0 data accesses (TCR_EL1.TBI0, which Linux always sets): an address
     * whose bit 55 is clear reaches memory without its top byte, so tagged pointers load and
     * store (Unicorn 2.1 honours no TCR TBI bit itself).  Instruction fetches keep it
     * (TCR_EL1.TBID0): a tagged PC still faults. */
    if (type != UC_MEM_FETCH && !((address >> 55) & 1))
        address &= (1ULL << 56) - 1;
    result->paddr = address;
    if (address - r->guard_lo < r->guard_hi - r->guard_lo) {
        /* the permission of this access alone (what the fill hook-less virtual TLB gives): the
         * region's own check then refuses a user load or store with READ_PROT/WRITE_PROT, the
         * faults the kernel turns into SIGSEGV */
        result->perms = type == UC_MEM_FETCH ? UC_PROT_EXEC : type == UC_MEM_WRITE ? UC_PROT_WRITE : UC_PROT_READ;
    } else {
        /* a data access gets no fetch permission: Unicorn marks an entry dirty (stores then
         * take the inline fast path) only while it cannot serve fetches (counter.c's
         * ek_tlb_fill says why and what it measured) */
        result->perms = type == UC_MEM_FETCH ? UC_PROT_ALL : (UC_PROT_READ | UC_PROT_WRITE);
    }
    return true;
}

/* ---- the svc entry ---------------------------------------------------------------------------- */
/* The arm64 CPU's INTR hook, when this library is available (cpu_arm64.py, Arm64Cpu._svc_entry):
 * it stands where the CPU's Python INTR callback stood, between counter.c's ek_intr_hook (which
 * has already corrected the count) and ek_a64_stub_enter (which must still see every trap after
 * Python has handled it), so the order of the hooks Unicorn calls is unchanged.
 *
 * An svc (EXCP_SWI, intno 2) is by far the most frequent exception: its PC (already past the
 * svc) and the syscall ABI's registers, x8 and x0..x5, are read here into `sys` and the CPU's svc
 * callback alone is called.  Python would otherwise take the trap through its general callback,
 * dispatch on the exception number and read the same registers with a ctypes batch call of its
 * own.  Every other exception goes to the general callback, as before. */
typedef void (*ek_a64_py_intr)(uc_engine *uc, uint32_t intno, void *user_data);
/* the svc callback takes no argument: everything it needs is in the struct, and each argument
 * is one more Python object ctypes makes per syscall */
typedef void (*ek_a64_py_svc)(void);

typedef struct {
    void *py;          /* the CPU's general Python INTR callback (a ctypes function pointer) */
    void *py_svc;      /* its svc callback (NULL: the general one takes svc too) */
    ek_a64_ret *ret;   /* the native flush return's state, above (NULL: none) */
    uint64_t ids[8];   /* Unicorn's register ids: the PC, x8, x0..x5 */
    /* at the last svc: the PC (past the svc), x8, x0..x5, then what the last flush returned
     * here retired (done_count - before), or all ones while it is still armed or in flight:
     * Python settles that flush at this svc (if it armed one) and would otherwise read four
     * fields of `ret` through ctypes to do it */
    uint64_t sys[9];
} ek_a64_intr_t;

void ek_a64_intr(uc_engine *uc, uint32_t intno, void *user_data)
{
    ek_a64_intr_t *e = (ek_a64_intr_t *)user_data;
    int i;
    if (intno == 2 && e->py_svc) {
        for (i = 0; i < 8; i++)
            uc_reg_read(uc, (int)e->ids[i], &e->sys[i]);
        if (e->ret) {
            ek_a64_ret *r = e->ret;
            e->sys[8] = (r->in_flight || r->entry) ? UINT64_MAX : r->done_count - r->before;
        }
        ((ek_a64_py_svc)e->py_svc)();
        return;
    }
    ((ek_a64_py_intr)e->py)(uc, intno, NULL);
}

/* ---- the LSE atomics' alignment check ----------------------------------------------------------
 * Each LSE atomic word Unicorn performs itself has a code hook on its own address (cpu_arm64.py,
 * "LSE atomics run inside Unicorn"), there only to give the alignment fault a CPU without
 * FEAT_LSE2 takes and Unicorn does not.  Nearly every atomic a program runs is aligned, so the
 * hook's whole work is one register read and a test; done here it costs no Python callback.  A
 * misaligned base goes to the CPU's Python check, which stops the run before the word with the
 * count the exit path expects (that is rare: a SIGBUS follows), so the counting stays in one
 * place.  One struct per (base register, alignment), owned by the CPU, is the hook's user_data:
 * it outlives every engine's hooks. */
typedef void (*ek_a64_py_code)(uc_engine *uc, uint64_t address, uint32_t size, void *user_data);

typedef struct {
    void *py;          /* the CPU's Python check (a ctypes CODE callback), for a misaligned base */
    uint64_t reg;      /* Unicorn's id of the base register: x0..x30, or sp for 31 */
    uint64_t mask;     /* the required alignment minus one */
} ek_a64_atomic_t;

void ek_a64_atomic_check(uc_engine *uc, uint64_t address, uint32_t size, void *user_data)
{
    ek_a64_atomic_t *a = (ek_a64_atomic_t *)user_data;
    uint64_t base = 0;
    uc_reg_read(uc, (int)a->reg, &base);
    if (!(base & a->mask))
        return;
    ((ek_a64_py_code)a->py)(uc, address, size, NULL);
}
