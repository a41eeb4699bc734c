"""The fair class: a model of EEVDF as Linux 6.12 runs it (kernel/sched/fair.c).

Why it exists: with a plain round-robin queue, a task that calls sched_yield after every short
iteration (fp-stress's fpsimd-test) goes to the back of the queue and waits for every sibling's
whole tick, so it gets a fraction of a percent of what they get; Linux's fair class gives it
about half.  EEVDF decides by *virtual* time instead of queue order:

- every runnable entity has a ``vruntime`` that grows with the CPU time it uses, scaled by its
  weight (``sched_prio_to_weight`` of its nice value: a heavier task's clock runs slower);
- the queue's weighted average vruntime ``V`` (avg_vruntime) is where a task "should" be; an
  entity is *eligible* when it is not ahead of it (``entity_eligible``: lag = V - vruntime >= 0);
- each entity has a virtual deadline, vruntime + one base slice (0.75 ms) scaled by its weight
  (``update_deadline``, renewed when the entity uses its slice up);
- ``pick_eevdf`` runs the eligible entity with the earliest deadline, but leaves the current
  one alone until it has used the slice it was picked for (RUN_TO_PARITY);
- ``yield_task_fair`` only pushes the yielder's deadline one slice further: it still holds its
  place in virtual time, so it runs again as soon as its deadline is the earliest again;
- a waking task is placed at V minus the lag it kept when it went to sleep (``place_entity``;
  a new task starts with half a slice of deadline), and may preempt the current task when it
  is what pick_eevdf would choose (``check_preempt_wakeup_fair``).

Time is the machine's clock in cycles (Linux's nanoseconds scaled by the CPU frequency).  The
run queue itself stays :class:`~emukern.kernel.sched.PerCpu`'s ``rq`` (the queued tasks, in the
order they were queued: the order Linux's tree breaks deadline ties in), which this class makes
a :class:`FairRunQueue`: it keeps, as the scheduler queues and dequeues, the sums behind V and
the order behind the pick, so that no question walks the queue.  This module keeps each task's
``sched_entity`` and each CPU's ``min_vruntime`` beside it.

Left out (said here rather than pretended): cgroup group scheduling, PELT load tracking and
load balancing (the SMP placement stays the scheduler's select_cpu), custom slices
(sched_attr.sched_runtime), and DELAY_DEQUEUE, whose effect -- a sleeper that was ahead of V
keeps that negative lag, one that was behind loses its credit (DELAY_ZERO) -- is applied when
the task wakes rather than by keeping it queued.
"""
from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from heapq import heapify, heappop, heappush
from itertools import count
from typing import TYPE_CHECKING

from emukern.kernel.cred import BASE_SLICE_NS, SCHED_BATCH, SCHED_IDLE
from emukern.kernel.task import Task, TaskState

if TYPE_CHECKING:
    from emukern.kernel.sched import PerCpu
    from emukern.kernel.types import Kernel


NICE_0_LOAD = 1024
WEIGHT_IDLEPRIO = 3          # a SCHED_IDLE task's weight, whatever its nice value
# The weight of each nice value -20..19: each step is about 1.25x, so one nice level moves about
# 10 % of the CPU between two competing tasks (Linux's sched_prio_to_weight).
sched_prio_to_weight = (
    88761, 71755, 56483, 46273, 36291,
    29154, 23254, 18705, 14949, 11916,
    9548, 7620, 6100, 4904, 3906,
    3121, 2501, 1991, 1586, 1277,
    1024, 820, 655, 526, 423,
    335, 272, 215, 172, 137,
    110, 87, 70, 56, 45,
    36, 29, 23, 18, 15,
)


def task_weight(task: Task) -> int:
    if task.sched_policy == SCHED_IDLE:
        return WEIGHT_IDLEPRIO
    return sched_prio_to_weight[max(-20, min(19, task.nice)) + 20]


# a queue this long or shorter is walked rather than kept in heaps: at two or three tasks (a pipe's
# ping-pong) the walk costs less than the heap's pops and pushes; the answer is the same
SMALL_QUEUE = 8


@dataclass(eq=False)
class SchedEntity:
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
    # where the task sits in run queues right now: CPU -> the queue positions (ascending) of its
    # entries there.  Nearly always one CPU and one entry; the scheduler can queue a task that is
    # still current a second time (woken before it was switched out), and each entry counts.
    queued: dict[int, list[int]] = field(default_factory=dict)
    weighed: tuple[int, int] | None = None   # the (nice, policy) its weight was last worked out for


class FairRunQueue(deque):
    """A CPU's run queue (``PerCpu.rq``) that keeps, as tasks join and leave it, what Linux's
    cfs_rq keeps so that nothing the fair class asks of it walks the queue:

    - ``load``/``total``: the sum of the queued entities' weights and of weight x vruntime
      (Linux's avg_load and avg_vruntime, kept by avg_vruntime_add/sub; Linux keys the second
      on min_vruntime to keep it small, Python's integers need no such care);
    - ``by_deadline``/``by_vruntime``: heaps of (deadline, position, serial, task) and
      (vruntime, position, serial, task) for the pick and for min_vruntime, in the role of
      Linux's rbtree and its augmented min_vruntime (``serial`` only keeps two entries of equal
      times and position from comparing their tasks).  They are kept only while the queue is
      longer than SMALL_QUEUE.  Entries go stale instead of being deleted (a task left, or its
      times moved: :meth:`FairClass._requeue` pushes fresh ones); a stale entry is dropped when
      it reaches the top, and the heaps are rebuilt when stale entries outnumber live ones.

    ``position`` counts appends: the scheduler only ever appends at the tail, so it is the
    entry's place in the queue, the order in which the linear pick broke deadline ties.  The
    scheduler uses the queue as a plain deque (append, remove, popleft, iteration, ``in``); the
    other ways of changing a deque are refused rather than left untracked."""

    def __init__(self, fair: "FairClass", cpu: int) -> None:
        super().__init__()
        self.fair = fair
        self.cpu = cpu
        self.load = 0
        self.total = 0
        self.position = 0
        self.by_deadline: list[tuple[int, int, int, Task]] = []
        self.by_vruntime: list[tuple[int, int, int, Task]] = []
        self.serial = count()
        # the heaps are kept only while the queue is longer than SMALL_QUEUE (built when it
        # grows past it, dropped when it has shrunk to half): a short queue is walked instead
        self.heaped = False
        # tasks whose entries here may outlive their being runnable (see FairClass._stale): one
        # queued while it was current somewhere, one queued twice (an exit takes one entry off
        # each queue), one that left its CPU blocked or dead while queued
        self.suspects: list[Task] = []

    def append(self, task: Task) -> None:
        deque.append(self, task)
        se = task.__dict__.get("_fair_se") or self.fair.se(task)
        self.position = pos = self.position + 1
        percpu = self.fair.k.percpu
        if se.queued:
            # queued twice, here or on two CPUs: every queue it is in suspects it now
            for index in se.queued:
                other = percpu[index].rq
                if task not in other.suspects:
                    other.suspects.append(task)
            if task not in self.suspects:
                self.suspects.append(task)
        else:
            for p in percpu:
                if p.curr is task:          # queued while it runs
                    self.suspects.append(task)
                    break
        mine = se.queued.get(self.cpu)
        if mine is None:
            se.queued[self.cpu] = [pos]
        else:
            mine.append(pos)
        w = se.weight
        self.load += w
        self.total += w * se.vruntime
        if self.heaped:
            n = next(self.serial)
            heappush(self.by_vruntime, (se.vruntime, pos, n, task))
            heappush(self.by_deadline, (se.deadline, pos, n, task))
            if len(self.by_deadline) > 4 * len(self) + 64:
                self.rebuild()
        elif len(self) > SMALL_QUEUE:
            self.rebuild()

    def _left(self, task: Task) -> None:
        # the deque dropped the task's leftmost entry here, which is its lowest position
        se: SchedEntity = task._fair_se     # type: ignore[attr-defined]
        mine = se.queued[self.cpu]
        del mine[0]
        if not mine:
            del se.queued[self.cpu]
        self.load -= se.weight
        self.total -= se.weight * se.vruntime
        if self.heaped and len(self) <= SMALL_QUEUE // 2:
            self.heaped = False
            self.by_vruntime, self.by_deadline = [], []

    def remove(self, task: Task) -> None:
        deque.remove(self, task)
        # _left, inline (a change there is made here too): every switch removes its pick
        se: SchedEntity = task._fair_se     # type: ignore[attr-defined]
        index = self.cpu
        mine = se.queued[index]
        del mine[0]
        if not mine:
            del se.queued[index]
        self.load -= se.weight
        self.total -= se.weight * se.vruntime
        if self.heaped and len(self) <= SMALL_QUEUE // 2:
            self.heaped = False
            self.by_vruntime, self.by_deadline = [], []

    def popleft(self) -> Task:
        task: Task = deque.popleft(self)
        self._left(task)
        return task

    def _untracked(self, *a: object, **kw: object) -> None:
        raise NotImplementedError("the fair class's run queue is changed by append/remove/popleft only")

    appendleft = extend = extendleft = insert = pop = rotate = clear = reverse = _untracked
    __setitem__ = __delitem__ = __iadd__ = _untracked  # type: ignore[assignment]

    def live(self, pos: int, se: SchedEntity) -> bool:
        """Is the entry at ``pos`` of this entity still in the queue?  (Entries leave from each
        task's lowest position up, so the live ones are those at or past the lowest left.)"""
        mine = se.queued.get(self.cpu)
        return mine is not None and pos >= mine[0]

    def rebuild(self) -> None:
        """Both heaps from the queue as it stands, without their stale entries."""
        seen: dict[int, int] = {}
        bv, bd = [], []
        for t in self:
            se: SchedEntity = t._fair_se
            i = seen.get(id(t), 0)
            seen[id(t)] = i + 1
            pos = se.queued[self.cpu][i]
            n = next(self.serial)
            bv.append((se.vruntime, pos, n, t))
            bd.append((se.deadline, pos, n, t))
        heapify(bv)
        heapify(bd)
        self.by_vruntime, self.by_deadline = bv, bd
        self.heaped = True

    def min_vruntime(self) -> int | None:
        """The smallest vruntime among the entries (None when empty)."""
        if not self.heaped:
            return min([t._fair_se.vruntime for t in self]) if self else None
        h = self.by_vruntime
        while h:
            v, pos, _, t = h[0]
            se: SchedEntity = t._fair_se    # type: ignore[attr-defined]
            if se.vruntime == v and self.live(pos, se):
                return v
            heappop(h)
        return None


class FairClass:
    """The fair class's state and operations; owned by the scheduler (``k.sched.fair``).

    It replaces each CPU's ``rq`` with a :class:`FairRunQueue` so that the queue's sums and
    order are kept as the scheduler queues and dequeues, and no operation walks the queue.  The
    cfs_rq's members are the queue's runnable entries plus a runnable current task that is not
    queued.  The scheduler changes a task's state without telling this class, but only a
    current task's, and an exit takes the task off the queues before it changes its state: a
    queued task is runnable but in the rare cases :meth:`_stale` finds.  So the queue's sums
    are the members' sums but for the current task, whose part is added or taken off on each
    question; in those rare cases the questions take the walk (:meth:`_sums_walk` and its
    siblings), which is how every question was answered before.

    ``EMUKERN_FAIR_CHECK=1`` in the environment makes every answer checked against the walk
    (the tests' way of holding the two to the same schedule)."""

    def __init__(self, k: "Kernel") -> None:
        self.k = k
        self.min_vruntime = [0] * len(k.percpu)
        freq = k.config.freq_hz
        # sysctl_sched_base_slice in cycles, and the tick (the lag limit's floor)
        self.base_slice = max(1, BASE_SLICE_NS * freq // 10**9)
        self.tick = k.clock.tick_cycles
        self.check = os.environ.get("EMUKERN_FAIR_CHECK", "") not in ("", "0")
        for pc in k.percpu:
            if pc.rq:
                raise RuntimeError("the fair class takes over run queues before anything is queued")
            pc.rq = FairRunQueue(self, pc.index)

    # ---- the entity ------------------------------------------------------------------------
    def se(self, task: Task) -> SchedEntity:
        # the entity lives on the task itself (Linux's task_struct embeds its sched_entity): a
        # plain attribute read, where the weak mapping it used to be looked up in cost a Python
        # call per lookup
        try:
            return task._fair_se        # type: ignore[attr-defined, no-any-return]
        except AttributeError:
            se = task._fair_se = SchedEntity(weight=task_weight(task), slice=self.base_slice)  # type: ignore[attr-defined]
            return se

    @staticmethod
    def _known(task: Task) -> bool:
        """Has this class given the task an entity yet (a task it has never queued is new)?"""
        return "_fair_se" in task.__dict__

    @staticmethod
    def _entity(task: Task) -> SchedEntity | None:
        return task.__dict__.get("_fair_se")

    def calc_delta_fair(self, delta: int, se: SchedEntity) -> int:
        """Real time -> the entity's virtual time: slower for a heavier (lower nice) task."""
        if se.weight == NICE_0_LOAD:
            return delta
        return delta * NICE_0_LOAD // se.weight

    def _requeue(self, se: SchedEntity, task: Task, w0: int, v0: int, d0: int) -> None:
        """The entity's weight, vruntime or deadline moved from (w0, v0, d0) while it sits in a
        run queue: correct those queues' sums, and give their heaps entries at the new times
        (the old ones are stale now)."""
        percpu = self.k.percpu
        w, v, d = se.weight, se.vruntime, se.deadline
        for index, mine in se.queued.items():
            rq: FairRunQueue = percpu[index].rq
            n = len(mine)
            rq.load += n * (w - w0)
            rq.total += n * (w * v - w0 * v0)
            if not rq.heaped:
                continue
            for pos in mine:
                if v != v0:
                    heappush(rq.by_vruntime, (v, pos, next(rq.serial), task))
                if d != d0:
                    heappush(rq.by_deadline, (d, pos, next(rq.serial), task))

    def _stale(self, pc: "PerCpu") -> bool:
        """Does ``pc``'s queue hold an entry of a task that is no longer runnable?  Only then are
        some of the queue's entries not members, and the questions take the walk, which is how
        every question was answered before.

        The scheduler changes only a current task's state, and an exit takes one entry of the
        task off each queue before it changes the state.  So an entry can outlive its task's
        being runnable only when the task was queued while it was current (woken before it was
        switched out, or a preempted task queued just before its switch-out) and then blocked
        or exited, or when it was queued twice (here, or here and on another CPU: picked there,
        it runs while queued here).  The queue notes such tasks as ``suspects``
        when they are queued; a suspect is forgotten once it has no entry here, or is runnable,
        current nowhere, and queued once in all (then its entry leaves before it can block)."""
        suspects = pc.rq.suspects          # type: ignore[attr-defined]
        if not suspects:
            return False
        index = pc.index
        percpu = self.k.percpu
        stale = False
        for t in list(suspects):
            se: SchedEntity = t._fair_se
            mine = se.queued.get(index)
            if mine is None:
                suspects.remove(t)
            elif t.state is not TaskState.RUNNABLE:
                stale = True
            elif len(mine) == 1 and len(se.queued) == 1 and all(p.curr is not t for p in percpu):
                suspects.remove(t)
        return stale

    def _members(self, pc: "PerCpu") -> list[Task]:
        """The entities the CPU's cfs_rq holds: the queued runnable tasks and a running curr."""
        out = [t for t in pc.rq if t.state is TaskState.RUNNABLE]
        c = pc.curr
        if c is not None and c.state is TaskState.RUNNABLE and c not in out:
            out.append(c)
        return out

    def reweight(self, pc: "PerCpu", task: Task, se: SchedEntity) -> None:
        """reweight_entity: a nice (or policy) change scales the entity's lag and the rest of
        its deadline by old/new weight, so its place relative to V keeps its meaning."""
        key = (task.nice, task.sched_policy)
        if key == se.weighed:
            return                          # (asked on every update_curr: the usual answer)
        w = task_weight(task)
        if w == se.weight:
            se.weighed = key
            return
        se.weighed = key
        w0, v0, d0 = se.weight, se.vruntime, se.deadline
        if se.on_rq is not None:
            v = self.avg_vruntime(pc)
            se.vruntime = v - (v - se.vruntime) * se.weight // w
            se.deadline = v + (se.deadline - v) * se.weight // w
        else:
            se.vlag = se.vlag * se.weight // w
        se.weight = w
        if se.queued:
            self._requeue(se, task, w0, v0, d0)

    def _sums(self, pc: "PerCpu", extra: Task | None = None) -> tuple[int, int]:
        """(sum of the weights, sum of weight x vruntime) over the CPU's entities but ``extra``
        (Linux's avg_load and avg_vruntime): the queue's running sums, with the current task's
        part added (a runnable curr not queued) or taken off, and ``extra``'s taken off."""
        rq: FairRunQueue = pc.rq     # type: ignore[assignment]
        if self.check:
            self._check_queue(pc)
        if rq.suspects and self._stale(pc):
            return self._sums_walk(pc, extra)
        load, total = rq.load, rq.total
        index = pc.index
        c = pc.curr
        if c is not None:
            se = c.__dict__.get("_fair_se") or self.se(c)
            if c is extra:
                n = len(se.queued.get(index, ()))
                if n:
                    load -= n * se.weight
                    total -= n * se.weight * se.vruntime
            elif c.state is TaskState.RUNNABLE and index not in se.queued:
                load += se.weight
                total += se.weight * se.vruntime
        if extra is not None and extra is not c:
            se = extra.__dict__.get("_fair_se")
            n = len(se.queued.get(index, ())) if se is not None else 0
            if n:
                load -= n * se.weight       # type: ignore[union-attr]
                total -= n * se.weight * se.vruntime    # type: ignore[union-attr]
        if self.check:
            assert (load, total) == self._sums_walk(pc, extra), "fair: running sums disagree with the walk"
        return load, total

    def _sums_walk(self, pc: "PerCpu", extra: Task | None = None) -> tuple[int, int]:
        """The sums by walking the members (a task queued twice counts twice)."""
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

    def _check_queue(self, pc: "PerCpu") -> None:
        """(EMUKERN_FAIR_CHECK) what the running sums rest on: every queued task that is not
        current is runnable, and the entries' positions are those the queue recorded."""
        rq: FairRunQueue = pc.rq     # type: ignore[assignment]
        seen: dict[int, int] = {}
        load = total = 0
        for t in rq:
            se = self.se(t)
            assert (t.state is TaskState.RUNNABLE or any(p.curr is t for p in self.k.percpu)
                    or t in rq.suspects), f"fair: queued task {t.tid} is {t.state}, unnoticed"
            i = seen.get(id(t), 0)
            seen[id(t)] = i + 1
            assert len(se.queued[pc.index]) > i
            load += se.weight
            total += se.weight * se.vruntime
        assert (load, total) == (rq.load, rq.total), "fair: the queue's sums drifted"

    def avg_vruntime(self, pc: "PerCpu", extra: Task | None = None) -> int:
        """V: the weight-averaged vruntime of the CPU's entities (min_vruntime when empty)."""
        load, total = self._sums(pc, extra)
        if not load:
            return self.min_vruntime[pc.index]
        return total // load

    def entity_eligible(self, pc: "PerCpu", se: SchedEntity, sums: tuple[int, int] | None = None) -> bool:
        """lag >= 0, tested as Linux does without a division: sum w_i (v_i - v) >= 0, that is
        sum w_i v_i - v sum w_i >= 0 (the same integers, so the same answer), from the queue's
        sums (``sums``: already computed by the caller for this queue as it stands)."""
        load, total = sums if sums is not None else self._sums(pc)
        return total - se.vruntime * load >= 0

    def update_min_vruntime(self, pc: "PerCpu") -> None:
        """min_vruntime only moves forward, to the smallest vruntime among the members: the
        queue's smallest (its heap's top) or a runnable curr's that is not queued."""
        rq: FairRunQueue = pc.rq     # type: ignore[assignment]
        if rq.suspects and self._stale(pc):
            low = self._min_walk(pc)
        else:
            if not rq:
                low = None
            elif rq.heaped:
                low = rq.min_vruntime()
            else:
                low = min([t._fair_se.vruntime for t in rq])
            c = pc.curr
            if c is not None and c.state is TaskState.RUNNABLE:
                se = c.__dict__.get("_fair_se") or self.se(c)
                if pc.index not in se.queued and (low is None or se.vruntime < low):
                    low = se.vruntime
            if self.check:
                assert low == self._min_walk(pc), "fair: min_vruntime disagrees with the walk"
        if low is not None and low > self.min_vruntime[pc.index]:
            self.min_vruntime[pc.index] = low

    def _min_walk(self, pc: "PerCpu") -> int | None:
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
        return low

    def _queued_runnable(self, pc: "PerCpu") -> bool:
        """Is any runnable task queued (someone to hand the CPU to)?"""
        if self._stale(pc):
            return any(t.state is TaskState.RUNNABLE for t in pc.rq)
        return bool(pc.rq)

    # ---- running -----------------------------------------------------------------------------
    def update_curr(self, pc: "PerCpu", now: int) -> bool:
        """Charge the running task's time since it was last charged to its vruntime; renew its
        deadline when it has passed it.  True when the deadline was renewed (update_deadline)."""
        curr = pc.curr
        if curr is None:
            return False
        try:
            se: SchedEntity = curr._fair_se     # type: ignore[attr-defined]
        except AttributeError:
            se = self.se(curr)
        if se.weighed != (curr.nice, curr.sched_policy):
            self.reweight(pc, curr, se)
        delta = now - se.exec_start
        if delta <= 0:
            return False
        se.exec_start = now
        se.sum_exec_runtime += delta
        v0, d0 = se.vruntime, se.deadline
        w = se.weight
        # (this runs three times per pipe round trip: calc_delta_fair and the queue-empty case of
        # update_min_vruntime written out)
        se.vruntime = v = v0 + (delta if w == NICE_0_LOAD else delta * NICE_0_LOAD // w)
        renewed = v >= d0 and self.update_deadline(se)
        if se.queued:
            self._requeue(se, curr, w, v0, d0)
        rq: FairRunQueue = pc.rq     # type: ignore[assignment]
        if self.check or rq.suspects or rq.heaped:
            self.update_min_vruntime(pc)
        else:
            # update_min_vruntime for a short queue whose entries are all members: the smallest
            # of their vruntimes and a runnable curr's, if curr is not queued here
            low: int | None = None
            for t in rq:
                x = t._fair_se.vruntime             # type: ignore[attr-defined]
                if low is None or x < low:
                    low = x
            if curr.state is TaskState.RUNNABLE and pc.index not in se.queued and (low is None or v < low):
                low = v
            if low is not None and low > self.min_vruntime[pc.index]:
                self.min_vruntime[pc.index] = low
        return renewed

    def update_deadline(self, se: SchedEntity) -> bool:
        # (callers that change a queued entity's deadline this way tell its queues: _requeue)
        if se.vruntime < se.deadline:
            return False
        se.slice = self.base_slice
        se.deadline = se.vruntime + self.calc_delta_fair(se.slice, se)
        return True

    def task_tick_fair(self, pc: "PerCpu", now: int) -> bool:
        """The tick: True when the current task should be rescheduled (its slice is used up
        and someone else is queued).  There is no other tick preemption under EEVDF."""
        renewed = self.update_curr(pc, now)
        return renewed and self._queued_runnable(pc)

    def pick_eevdf(self, pc: "PerCpu", curr: Task | None) -> Task | None:
        """The eligible entity with the earliest virtual deadline; ``curr`` (the running task,
        still runnable) competes too and keeps the CPU while its picked slice lasts.  Deadline
        ties go to the entity queued first."""
        rq = pc.rq
        if rq.suspects and self._stale(pc):      # type: ignore[attr-defined]
            return self._pick_walk(pc, curr)
        if curr is None and len(rq) == 1 and not self.check:
            return rq[0]                    # _pick's answer for one queued task and no curr
        best = self._pick(pc, curr)
        if self.check:
            assert best is self._pick_walk(pc, curr), "fair: the pick disagrees with the walk"
        return best

    def _pick(self, pc: "PerCpu", curr: Task | None) -> Task | None:
        rq: FairRunQueue = pc.rq     # type: ignore[assignment]
        if curr is not None and curr.state is not TaskState.RUNNABLE:
            curr = None
        if not rq:                          # (every queued entry is runnable: not _stale)
            return curr
        if curr is None and len(rq) == 1:
            return rq[0]
        load, total = self._sums(pc)
        if curr is not None:
            cse = self.se(curr)
            if total - cse.vruntime * load < 0:
                curr = None
            elif cse.picked_deadline == cse.deadline:
                return curr                 # RUN_TO_PARITY: its slice is not used up yet
        best: Task | None = None
        best_d = 0
        if not rq.heaped:
            for t in rq:
                se = t._fair_se
                if (best is None or se.deadline < best_d) and total - se.vruntime * load >= 0:
                    best, best_d = t, se.deadline
        else:
            # the earliest deadlines first, up to the first eligible entry: Linux's tree walk,
            # over a heap; the entries passed on the way (ineligible, so ahead of V) go back
            h = rq.by_deadline
            passed = []
            while h:
                entry = heappop(h)
                d, pos, _, t = entry
                se = t._fair_se             # type: ignore[attr-defined]
                if se.deadline != d or not rq.live(pos, se):
                    continue                # stale: dropped for good
                passed.append(entry)
                if total - se.vruntime * load >= 0:
                    best, best_d = t, d
                    break
            for entry in passed:
                heappush(h, entry)
        if best is None or (curr is not None and self.se(curr).deadline < best_d):
            best = curr
        if best is None:                    # (cannot happen: someone is always eligible)
            best = rq[0]
        return best

    def _pick_walk(self, pc: "PerCpu", curr: Task | None) -> Task | None:
        """The pick by walking the queue (the current task blocked while still queued)."""
        queued = [t for t in pc.rq if t.state is TaskState.RUNNABLE]
        if curr is not None and curr.state is not TaskState.RUNNABLE:
            curr = None
        if not queued:
            return curr
        if curr is None and len(queued) == 1:
            return queued[0]
        sums = self._sums_walk(pc)
        if curr is not None:
            cse = self.se(curr)
            if not self.entity_eligible(pc, cse, sums):
                curr = None
            elif cse.picked_deadline == cse.deadline:
                return curr
        best: Task | None = None
        best_d = 0
        load, total = sums
        for t in queued:
            se = self.se(t)
            if (best is None or se.deadline < best_d) and total - se.vruntime * load >= 0:
                best, best_d = t, se.deadline
        if best is None or (curr is not None and self.se(curr).deadline < best_d):
            best = curr
        if best is None:
            best = queued[0]
        return best

    def set_next_entity(self, task: Task, now: int) -> None:
        se = self.se(task)
        se.exec_start = now
        se.picked_deadline = se.deadline

    # ---- queueing ----------------------------------------------------------------------------
    def place_entity(self, pc: "PerCpu", task: Task, se: SchedEntity, initial: bool) -> None:
        """Put a waking (or new, or moved) entity at V minus the lag it kept, its lag inflated by
        the weight it adds so that V does not move away from it as it joins."""
        self.reweight(pc, task, se)
        load, total = self._sums(pc, extra=task)        # the others: V as it joins
        vslice = self.calc_delta_fair(se.slice or self.base_slice, se)
        lag = 0
        if load and se.vlag:
            lag = se.vlag * (load + se.weight) // load
        w0, v0, d0 = se.weight, se.vruntime, se.deadline
        se.vruntime = (total // load if load else self.min_vruntime[pc.index]) - lag
        if initial:
            vslice //= 2                    # PLACE_DEADLINE_INITIAL: a new task starts soon
        se.deadline = se.vruntime + vslice
        se.picked_deadline = None
        if se.queued:
            self._requeue(se, task, w0, v0, d0)

    def enqueue(self, pc: "PerCpu", task: Task, now: int) -> None:
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

    def enqueue_wakeup(self, pc: "PerCpu", task: Task, now: int, cnow: int, check_preempt: bool) -> bool:
        """A wake-up as the scheduler makes it, in one call: :meth:`enqueue` at ``now``, the task
        appended to ``pc``'s queue, then (``check_preempt``: no reschedule pending yet)
        :meth:`check_preempt_wakeup_fair` at ``cnow``, the CPU's clock.  True: the woken task
        should take the CPU (resched_curr).

        Why a second entry point: a pipe write wakes its reader on every round trip, and the
        three calls asked the same questions of the same queue three times (update_curr twice,
        the queue's sums four times).  Its common case -- a sleeper waking on a queue with no
        suspect entries, its weight unchanged -- answers each once, with enqueue_task_fair,
        place_entity, update_min_vruntime and the head of pick_eevdf written out; everything
        else takes the three calls."""
        rq: FairRunQueue = pc.rq     # type: ignore[assignment]
        se: SchedEntity | None = task.__dict__.get("_fair_se")
        curr = pc.curr
        if (self.check or rq.suspects or se is None or se.on_rq is not None or se.queued
                or curr is task or se.weighed != (task.nice, task.sched_policy)):
            self.enqueue(pc, task, now)
            rq.append(task)
            return check_preempt and self.check_preempt_wakeup_fair(pc, task, cnow)
        index = pc.index
        mv = self.min_vruntime
        # enqueue_task_fair: the running task's time up to now first (update_curr)
        cse: SchedEntity | None = None
        if curr is not None:
            self.update_curr(pc, now)
            cse = curr.__dict__.get("_fair_se") or self.se(curr)
        # the members' sums but the waking task (not queued here, so none of its part is in the
        # queue's): avg_load and avg_vruntime as it joins, the V of both questions below
        load, total = rq.load, rq.total
        curr_member = cse is not None and curr.state is TaskState.RUNNABLE and index not in cse.queued  # type: ignore[union-attr]
        if curr_member:
            load += cse.weight                          # type: ignore[union-attr]
            total += cse.weight * cse.vruntime          # type: ignore[union-attr]
        V = total // load if load else mv[index]
        w = se.weight
        sv = se.sleep_vruntime
        if sv is not None and se.sleep_cpu == index:
            # it slept while ahead of V: the debt stays (at most), a credit is not earned back
            # (_clamp written out: the lag limit, two slices or a tick, in its virtual time)
            limit = 2 * (se.slice or self.base_slice)
            if limit < self.tick:
                limit = self.tick
            if w != NICE_0_LOAD:
                limit = limit * NICE_0_LOAD // w
            lag = V - sv
            lag = -limit if lag < -limit else limit if lag > limit else lag
            se.vlag = lag if lag < 0 else 0
        se.sleep_vruntime = None
        # place_entity (its reweight has nothing to do: the weight's key is unchanged, and the
        # task is known, so not ENQUEUE_INITIAL)
        sl = se.slice or self.base_slice
        vslice = sl if w == NICE_0_LOAD else sl * NICE_0_LOAD // w
        vlag = se.vlag
        lag = vlag * (load + w) // load if load and vlag else 0
        se.vruntime = v = V - lag
        se.deadline = v + vslice
        se.picked_deadline = None
        se.on_rq = index
        # update_min_vruntime: the task is not in the queue yet, so the members are the queue's
        # entries and a running curr
        low: int | None = None
        if rq.heaped:
            low = rq.min_vruntime()
        else:
            for t in rq:
                x = t._fair_se.vruntime             # type: ignore[attr-defined]
                if low is None or x < low:
                    low = x
        if curr_member and (low is None or cse.vruntime < low):     # type: ignore[union-attr]
            low = cse.vruntime                      # type: ignore[union-attr]
        if low is not None and low > mv[index]:
            mv[index] = low
        rq.append(task)
        # check_preempt_wakeup_fair (its update_curr at cnow <= now has no time left to charge)
        if not check_preempt or cse is None or curr.state is not TaskState.RUNNABLE:  # type: ignore[union-attr]
            return False
        if curr.sched_policy == SCHED_IDLE and task.sched_policy != SCHED_IDLE:     # type: ignore[union-attr]
            return True
        if task.sched_policy == SCHED_BATCH or task.sched_policy == SCHED_IDLE:
            return False
        if rq.suspects:                             # (the append made it one: queued twice)
            return self.pick_eevdf(pc, curr) is task
        # pick_eevdf's first answer: an eligible curr whose picked slice lasts keeps the CPU
        # (RUN_TO_PARITY), so the woken task does not preempt
        load, total = rq.load, rq.total
        if index not in cse.queued:
            load += cse.weight
            total += cse.weight * cse.vruntime
        if total - cse.vruntime * load >= 0 and cse.picked_deadline == cse.deadline:
            return False
        return self._pick(pc, curr) is task

    def _clamp(self, se: SchedEntity, lag: int) -> int:
        limit = max(2 * (se.slice or self.base_slice), self.tick)
        if se.weight != NICE_0_LOAD:
            limit = limit * NICE_0_LOAD // se.weight        # calc_delta_fair
        return -limit if lag < -limit else limit if lag > limit else lag

    def _lag(self, pc: "PerCpu", se: SchedEntity, task: Task) -> int:
        return self._clamp(se, self.avg_vruntime(pc) - se.vruntime)

    def dequeue_sleep(self, pc: "PerCpu", task: Task, now: int) -> None:
        """dequeue_entity for a task that blocks or exits: keep its lag for its wake-up."""
        se: SchedEntity | None = task.__dict__.get("_fair_se")     # (_entity)
        if se is not None and se.queued and task.state is not TaskState.RUNNABLE:
            for index in se.queued:         # it was queued again after all: see _stale
                rq = self.k.percpu[index].rq
                if task not in rq.suspects:
                    rq.suspects.append(task)
        if se is None or se.on_rq is None:
            return
        if pc.curr is task:
            self.update_curr(pc, now)
        on = self.k.percpu[se.on_rq]
        orq: FairRunQueue = on.rq     # type: ignore[assignment]
        if self.check or orq.suspects:
            lag = self._lag(on, se, task)
        else:
            # _lag written out (once per switch: the task that blocks): V from the queue's sums
            # and a runnable curr's part (avg_vruntime), minus its vruntime, clamped (_clamp)
            load, total = orq.load, orq.total
            c = on.curr
            if c is not None and c.state is TaskState.RUNNABLE:
                cse = c.__dict__.get("_fair_se") or self.se(c)
                if on.index not in cse.queued:
                    load += cse.weight
                    total += cse.weight * cse.vruntime
            lag = (total // load if load else self.min_vruntime[on.index]) - se.vruntime
            limit = 2 * (se.slice or self.base_slice)
            if limit < self.tick:
                limit = self.tick
            if se.weight != NICE_0_LOAD:
                limit = limit * NICE_0_LOAD // se.weight
            lag = -limit if lag < -limit else limit if lag > limit else lag
        if lag < 0:
            se.vlag, se.sleep_vruntime, se.sleep_cpu = lag, se.vruntime, se.on_rq
        else:
            se.vlag, se.sleep_vruntime = lag, None
        se.on_rq = None

    # ---- sched_yield and wake-up preemption --------------------------------------------------
    def yield_task_fair(self, pc: "PerCpu", now: int) -> bool:
        """sched_yield: push the yielder's deadline one slice on (it keeps its vruntime and so
        its place in virtual time).  False when it is alone (nothing to yield to)."""
        curr = pc.curr
        if curr is None or not self._queued_runnable(pc):
            return False
        self.update_curr(pc, now)
        se = self.se(curr)
        d0 = se.deadline
        se.deadline += self.calc_delta_fair(se.slice or self.base_slice, se)
        if se.queued:
            self._requeue(se, curr, se.weight, se.vruntime, d0)
        return True

    def check_preempt_wakeup_fair(self, pc: "PerCpu", woken: Task, now: int) -> bool:
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
