/*
 * emukern's exact instruction counter.
 *
 * Two ways of counting, one result (the count before any instruction is exactly the number of
 * instructions retired before it, and the CPU stops before the instruction that would pass
 * `deadline`, so a tick preempts between two given instructions):
 *
 * - block mode (the default): a UC_HOOK_BLOCK callback adds a translated block's instruction
 *   count once, when the block is entered.  AArch64 blocks are size/4 instructions; RISC-V
 *   blocks mix 16- and 32-bit instructions, so their count comes from the length bits of the
 *   code (QEMU's rule: low two bits 11 = 32-bit, else 16-bit), cached per block address and
 *   size and dropped when emukern says code changed (`gen`).  Without a UC_HOOK_CODE hook
 *   Unicorn does not call a helper before every instruction, which is what made exact counting
 *   cost half of Unicorn's speed.
 *
 *   When the deadline (tick, budget, a stub's bound) or the closed guard falls inside the
 *   block about to run, the block is *split*: a code hook bounded to the first instruction
 *   that must not run is added (ek_stop_hook), the translations holding that address are
 *   dropped, and the PC is written (which makes Unicorn leave the current block before it
 *   executes and look the PC up again).  The block is translated anew with one hook call, before
 *   that instruction; there the count is set to what ran of the block and the CPU stops with
 *   uc_emu_stop() from a code hook, the same way the per-instruction counter stops (so even a
 *   nested emu_start ends the same way).  emukern's Python side removes the hook after the run
 *   (`unsplit`); one left behind only stops at the deadline, which is right anyway, so those
 *   in machine-owned code stay (measured: adding and dropping one per arm64 stub_sync made
 *   lat_ctx.S 1.8x slower).
 *
 *   A trap inside a block (anything but the block's last instruction) leaves the count too
 *   high: ek_fix() sets it from the trapping PC; the INTR hook does this before emukern's own
 *   INTR hook sees the trap, and the Python run loop does it for faults.
 *
 * - exact mode: a UC_HOOK_CODE callback counts each instruction, as emukern did before block
 *   counting (used by the debugger, whose per-instruction hooks expect it, by
 *   EMUKERN_EXACT_COUNT=1, and by the test that compares both ways).
 *
 * Measured with Unicorn 2.1.4 (tests/machine/test_block_counter.py keeps the first three true):
 * - uc_emu_stop() in a block hook stops before any instruction of the block runs (PC = block
 *   start);
 * - writing the PC from a block hook leaves the block unexecuted and resumes at the PC written;
 * - a hook added after a block was translated is not called from that block until it is
 *   translated again (so switching modes drops all translations);
 * - on this 2-core machine (loaded): uc_ctl_remove_cache of one address 3.6 us (riscv64) /
 *   8.4 us (arm64); UC_CTL_TB_FLUSH 37-44 us, plus retranslating what runs next; a bounded
 *   code hook added and deleted from Python 27-40 us; a split adds ~25-37 us to a run;
 * - the floor of this design on a 2-instruction loop (spin.S): an empty C block hook runs
 *   it at 200-240 MIPS where Unicorn without hooks runs 330-500 (0.45-0.55x); this hook is
 *   within a few percent of the empty one; a per-instruction C code hook runs 90-120 MIPS.
 *
 * The struct is shared with Python through ctypes (emukern/machine/counter.py); Python lowers
 * `deadline` when the kernel charges cycles inside a trap hook.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unicorn/unicorn.h>

typedef struct {
    uint64_t key;         /* block address ^ size << 52 (guest addresses are below 2^52) */
    uint32_t n;
    uint32_t gen;
} ek_blk;

#define EK_CACHE_BITS 13
#define EK_CACHE (1u << EK_CACHE_BITS)
#define EK_SPLITS 16

typedef struct {
    uint64_t count;       /* instructions executed so far */
    uint64_t deadline;    /* stop before executing instruction number deadline+1 */
    /* The guard on machine-owned code (the arm64 kernel stubs): while `guard_open` is clear,
     * an instruction in [guard_lo, guard_lo + guard_len) is user code that jumped there; it is
     * recorded in `guard_hit` and the CPU stops before it executes (uncounted). */
    uint64_t guard_lo;
    uint64_t guard_len;
    uint64_t guard_open;
    uint64_t guard_hit;
    /* block mode */
    uint64_t rvc;         /* instructions are 2 or 4 bytes (RISC-V C) */
    uint64_t pc_reg;      /* Unicorn's register id of the PC */
    uint64_t intr_after;  /* the INTR hook sees the PC after the trapping instruction (RISC-V) */
    uint64_t blk_start;   /* the block entered last, counted whole (0: none, or corrected) */
    uint64_t blk_end;
    uint64_t gx_lo;       /* the guarded range while the guard is closed ([0, 0) while open) */
    uint64_t gx_hi;
    uint64_t nsplit;      /* split points armed: each a UC_HOOK_CODE hook bounded to one address */
    uint64_t split_at[EK_SPLITS];
    uint64_t split_hk[EK_SPLITS];
    uint64_t gen;         /* code may have changed: cached RISC-V block counts are stale */
    uint64_t splits;      /* statistics: splits, count corrections */
    uint64_t fixes;
    ek_blk *cache;
    uint64_t resync;      /* a hook wrote the PC: leave the next block once (see ek_block_hook) */
} ek_counter;

/* ---- the floor ------------------------------------------------------------------------------- */
/* A block hook that does nothing: `emukern bench` runs raw Unicorn with it beside emukern, so the
 * MIPS table shows what Unicorn's per-block hook call costs by itself (the floor of any counting
 * done from a block hook) next to what ek_block_hook adds to it. */
void ek_empty_block_hook(uc_engine *uc, uint64_t address, uint32_t size, void *user_data)
{
    (void)uc;
    (void)address;
    (void)size;
    (void)user_data;
}

/* The other floor: a block hook that only adds the block's size/4 to a 64-bit counter (one load,
 * one add, one store; not exact for RISC-V C, which needs the length bits).  Nothing that counts
 * per block can do less, so raw Unicorn's MIPS with this hook bounds what any per-block counter
 * reaches.  The count is a chain through memory from block to block, which the empty hook
 * has not: on 2-instruction blocks that chain alone costs a quarter to a third of the speed. */
void ek_add_block_hook(uc_engine *uc, uint64_t address, uint32_t size, void *user_data)
{
    (void)uc;
    (void)address;
    *(uint64_t *)user_data += size >> 2;
}

/* ---- exact mode ------------------------------------------------------------------------------ */
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

/* ---- block mode ------------------------------------------------------------------------------ */

/* Instructions of [start, start+size) that start before `upto`, and (via *at) the address of
 * instruction number `kth` (0-based) when kth < that count. */
static uint64_t ek_walk(uc_engine *uc, ek_counter *c, uint64_t start, uint64_t size, uint64_t upto,
                        uint64_t kth, uint64_t *at)
{
    uint64_t n = 0, off = 0, lim;
    uint8_t stack[4096];
    uint8_t *buf = stack;

    if (upto > start + size)
        upto = start + size;
    if (upto <= start)
        return 0;
    lim = upto - start;
    if (!c->rvc) {
        n = (lim + 3) / 4;
        if (at && kth < n)
            *at = start + 4 * kth;
        return n;
    }
    if (lim + 4 > sizeof(stack)) {
        buf = malloc(lim + 4);
        if (!buf)
            return (lim + 3) / 4;
    }
    memset(buf, 0, lim + 4);
    if (uc_mem_read(uc, start, buf, lim) != UC_ERR_OK) {
        /* not readable through the API (cannot happen for code Unicorn just translated):
         * fall back to the 32-bit rule rather than guess */
        if (buf != stack)
            free(buf);
        return (lim + 3) / 4;
    }
    while (off < lim) {
        if (at && n == kth)
            *at = start + off;
        off += (buf[off] & 3) == 3 ? 4 : 2;
        n++;
    }
    if (buf != stack)
        free(buf);
    return n;
}

/* The count cache's slot for a block, and whether it holds the block's current count. */
static inline ek_blk *ek_blk_slot(const ek_counter *c, uint64_t address, uint32_t size, uint64_t *key)
{
    *key = address ^ ((uint64_t)size << 52);
    return &c->cache[(*key ^ (*key >> EK_CACHE_BITS)) >> 1 & (EK_CACHE - 1)];
}

static inline int ek_blk_valid(const ek_counter *c, const ek_blk *e, uint64_t key)
{
    return e->key == key && e->gen == (uint32_t)c->gen;
}

static inline uint64_t ek_block_insns(uc_engine *uc, ek_counter *c, uint64_t address, uint32_t size)
{
    uint64_t key;
    ek_blk *e;
    if (!c->rvc)
        return size >> 2;
    e = ek_blk_slot(c, address, size, &key);
    if (__builtin_expect(!ek_blk_valid(c, e, key), 0)) {
        e->key = key;
        e->gen = (uint32_t)c->gen;
        e->n = (uint32_t)ek_walk(uc, c, address, size, address + size, 0, NULL);
    }
    return e->n;
}

void ek_stop_hook(uc_engine *uc, uint64_t address, uint32_t size, void *user_data);

/* The count before the current block (it was counted whole on entry). */
static uint64_t ek_before(uc_engine *uc, ek_counter *c)
{
    return c->count - ek_block_insns(uc, c, c->blk_start, (uint32_t)(c->blk_end - c->blk_start));
}

static int ek_armed(const ek_counter *c, uint64_t at)
{
    uint64_t i;
    for (i = 0; i < c->nsplit; i++)
        if (c->split_at[i] == at)
            return 1;
    return 0;
}

/* Split the block at `address`: stop before the instruction at `at` (inside it).  A split
 * point stays armed (its hook costs one call where it is) until emukern's Python side removes
 * it after the run; those in the machine's own code (the arm64 stubs, which stub_sync stops
 * inside every time) stay for good. */
static void ek_split(uc_engine *uc, ek_counter *c, uint64_t address, uint64_t at)
{
    uc_hook hh;
    uint64_t i;
    if (c->nsplit == EK_SPLITS) {          /* full: reuse the last slot */
        i = --c->nsplit;
        uc_hook_del(uc, (uc_hook)c->split_hk[i]);
        uc_ctl_remove_cache(uc, c->split_at[i], c->split_at[i] + 1);
    }
    if (uc_hook_add(uc, &hh, UC_HOOK_CODE, (void *)ek_stop_hook, c, at, at) != UC_ERR_OK) {
        uc_emu_stop(uc);        /* cannot split: stop before the block (the caller sees it) */
        return;
    }
    c->split_at[c->nsplit] = at;
    c->split_hk[c->nsplit] = hh;
    c->nsplit++;
    c->splits++;
    /* drop every translation holding `at` (this block's among them: it is translated again
     * with a call to ek_stop_hook before `at`), then leave this block before it runs: Unicorn
     * treats a PC write from a hook as "quit the block, resume at the PC" */
    uc_ctl_remove_cache(uc, at, at + 1);
    uc_reg_write(uc, (int)c->pc_reg, &address);
}

/* Before the instruction a split stops at.  Its block was counted whole on entry: the count
 * there is the count before the block plus the instructions before `address`.  Stop if that
 * reaches the deadline (or the guard), exactly as ek_count_hook would have; otherwise (the
 * deadline moved) the block goes on with its full count. */
void ek_stop_hook(uc_engine *uc, uint64_t address, uint32_t size, void *user_data)
{
    ek_counter *c = (ek_counter *)user_data;
    uint64_t at_count;
    (void)size;
    if (address < c->blk_start || address >= c->blk_end)
        return;
    at_count = ek_before(uc, c) + ek_walk(uc, c, c->blk_start, c->blk_end - c->blk_start, address, 0, NULL);
    if (at_count >= c->deadline) {
        c->count = at_count;
    } else if (!c->guard_open && address - c->guard_lo < c->guard_len) {
        c->count = at_count;
        if (!c->guard_hit)
            c->guard_hit = address;
    } else {
        return;
    }
    c->blk_start = c->blk_end = 0;
    uc_emu_stop(uc);
}

/* Everything but the hot path of ek_block_hook: a PC resync, a RISC-V block not in the count
 * cache, a block reaching the deadline or the guarded range.  Kept out of line so that the hot
 * path compiles to a leaf that saves no registers: GCC -O2 does not shrink-wrap the prologue
 * the slow paths need (five pushes, five pops and a stack frame on every block), and measured on
 * spin.S's 2-instruction blocks that prologue cost as much as the hook call itself. */
static void __attribute__((noinline)) ek_block_slow(uc_engine *uc, ek_counter *c, uint64_t address,
                                                    uint32_t size)
{
    uint64_t end = address + size, n, k, at = end, lim;

    if (c->resync) {
        /* A PC write from a hook outside a translated block (the INTR hook delivering a signal,
         * returning from one, emulating an instruction) sets Unicorn's skip_sync_pc_on_exit,
         * and only an exit through the TB-start exit check clears it again.  While it is set,
         * Unicorn does not restore the precise PC of a faulting load/store (cputlb.c calls
         * cpu_restore_state only when it is clear), so the memory hook and the error path
         * see the faulting block's start.  Writing the PC here, inside a block, leaves the
         * block unexecuted through that check (the flag is cleared) and re-enters it.
         * Measured: without this, a store fault after a signal return reported the block
         * start (arm64 signals.c "sync": pc 0x401edc instead of 0x401ef0). */
        c->resync = 0;
        uc_reg_write(uc, (int)c->pc_reg, &address);
        return;
    }
    n = ek_block_insns(uc, c, address, size);       /* (fills the RISC-V cache entry) */
    if (c->count + n <= c->deadline && (address >= c->gx_hi || end <= c->gx_lo)) {
        c->blk_start = address;
        c->blk_end = end;
        c->count += n;
        return;
    }
    if (address < c->gx_hi && end > c->gx_lo) {
        if (address >= c->gx_lo) {
            if (!c->guard_hit)
                c->guard_hit = address;
            uc_emu_stop(uc);
            return;
        }
        at = c->gx_lo;          /* user code running into the guarded range: stop before it */
    }
    lim = c->deadline > c->count ? c->deadline - c->count : 0;
    if (n > lim) {
        if (lim == 0) {
            uc_emu_stop(uc);
            return;
        }
        k = end;
        ek_walk(uc, c, address, size, end, lim, &k);
        if (k < at)
            at = k;
    }
    if (at != end && !ek_armed(c, at)) {
        ek_split(uc, c, address, at);
        return;
    }
    c->blk_start = address;
    c->blk_end = end;
    c->count += n;
}

void ek_block_hook(uc_engine *uc, uint64_t address, uint32_t size, void *user_data)
{
    ek_counter *c = (ek_counter *)user_data;
    uint64_t end = address + size, n;

    if (__builtin_expect(c->resync, 0))
        goto slow;
    if (!c->rvc) {
        n = size >> 2;
    } else {
        uint64_t key;
        const ek_blk *e = ek_blk_slot(c, address, size, &key);
        if (__builtin_expect(!ek_blk_valid(c, e, key), 0))
            goto slow;
        n = e->n;
    }
    /* the hot path: the block ends before the deadline and is not in the guarded range (three
     * stores, no call, no saved register: every nanosecond here is about a tenth of a
     * 2-instruction loop's time) */
    if (__builtin_expect(c->count + n <= c->deadline && (address >= c->gx_hi || end <= c->gx_lo), 1)) {
        c->blk_start = address;
        c->blk_end = end;
        c->count += n;
        return;
    }
slow:
    ek_block_slow(uc, c, address, size);
}

/* A trap or fault at `pc`: the instructions of the current block from `pc` on (from the one
 * after it when `inclusive`) did not run.  The block's count is corrected once. */
void ek_fix(uc_engine *uc, ek_counter *c, uint64_t pc, int inclusive)
{
    uint64_t k;
    if (pc < c->blk_start || pc >= c->blk_end)
        return;
    k = ek_walk(uc, c, c->blk_start, c->blk_end - c->blk_start, pc, 0, NULL) + (inclusive ? 1 : 0);
    k += ek_before(uc, c);
    if (k != c->count) {
        c->count = k;
        c->fixes++;
    }
    c->blk_start = c->blk_end = 0;
}

void ek_intr_hook(uc_engine *uc, uint32_t intno, void *user_data)
{
    ek_counter *c = (ek_counter *)user_data;
    uint64_t pc = 0;
    if (c->blk_end == 0)
        return;
    uc_reg_read(uc, (int)c->pc_reg, &pc);
    if (c->intr_after && intno == 2 && pc > c->blk_end && pc - c->blk_end <= 4) {
        /* RISC-V illegal instruction that QEMU's translator refused before adding it to the
         * block (an all-zero c.unimp halfword): the block ended at it, so no block hook counted
         * it, but it was attempted, as the per-instruction hook counts it */
        c->count++;
        c->blk_start = c->blk_end = 0;
        return;
    }
    ek_fix(uc, c, pc, !c->intr_after);
}

/* ---- the RISC-V vector unit's configuration instructions ------------------------------------ */
/*
 * Unicorn 2.1.4 has no V extension: every vector word raises an illegal-instruction exception
 * and emukern's RVV unit (Python) executes it from the INTR hook.  vsetvli / vsetivli / vsetvl
 * only compute vl from AVL and vtype and write rd, so they are executed here instead, in the
 * INTR callback, the way a core's vector unit executes them without any trap: no Python frame.
 *
 * ek_rvv_intr is then the CPU's only INTR hook after the counter's ek_intr_hook (which has
 * already corrected the count, so the instruction is counted as retired).  Whatever it does
 * not execute goes to the CPU's Python callback (`py`), with what was executed here since Python
 * last looked packed into its third argument (ek_rvv_pack): Python folds that into its
 * statistics and the unit's vl/vtype/vstart before anything else (emukern.machine.rvv.native).
 * `cost` is fixed for a run (Python sets it when the run starts and syncs when it ends).
 *
 * The rules are exec_cfg.run_vsetvl's (the reference): vtype with vill, a reserved bit, vlmul 4,
 * SEW > ELEN (64) or LMUL < SEW/ELEN sets vill (vtype = 1 << 63, vl = 0); vl = min(AVL, VLMAX)
 * with AVL = the 5-bit immediate (vsetivli), x[rs1] (rs1 != x0), VLMAX (rs1 = x0, rd != x0);
 * rs1 = rd = x0 keeps vl when VLMAX does not change, else vill.  That last form needs the unit's
 * current vl and vtype: it is executed here only while `known` says this struct holds them
 * (Python sets it when it starts a run, this code after each instruction it executes; any call
 * into Python clears it, since Python may change the state), else Python executes it.
 * `vs` is sstatus.VS as Python had it when it last returned to the guest (it writes it at the
 * end of every callback and when a run starts; this code sets Dirty, and Python's fold does
 * too): VS Off is the kernel's first-use trap, always Python's.
 */
#define EK_VILL (1ull << 63)

typedef void (*ek_py_intr)(uc_engine *uc, uint32_t intno, void *user_data);

typedef struct {
    uint64_t on;          /* native execution allowed (block counting, no per-instruction observer) */
    uint64_t vs;          /* sstatus.VS: 0 Off, 1 Initial, 2 Clean, 3 Dirty (Python's, pushed) */
    uint64_t known;       /* vl and vtype below are the unit's */
    uint64_t vl;
    uint64_t vtype;
    uint64_t vlen;
    uint64_t cost;        /* cycles of one vsetvl* (the cost table's, set by Python) */
    uint64_t n;           /* executed here since Python last folded them in (each `cost`) */
    ek_counter *counter;
    void *py;             /* the CPU's Python INTR callback (a ctypes function pointer) */
    uint64_t pc_reg;
    uint64_t x0_reg;      /* Unicorn's register id of x0 (x1..x31 follow it) */
    uint64_t handled;     /* statistics: all instructions executed here */
    uint64_t ecall_no;    /* the exception number of an ecall from U-mode (8); 0: none read here */
    uint64_t sys[8];      /* at that ecall: the PC (past the ecall), a7, a0..a5 */
    void *py_ecall;       /* the CPU's Python callback for that ecall (NULL: `py` takes it too) */
} ek_rvv;

/* VLMAX of a vtype value at this VLEN (ELEN 64), 0 when it sets vill. */
static uint64_t ek_vlmax(uint64_t raw, uint64_t vlen)
{
    uint64_t vlmul = raw & 7, vsew = (raw >> 3) & 7, sew;
    if (raw >> 8 || vlmul == 4 || vsew > 3)
        return 0;
    sew = 8ull << vsew;
    if (vlmul < 4)
        return (vlen << vlmul) / sew;
    /* fractional LMUL = 2^-(8 - vlmul): legal only when SEW <= ELEN * LMUL */
    if (sew > (64ull >> (8 - vlmul)))
        return 0;
    return (vlen >> (8 - vlmul)) / sew;
}

static int ek_rvv_exec(uc_engine *uc, ek_rvv *v)
{
    uint64_t pc = 0, raw, vlmax, avl = 0, vl = 0, vtype, x;
    uint32_t w = 0, rd, rs1, form;
    ek_counter *c;

    if (uc_reg_read(uc, (int)v->pc_reg, &pc) != UC_ERR_OK || pc < 4)
        return 0;
    pc -= 4;                           /* the hook sees the trapping PC + 4 */
    if (uc_mem_read(uc, pc, &w, 4) != UC_ERR_OK)
        return 0;
    if ((w & 0x707f) != 0x7057)        /* OP-V with funct3 OPCFG */
        return 0;
    rd = (w >> 7) & 31;
    rs1 = (w >> 15) & 31;
    if (!(w >> 31)) {
        form = 0;                      /* vsetvli: 11-bit vtype immediate */
        raw = (w >> 20) & 0x7ff;
    } else if ((w >> 30) == 3) {
        form = 1;                      /* vsetivli: 10-bit vtype, 5-bit AVL immediate */
        raw = (w >> 20) & 0x3ff;
    } else if (!((w >> 25) & 0x3f)) {
        form = 2;                      /* vsetvl: vtype from x[rs2] */
        raw = 0;
        if (((w >> 20) & 31) && uc_reg_read(uc, (int)(v->x0_reg + ((w >> 20) & 31)), &raw) != UC_ERR_OK)
            return 0;
    } else {
        return 0;                      /* reserved OPCFG encoding: Python raises the trap */
    }
    /* every source is read before rd is written (rd may be rs1 or rs2) */
    vlmax = ek_vlmax(raw, v->vlen);
    if (vlmax) {
        if (form == 1) {
            avl = rs1;
        } else if (rs1) {
            x = 0;
            if (uc_reg_read(uc, (int)(v->x0_reg + rs1), &x) != UC_ERR_OK)
                return 0;
            avl = x;
        } else if (rd) {
            avl = UINT64_MAX;
        } else {
            if (!v->known)
                return 0;              /* keep-vl needs the unit's state: Python has it */
            if (ek_vlmax(v->vtype, v->vlen) != vlmax)
                vlmax = 0;
            avl = v->vl;
        }
    }
    if (vlmax) {
        vl = avl < vlmax ? avl : vlmax;
        vtype = raw;
    } else {
        vtype = EK_VILL;
    }
    if (rd && uc_reg_write(uc, (int)(v->x0_reg + rd), &vl) != UC_ERR_OK)
        return 0;
    v->vl = vl;
    v->vtype = vtype;
    v->known = 1;
    v->vs = 3;                         /* a vector CSR was written: VS Dirty */
    v->n++;
    v->handled++;
    /* the counter has charged one cycle for it; the rest moves the deadline now, as the Python
     * path's commit_charges does, so a tick still lands on its exact cycle */
    c = v->counter;
    if (v->cost > 1 && c) {
        uint64_t more = v->cost - 1;
        c->deadline = c->deadline > more ? c->deadline - more : 0;
    }
    /* the PC is already past the instruction */
    return 1;
}

/* What Python must fold in, packed into the callback's user-data argument so that it needs no
 * ctypes access to this struct: bits 0-21 the instructions executed here (EK_RVV_MANY: more,
 * read `n` from the struct), 22-30 vtype (bit 30: vill, else its 8 low bits), 31-63 vl.
 * NULL when there is nothing to fold in. */
#define EK_RVV_MANY 0x3fffffull

static void *ek_rvv_pack(ek_rvv *v)
{
    uint64_t n = v->n, p;
    if (!n)
        return NULL;
    if (n < EK_RVV_MANY) {
        v->n = 0;
        p = n;
    } else {
        p = EK_RVV_MANY;            /* Python reads and clears `n` itself */
    }
    p |= (v->vtype == EK_VILL ? 0x100ull : (v->vtype & 0xff)) << 22;
    p |= v->vl << 31;
    return (void *)(uintptr_t)p;
}

/* An ecall's registers, read here for the Python callback (cpu_riscv's ecall entry, `py_ecall`):
 * the PC and the seven the syscall ABI uses, which Python would otherwise fetch with a ctypes
 * call of its own (a quarter of the raw in-hook round trip).  Unicorn numbers x0..x31
 * consecutively.  With `py_ecall` set, the ecall goes to that callback alone: the CPU's general
 * callback and its dispatch on the exception number are one Python frame it does not need. */
static void ek_rvv_ecall_regs(uc_engine *uc, ek_rvv *v)
{
    int i;
    uc_reg_read(uc, (int)v->pc_reg, &v->sys[0]);
    uc_reg_read(uc, (int)(v->x0_reg + 17), &v->sys[1]);
    for (i = 0; i < 6; i++)
        uc_reg_read(uc, (int)(v->x0_reg + 10 + i), &v->sys[2 + i]);
}

void ek_rvv_intr(uc_engine *uc, uint32_t intno, void *user_data)
{
    ek_rvv *v = (ek_rvv *)user_data;
    if (intno == 2 && v->on && v->vs && ek_rvv_exec(uc, v))
        return;
    v->known = 0;
    if (intno == v->ecall_no && intno) {
        ek_rvv_ecall_regs(uc, v);
        if (v->py_ecall) {
            ((ek_py_intr)v->py_ecall)(uc, intno, ek_rvv_pack(v));
            return;
        }
    }
    ((ek_py_intr)v->py)(uc, intno, ek_rvv_pack(v));
}

/* ---- the TLB fill ----------------------------------------------------------------------------- */
/* Unicorn's virtual TLB fill (UC_HOOK_TLB_FILL, every address) for a CPU whose user memory is
 * mapped at its own addresses (satp bare on RISC-V; arm64 has its own fill in a64_stub.c, which
 * follows the same rule): the identity mapping; permissions by the kind of access that missed.
 *
 * Why not simply every permission, as the physical TLB gives in bare mode: Unicorn 2.1.4 fills a
 * writable page "not dirty" (its dirty tracking always reports clean), so the first store goes
 * through notdirty_write, which marks the entry dirty -- and so lets later stores to that page
 * take the inline fast path -- only while the entry does not also allow instruction fetches and
 * no memory hook covers the page.  With every permission in every entry, *every* guest store
 * went through the helper, a memory-region lookup and notdirty_write: a 3-instruction store loop
 * measured 17-18 ns per iteration against 1.6-3.2 ns, and it was 17 % of the riscv64 bash
 * pipeline's time (perf).
 *
 * So a load or store that misses gets read+write (no fetch), and a fetch gets everything (the
 * code page's entry; loads from it hit, a store to it finds Unicorn's region write-protected by
 * emukern's code scan anyway).  The memory regions' own permissions are still checked on every
 * fill, as before: these bits only say which accesses the TLB entry may serve. */
bool ek_tlb_fill(uc_engine *uc, uint64_t address, uc_mem_type type, uc_tlb_entry *result,
                 void *user_data)
{
    (void)uc;
    (void)user_data;
    result->paddr = address;
    result->perms = type == UC_MEM_FETCH ? UC_PROT_ALL : (UC_PROT_READ | UC_PROT_WRITE);
    return true;
}

/* ---- the RISC-V hart's privileged state, for the context switch ------------------------------ */
/*
 * Unicorn's register API answers mstatus (and the other M/S-mode CSRs) only while the hart is in
 * M-mode, so each access from emukern is a window: PRIV = 3, the access, PRIV = 0.  From Python
 * each step is a ctypes call of its own (~0.3 us of interpreter work apiece), and every context
 * switch reads sstatus.FS, writes it and zeroes or loads the f registers.  These functions make
 * the *same* libunicorn calls, in the same order and with the same values, in one ctypes call
 * (cpu_riscv.RiscvCpu keeps the Python sequences as the fallback, and the tests compare both).
 * Nothing is skipped when a value would not change: Unicorn's FP dirty tracking after the return
 * to the guest depends on the mode and mstatus writes themselves (see cpu_riscv's fs setter), so
 * the writes are part of the recorded behaviour.
 *
 * Register ids come from the header the library is compiled against; Python checks them against
 * its own (ek_rv_ids) before it uses these functions.
 */
#define EK_RV_FS_SHIFT 13
#define EK_RV_NF 32

/* Unicorn's ids of PRIV, MSTATUS, FCSR and F0 (F0..F31 are consecutive), for Python's check. */
void ek_rv_ids(int32_t *out)
{
    out[0] = UC_RISCV_REG_PRIV;
    out[1] = UC_RISCV_REG_MSTATUS;
    out[2] = UC_RISCV_REG_FCSR;
    out[3] = UC_RISCV_REG_F0;
    out[4] = UC_RISCV_REG_F31;
}

static inline void ek_rv_priv(uc_engine *uc, uint64_t mode)
{
    uc_reg_write(uc, UC_RISCV_REG_PRIV, &mode);
}

/* A CSR read at M-mode, written first when `value` is not NULL; its value after. */
uint64_t ek_rv_csr(uc_engine *uc, int rid, const uint64_t *value)
{
    uint64_t v = 0;
    ek_rv_priv(uc, 3);
    if (value)
        uc_reg_write(uc, rid, value);
    uc_reg_read(uc, rid, &v);
    ek_rv_priv(uc, 0);
    return v;
}

/* sstatus.FS set to `fs` (0-3): mstatus read and written back in one M-mode window. */
void ek_rv_set_fs(uc_engine *uc, uint64_t fs)
{
    uint64_t st = 0;
    ek_rv_priv(uc, 3);
    uc_reg_read(uc, UC_RISCV_REG_MSTATUS, &st);
    st = (st & ~(3ull << EK_RV_FS_SHIFT)) | (fs & 3) << EK_RV_FS_SHIFT;
    uc_reg_write(uc, UC_RISCV_REG_MSTATUS, &st);
    ek_rv_priv(uc, 0);
}

/* f0..f31 from vals[0..31] in one batch write, then fcsr from vals[32] (NULL: all zero, the
 * reset of a fresh or exec'd FP context). */
void ek_rv_load_fp(uc_engine *uc, const uint64_t *vals)
{
    static const uint64_t zeros[EK_RV_NF + 1];
    int ids[EK_RV_NF];
    void *ptrs[EK_RV_NF];
    int i;
    if (!vals)
        vals = zeros;
    for (i = 0; i < EK_RV_NF; i++) {
        ids[i] = UC_RISCV_REG_F0 + i;
        ptrs[i] = (void *)&vals[i];
    }
    uc_reg_write_batch(uc, ids, ptrs, EK_RV_NF);
    uc_reg_write(uc, UC_RISCV_REG_FCSR, &vals[EK_RV_NF]);
}

/* f0..f31 into vals[0..31] in one batch read, then fcsr into vals[32]. */
void ek_rv_save_fp(uc_engine *uc, uint64_t *vals)
{
    int ids[EK_RV_NF];
    void *ptrs[EK_RV_NF];
    int i;
    for (i = 0; i < EK_RV_NF; i++) {
        ids[i] = UC_RISCV_REG_F0 + i;
        ptrs[i] = &vals[i];
    }
    uc_reg_read_batch(uc, ids, ptrs, EK_RV_NF);
    uc_reg_read(uc, UC_RISCV_REG_FCSR, &vals[EK_RV_NF]);
}
