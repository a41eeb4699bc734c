"""The fair class's running sums and heaps (emukern/kernel/sched_fair.py) against the linear
implementation they replaced, over thousands of random scheduler histories.

The reference below is the fair class as it was before its run queue kept its sums: every
question (V, eligibility, min_vruntime, the pick) walked the queue.  It is kept here, not in the
package, as the definition the faster class must agree with entry by entry.  Two worlds run
the same history -- forks, wake-ups (some onto another CPU, some of a task that is still current),
blocks, exits of the current and of queued tasks, ticks, yields, nice and policy changes,
migrations -- driven the way kernel/sched.py drives the class, and after every step the two
must show the same picks, the same queues and the same vruntime, deadline, lag and weight of
every entity, and the same min_vruntime.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from emukern.kernel.cred import BASE_SLICE_NS, SCHED_BATCH, SCHED_IDLE, SCHED_OTHER
from emukern.kernel.sched import PerCpu
from emukern.kernel.sched_fair import (SMALL_QUEUE, FairClass, FairRunQueue, NICE_0_LOAD,
                                       task_weight)
from emukern.kernel.task import TaskState

R, B, Z, D = TaskState.RUNNABLE, TaskState.BLOCKED, TaskState.ZOMBIE, TaskState.DEAD
Task = object       # (the reference's annotations)


# ==== the reference: the linear fair class, as it was ============================================
@dataclass(eq=False)
class LinearSchedEntity:
    """struct sched_entity, the fields EEVDF uses (virtual times in cycles)."""
    weight: int = NICE_0_LOAD
    vruntime: int = 0
    deadline: int = 0
    vlag: int = 0                 # lag kept across a sleep or a move between CPUs
    slice: int = 0
    exec_start: int = 0
    sum_exec_runtime: int = 0
    on_rq: int | None = None      # the CPU whose queue accounts it (None: asleep, or never queued)
    picked_deadline: int | None = None  # the deadline it was picked with (RUN_TO_PARITY's mark)
    sleep_vruntime: int | None = None   # its vruntime when it slept while ahead of V
    sleep_cpu: int = 0                  # ... on this CPU's queue (virtual times are per queue)


class LinearFair:
    """The fair class as it was before its run queue kept its sums (every question walked the
    queue): the reference the randomized test holds the new class to."""

    def __init__(self, k: object) -> None:
        self.k = k
        self.min_vruntime = [0] * len(k.percpu)
        freq = k.config.freq_hz
        # sysctl_sched_base_slice in cycles, and the tick (the lag limit's floor)
        self.base_slice = max(1, BASE_SLICE_NS * freq // 10**9)
        self.tick = k.clock.tick_cycles

    # ---- the entity ------------------------------------------------------------------------
    def se(self, task: Task) -> LinearSchedEntity:
        # the entity lives on the task itself (Linux's task_struct embeds its sched_entity): a
        # plain attribute read, where the weak mapping it used to be looked up in cost a Python
        # call per lookup, and a pick or an update looks up every queued entity
        try:
            return task._fair_se        # type: ignore[attr-defined, no-any-return]
        except AttributeError:
            se = task._fair_se = LinearSchedEntity(weight=task_weight(task), slice=self.base_slice)  # type: ignore[attr-defined]
            return se

    @staticmethod
    def _known(task: Task) -> bool:
        """Has this class given the task an entity yet (a task it has never queued is new)?"""
        return "_fair_se" in task.__dict__

    @staticmethod
    def _entity(task: Task) -> LinearSchedEntity | None:
        return task.__dict__.get("_fair_se")

    def calc_delta_fair(self, delta: int, se: LinearSchedEntity) -> int:
        """Real time -> the entity's virtual time: slower for a heavier (lower nice) task."""
        if se.weight == NICE_0_LOAD:
            return delta
        return delta * NICE_0_LOAD // se.weight

    def _members(self, pc: PerCpu) -> list[Task]:
        """The entities the CPU's cfs_rq holds: the queued runnable tasks and a running curr."""
        out = [t for t in pc.rq if t.state is TaskState.RUNNABLE]
        c = pc.curr
        if c is not None and c.state is TaskState.RUNNABLE and c not in out:
            out.append(c)
        return out

    def reweight(self, pc: PerCpu, task: Task, se: LinearSchedEntity) -> None:
        """reweight_entity: a nice (or policy) change scales the entity's lag and the rest of
        its deadline by old/new weight, so its place relative to V keeps its meaning."""
        w = task_weight(task)
        if w == se.weight:
            return
        if se.on_rq is not None:
            v = self.avg_vruntime(pc)
            se.vruntime = v - (v - se.vruntime) * se.weight // w
            se.deadline = v + (se.deadline - v) * se.weight // w
        else:
            se.vlag = se.vlag * se.weight // w
        se.weight = w

    def _sums(self, pc: PerCpu, extra: Task | None = None) -> tuple[int, int]:
        """(sum of the weights, sum of weight x vruntime) over the CPU's entities but ``extra``:
        Linux keeps these two sums in the cfs_rq (avg_load, avg_vruntime) for the same reason,
        so that V and every eligibility test cost no walk of their own.

        One pass over the queue without building the member list (:meth:`_members`, whose
        entities these are: a task queued twice counts twice there too); this runs several
        times per context switch."""
        load = total = 0
        runnable = TaskState.RUNNABLE
        rq = pc.rq
        for t in rq:
            if t.state is runnable and t is not extra:
                o = t.__dict__.get("_fair_se") or self.se(t)
                w = o.weight
                load += w
                total += w * o.vruntime
        c = pc.curr
        # a running curr counts once, unless the queue already holds it (then it counted above)
        if c is not None and c is not extra and c.state is runnable and c not in rq:
            o = c.__dict__.get("_fair_se") or self.se(c)
            load += o.weight
            total += o.weight * o.vruntime
        return load, total

    def avg_vruntime(self, pc: PerCpu, extra: Task | None = None) -> int:
        """V: the weight-averaged vruntime of the CPU's entities (min_vruntime when empty)."""
        load, total = self._sums(pc, extra)
        if not load:
            return self.min_vruntime[pc.index]
        return total // load

    def entity_eligible(self, pc: PerCpu, se: LinearSchedEntity, sums: tuple[int, int] | None = None) -> bool:
        """lag >= 0, tested as Linux does without a division: sum w_i (v_i - v) >= 0, that is
        sum w_i v_i - v sum w_i >= 0 (the same integers, so the same answer), from the queue's
        sums (``sums``: already computed by the caller for this queue as it stands)."""
        load, total = sums if sums is not None else self._sums(pc)
        return total - se.vruntime * load >= 0

    def update_min_vruntime(self, pc: PerCpu) -> None:
        # the smallest vruntime among _members(pc), found in one pass without the list (it
        # runs on every update_curr, several times per context switch)
        runnable = TaskState.RUNNABLE
        rq = pc.rq
        low: int | None = None
        for t in rq:
            if t.state is runnable:
                v = (t.__dict__.get("_fair_se") or self.se(t)).vruntime
                if low is None or v < low:
                    low = v
        c = pc.curr
        if c is not None and c.state is runnable and c not in rq:
            v = (c.__dict__.get("_fair_se") or self.se(c)).vruntime
            if low is None or v < low:
                low = v
        if low is not None and low > self.min_vruntime[pc.index]:
            self.min_vruntime[pc.index] = low

    # ---- running -----------------------------------------------------------------------------
    def update_curr(self, pc: PerCpu, now: int) -> bool:
        """Charge the running task's time since it was last charged to its vruntime; renew its
        deadline when it has passed it.  True when the deadline was renewed (update_deadline)."""
        curr = pc.curr
        if curr is None:
            return False
        se = self.se(curr)
        self.reweight(pc, curr, se)
        delta = now - se.exec_start
        if delta <= 0:
            return False
        se.exec_start = now
        se.sum_exec_runtime += delta
        se.vruntime += self.calc_delta_fair(delta, se)
        renewed = self.update_deadline(se)
        self.update_min_vruntime(pc)
        return renewed

    def update_deadline(self, se: LinearSchedEntity) -> bool:
        if se.vruntime < se.deadline:
            return False
        se.slice = self.base_slice
        se.deadline = se.vruntime + self.calc_delta_fair(se.slice, se)
        return True

    def task_tick_fair(self, pc: PerCpu, now: int) -> bool:
        """The tick: True when the current task should be rescheduled (its slice is used up
        and someone else is queued).  There is no other tick preemption under EEVDF."""
        renewed = self.update_curr(pc, now)
        return renewed and any(t.state is TaskState.RUNNABLE for t in pc.rq)

    def pick_eevdf(self, pc: PerCpu, curr: Task | None) -> Task | None:
        """The eligible entity with the earliest virtual deadline; ``curr`` (the running task,
        still runnable) competes too and keeps the CPU while its picked slice lasts."""
        queued = [t for t in pc.rq if t.state is TaskState.RUNNABLE]
        if curr is not None and curr.state is not TaskState.RUNNABLE:
            curr = None
        if not queued:
            return curr
        if curr is None and len(queued) == 1:
            return queued[0]
        # one walk for the queue's sums, then each test is O(1): the pick is linear in the
        # queue (it was quadratic, every candidate's eligibility a walk of its own)
        sums = self._sums(pc)
        if curr is not None:
            cse = self.se(curr)
            if not self.entity_eligible(pc, cse, sums):
                curr = None
            elif cse.picked_deadline == cse.deadline:
                return curr                 # RUN_TO_PARITY: its slice is not used up yet
        best: Task | None = None
        best_d = 0
        load, total = sums
        for t in queued:
            se = self.se(t)
            if (best is None or se.deadline < best_d) and total - se.vruntime * load >= 0:
                best, best_d = t, se.deadline
        if best is None or (curr is not None and self.se(curr).deadline < best_d):
            best = curr
        if best is None:                    # (cannot happen: someone is always eligible)
            best = queued[0]
        return best

    def set_next_entity(self, task: Task, now: int) -> None:
        se = self.se(task)
        se.exec_start = now
        se.picked_deadline = se.deadline

    # ---- queueing ----------------------------------------------------------------------------
    def place_entity(self, pc: PerCpu, task: Task, se: LinearSchedEntity, initial: bool) -> None:
        """Put a waking (or new, or moved) entity at V minus the lag it kept, its lag inflated by
        the weight it adds so that V does not move away from it as it joins."""
        self.reweight(pc, task, se)
        members = [t for t in self._members(pc) if t is not task]
        vslice = self.calc_delta_fair(se.slice or self.base_slice, se)
        lag = 0
        if members and se.vlag:
            load = sum(self.se(t).weight for t in members)
            lag = se.vlag * (load + se.weight) // load
        se.vruntime = self.avg_vruntime(pc, extra=task) - lag
        if initial:
            vslice //= 2                    # PLACE_DEADLINE_INITIAL: a new task starts soon
        se.deadline = se.vruntime + vslice
        se.picked_deadline = None

    def enqueue(self, pc: PerCpu, task: Task, now: int) -> None:
        """enqueue_task_fair for a task joining ``pc``'s queue: a wake-up, a new task (one this
        class has not seen: ENQUEUE_INITIAL), or a runnable task moved from another CPU (its lag
        measured on the queue it left)."""
        initial = not self._known(task)
        se = self.se(task)
        if se.on_rq == pc.index:
            return                          # a preempted task going back: already accounted
        if pc.curr is not None and pc.curr is not task:
            self.update_curr(pc, now)
        if se.on_rq is not None:            # moved while runnable: keep its lag, not its vruntime
            old = self.k.percpu[se.on_rq]
            se.vlag = self._lag(old, se, task)
        elif se.sleep_vruntime is not None and se.sleep_cpu == pc.index:
            # it slept while ahead of V: the debt stays (at most), a credit is not earned back
            se.vlag = min(0, self._clamp(se, self.avg_vruntime(pc, extra=task) - se.sleep_vruntime))
        se.sleep_vruntime = None
        self.place_entity(pc, task, se, initial)
        se.on_rq = pc.index
        self.update_min_vruntime(pc)

    def _clamp(self, se: LinearSchedEntity, lag: int) -> int:
        limit = self.calc_delta_fair(max(2 * (se.slice or self.base_slice), self.tick), se)
        return max(-limit, min(limit, lag))

    def _lag(self, pc: PerCpu, se: LinearSchedEntity, task: Task) -> int:
        return self._clamp(se, self.avg_vruntime(pc) - se.vruntime)

    def dequeue_sleep(self, pc: PerCpu, task: Task, now: int) -> None:
        """dequeue_entity for a task that blocks or exits: keep its lag for its wake-up."""
        se = self._entity(task)
        if se is None or se.on_rq is None:
            return
        if pc.curr is task:
            self.update_curr(pc, now)
        lag = self._lag(self.k.percpu[se.on_rq], se, task)
        if lag < 0:
            se.vlag, se.sleep_vruntime, se.sleep_cpu = lag, se.vruntime, se.on_rq
        else:
            se.vlag, se.sleep_vruntime = lag, None
        se.on_rq = None

    # ---- sched_yield and wake-up preemption --------------------------------------------------
    def yield_task_fair(self, pc: PerCpu, now: int) -> bool:
        """sched_yield: push the yielder's deadline one slice on (it keeps its vruntime and so
        its place in virtual time).  False when it is alone (nothing to yield to)."""
        curr = pc.curr
        if curr is None or not any(t.state is TaskState.RUNNABLE for t in pc.rq):
            return False
        self.update_curr(pc, now)
        se = self.se(curr)
        se.deadline += self.calc_delta_fair(se.slice or self.base_slice, se)
        return True

    def check_preempt_wakeup_fair(self, pc: PerCpu, woken: Task, now: int) -> bool:
        """Should the task just queued on ``pc`` take the CPU from its current task?  Only when
        it is what pick_eevdf would choose now (so never while curr's picked slice lasts)."""
        curr = pc.curr
        if curr is None or curr is woken or curr.state is not TaskState.RUNNABLE:
            return False
        if curr.sched_policy == SCHED_IDLE and woken.sched_policy != SCHED_IDLE:
            return True                     # an idle-policy task yields to any normal one
        if woken.sched_policy in (SCHED_BATCH, SCHED_IDLE):
            return False                    # batch and idle tasks never preempt on wake-up
        self.update_curr(pc, now)
        return self.pick_eevdf(pc, curr) is woken


# ==== two worlds driven like kernel/sched.py drives the class ====================================
class FakeTask:
    """What the fair class reads of a task."""

    def __init__(self, tid: int) -> None:
        self.tid = tid
        self.state = R
        self.nice = 0
        self.sched_policy = SCHED_OTHER
        self.cpu = 0


class World:
    def __init__(self, cls: type, cpus: int, freq: int, hz: int) -> None:
        self.k = SimpleNamespace(percpu=[PerCpu(i) for i in range(cpus)],
                                 config=SimpleNamespace(freq_hz=freq),
                                 clock=SimpleNamespace(tick_cycles=max(1, freq // hz)))
        self.fair = cls(self.k)
        if isinstance(self.fair, FairClass):
            self.fair.check = False         # held to the reference, not to its own walk
        self.tasks: list[FakeTask] = []
        self.picks: list[int | None] = []

    def pc(self, i: int) -> PerCpu:
        return self.k.percpu[i]

    # sched.py's enqueue, wake_up, _pick_next (fair branch) and schedule, without the context
    # switch itself
    def enqueue(self, t: FakeTask, ci: int, now: int) -> None:
        t.cpu = ci
        t.state = R
        pc = self.pc(ci)
        self.fair.enqueue(pc, t, now)
        pc.rq.append(t)

    def wake_up(self, t: FakeTask, ci: int, now: int) -> None:
        if t.state is not B:
            return
        pc = self.pc(ci)
        if isinstance(self.fair, FairClass):
            # sched.py's wake_up: the queueing and the preemption question in one call
            t.cpu = ci
            t.state = R
            if self.fair.enqueue_wakeup(pc, t, now, now, not pc.need_resched):
                pc.need_resched = True
            return
        self.enqueue(t, ci, now)
        if not pc.need_resched and self.fair.check_preempt_wakeup_fair(pc, t, now):
            pc.need_resched = True

    def pick_next(self, ci: int, curr: FakeTask | None, now: int) -> FakeTask | None:
        pc = self.pc(ci)
        while curr is not None and curr in pc.rq:
            pc.rq.remove(curr)
        if curr is not None:
            self.fair.update_curr(pc, now)
        best = self.fair.pick_eevdf(pc, curr)
        for t in [t for t in pc.rq if t.state is not R]:
            pc.rq.remove(t)
        if best is not None and best is not curr:
            pc.rq.remove(best)
        return best

    def schedule(self, ci: int, now: int) -> None:
        pc = self.pc(ci)
        pc.need_resched = False
        prev = pc.curr
        preempted = prev is not None and prev.state is R
        if prev is not None and not preempted:
            self.fair.dequeue_sleep(pc, prev, now)
        nxt = self.pick_next(ci, prev if preempted else None, now)
        self.picks.append(None if nxt is None else nxt.tid)
        if nxt is None and preempted:
            nxt = prev
        if nxt is None:
            pc.curr = None
            return
        self.fair.set_next_entity(nxt, now)
        if nxt is prev:
            return
        if prev is not None and preempted:
            pc.rq.append(prev)
        pc.curr = nxt
        nxt.cpu = ci

    def remove_from_queues(self, t: FakeTask) -> None:
        for pc in self.k.percpu:
            if t in pc.rq:
                pc.rq.remove(t)

    def snapshot(self) -> tuple:
        ents = []
        for t in self.tasks:
            se = t.__dict__.get("_fair_se")
            ents.append(None if se is None else (se.weight, se.vruntime, se.deadline, se.vlag, se.slice,
                                                 se.on_rq, se.picked_deadline, se.sleep_vruntime))
        qs = [(None if p.curr is None else p.curr.tid, [t.tid for t in p.rq]) for p in self.k.percpu]
        return tuple(ents), tuple(qs), tuple(self.fair.min_vruntime), tuple(self.picks)


def step(worlds: list[World], rng: random.Random, now: int, max_tasks: int) -> str:
    """One random event, applied identically to every world; returns its name."""
    a = worlds[0]
    ncpu = len(a.k.percpu)
    ci = rng.randrange(ncpu)
    pcs = [w.pc(ci) for w in worlds]
    curr_i = None if pcs[0].curr is None else a.tasks.index(pcs[0].curr)
    alive = [i for i, t in enumerate(a.tasks) if t.state in (R, B)]
    blocked = [i for i, t in enumerate(a.tasks) if t.state is B]
    queued = [i for i, t in enumerate(a.tasks) if t.state is R and any(t in p.rq for p in a.k.percpu)
              and all(p.curr is not t for p in a.k.percpu)]
    ops = ["tick", "tick", "schedule", "yield", "wake", "wake", "block", "fork", "renice"]
    if len(alive) < max_tasks:
        ops += ["fork"] * 2
    ops += ["selfwake", "selfwake_block", "exit", "kill", "migrate", "block_wake"]
    op = rng.choice(ops)

    def each(fn) -> None:
        for w in worlds:
            fn(w)

    if op == "fork" and len(alive) < max_tasks:
        tgt = rng.randrange(ncpu)
        nice = rng.choice([0, 0, 0, -5, 3, 19])
        for w in worlds:
            t = FakeTask(len(w.tasks) + 1)
            t.nice = nice
            w.tasks.append(t)
            w.enqueue(t, tgt, now)
            p = w.pc(tgt)
            if p.curr is not None and not p.need_resched and w.fair.check_preempt_wakeup_fair(p, t, now):
                p.need_resched = True
    elif op == "wake" and blocked:
        i, tgt = rng.choice(blocked), rng.randrange(ncpu)
        each(lambda w: w.wake_up(w.tasks[i], tgt, now))
    elif op == "schedule" or (op in ("tick", "yield") and curr_i is None):
        each(lambda w: w.schedule(ci, now))
    elif op == "tick":
        for w in worlds:
            if w.fair.task_tick_fair(w.pc(ci), now):
                w.pc(ci).need_resched = True
    elif op == "yield":
        for w in worlds:
            if w.fair.yield_task_fair(w.pc(ci), now):
                w.pc(ci).need_resched = True
    elif op in ("block", "block_wake") and curr_i is not None:
        other = rng.choice(blocked) if blocked and op == "block_wake" else None
        tgt = rng.randrange(ncpu)
        for w in worlds:
            w.tasks[curr_i].state = B
            if other is not None:           # a wake-up inside the call that blocks
                w.wake_up(w.tasks[other], tgt, now)
            w.schedule(ci, now)
    elif op in ("selfwake", "selfwake_block") and curr_i is not None:
        # blocked, then woken before it was switched out: queued while still current (on its own
        # CPU or another); "selfwake_block" blocks it again before schedule() runs
        tgt = rng.choice([ci, ci, rng.randrange(ncpu)])
        for w in worlds:
            t = w.tasks[curr_i]
            t.state = B
            w.wake_up(t, tgt, now)
            if op == "selfwake_block":
                t.state = B
                p = w.pc(ci)
                w.fair.update_min_vruntime(p)       # questions asked in that window
                w.picks.append(w.fair.avg_vruntime(p))
        each(lambda w: w.schedule(ci, now))
    elif op == "exit" and curr_i is not None:
        other = rng.choice(blocked) if blocked else None
        tgt = rng.randrange(ncpu)
        for w in worlds:                    # do_exit: the state first, the parent's wake-up, then off the queues
            t = w.tasks[curr_i]
            t.state = Z
            if other is not None:
                w.wake_up(w.tasks[other], tgt, now)
            w.remove_from_queues(t)
            w.schedule(ci, now)
            t.state = D
    elif op == "kill" and queued:
        i = rng.choice(queued)
        other = rng.choice(blocked) if blocked else None
        tgt = rng.randrange(ncpu)
        for w in worlds:                    # exec's de_thread: off the queues first, then do_exit
            w.remove_from_queues(w.tasks[i])
            w.tasks[i].state = D
            if other is not None:
                w.wake_up(w.tasks[other], tgt, now)
    elif op == "migrate" and queued and ncpu > 1:
        i = rng.choice(queued)
        tgt = rng.randrange(ncpu)
        for w in worlds:                    # _pick_next's affinity move: off one queue, onto another
            t = w.tasks[i]
            w.remove_from_queues(t)
            w.enqueue(t, tgt, now)
    elif op == "renice" and alive:
        i = rng.choice(alive)
        nice = rng.choice([-20, -3, 0, 0, 5, 19])
        pol = rng.choice([SCHED_OTHER] * 4 + [SCHED_BATCH, SCHED_IDLE])
        for w in worlds:
            w.tasks[i].nice, w.tasks[i].sched_policy = nice, pol
    else:
        op = "none"
    for w in worlds:                        # a pending resched is honoured at the next chance
        p = w.pc(ci)
        if p.need_resched:
            w.schedule(ci, now)
    return op


def run_history(seed: int, steps: int, max_tasks: int) -> dict[str, int]:
    rng = random.Random(seed)
    cpus = rng.choice([1, 1, 2, 3])
    freq = rng.choice([1_000_000_000, 100_000_000, 7_000_000])
    hz = rng.choice([250, 1000])
    worlds = [World(LinearFair, cpus, freq, hz), World(FairClass, cpus, freq, hz)]
    assert isinstance(worlds[1].pc(0).rq, FairRunQueue)
    now = 0
    seen: dict[str, int] = {}
    for n in range(steps):
        now += rng.choice([0, 1, 7, 1000, 50_000, 800_000, rng.randrange(3_000_000)])
        op = step(worlds, rng, now, max_tasks)
        seen[op] = seen.get(op, 0) + 1
        a, b = worlds[0].snapshot(), worlds[1].snapshot()
        assert a == b, f"seed {seed}: the worlds part at step {n} ({op})"
    return seen


def test_random_histories_agree_with_the_linear_class():
    """3,000 short histories (few tasks: the walk of a short queue, and every odd path)."""
    seen: dict[str, int] = {}
    for seed in range(3000):
        for op, n in run_history(seed, 40, max_tasks=6).items():
            seen[op] = seen.get(op, 0) + n
    # every kind of event happened many times
    for op in ("tick", "schedule", "yield", "wake", "block", "block_wake", "fork", "renice",
               "selfwake", "selfwake_block", "exit", "kill", "migrate"):
        assert seen.get(op, 0) > 500, (op, seen)


def test_long_queues_agree_with_the_linear_class():
    """Longer histories with queues past SMALL_QUEUE, where the pick walks the deadline heap."""
    for seed in range(60):
        run_history(10_000 + seed, 400, max_tasks=40)


def test_the_heap_pick_runs_on_long_queues():
    w = World(FairClass, 1, 1_000_000_000, 250)
    for i in range(3 * SMALL_QUEUE):
        t = FakeTask(i + 1)
        w.tasks.append(t)
        w.enqueue(t, 0, i * 1000)
    w.schedule(0, 100_000)
    rq = w.pc(0).rq
    assert len(rq) > SMALL_QUEUE
    assert w.picks == [1]          # the earliest deadline (all placed at V with half a slice: ties -> first)
    load = sum(task_weight(t) for t in rq) + NICE_0_LOAD
    assert w.fair._sums(w.pc(0)) == (load, rq.total + w.fair.se(w.pc(0).curr).vruntime * NICE_0_LOAD)


def test_the_queue_refuses_changes_it_would_not_track():
    w = World(FairClass, 1, 1_000_000_000, 250)
    with pytest.raises(NotImplementedError):
        w.pc(0).rq.appendleft(FakeTask(1))
    with pytest.raises(NotImplementedError):
        w.pc(0).rq.clear()


def test_the_check_mode_holds_a_real_run_to_the_walk(monkeypatch):
    """EMUKERN_FAIR_CHECK=1: every answer of a real fork-and-pipe run is checked against the walk."""
    monkeypatch.setenv("EMUKERN_FAIR_CHECK", "1")
    from emukern.api import Machine
    from emukern.bench.switch import guest
    for arch, mode in (("riscv64", "t"), ("arm64", "p"), ("riscv64", "f")):
        m = Machine(arch=arch, cpus=2)
        m.load(guest(arch), [mode, "200"])
        assert m.run().exit_status == 0


def test_a_pipe_ping_pong_wakes_through_the_one_call_path(monkeypatch):
    """The wake-up of each pipe write takes enqueue_wakeup's written-out path, not the three
    calls it falls back to (the random histories above hold both to the linear class)."""
    from emukern.api import Machine
    from emukern.bench.switch import guest
    slow = []
    real = FairClass.enqueue
    monkeypatch.setattr(FairClass, "enqueue", lambda self, pc, t, now: (slow.append(t.tid), real(self, pc, t, now))[1])
    for arch in ("riscv64", "arm64"):
        slow.clear()
        m = Machine(arch=arch)
        m.load(guest(arch), ["t", "100"])
        assert m.run().exit_status == 0
        switches = sum(p.nr_switches for p in m.kernel.percpu)
        assert switches >= 200
        assert len(slow) <= 4, (arch, len(slow), switches)   # new tasks (init, the thread) only
