"""fs/locks.py's range arithmetic (posix_lock_inode's merge and split), against a byte-map model:
after any sequence of one owner's lock and unlock requests its locks cover exactly the bytes the
model says, with the model's types, never overlap, and never leave two locks of one type that
touch (Linux merges them); another owner's locks are untouched."""
from __future__ import annotations

import random

from emukern.kernel.fs.locks import F_RDLCK, F_UNLCK, F_WRLCK, OFFSET_MAX, FileLock, LockContext, _apply

N = 24          # the model's bytes; a request may also run to OFFSET_MAX (l_len 0)


def _check(ctx: LockContext, owner, model: list[int], tail: int) -> None:
    mine = sorted((l for l in ctx.locks if l.owner is owner), key=lambda l: l.start)
    seen = [F_UNLCK] * N
    for a, b in zip(mine, mine[1:]):
        assert a.end < b.start, (a, b)                                   # no overlap
        assert not (a.end + 1 == b.start and a.type == b.type), (a, b)   # merged when touching
    for l in mine:
        for i in range(l.start, min(l.end, N - 1) + 1):
            seen[i] = l.type
    assert seen == model
    last = mine[-1] if mine else None
    assert (last.type if last is not None and last.end == OFFSET_MAX else F_UNLCK) == tail


def test_merge_and_split_match_a_byte_model():
    rng = random.Random(5)
    for _ in range(300):
        ctx = LockContext(("t",))
        me, other = object(), object()
        ctx.locks.append(FileLock(100, 200, F_RDLCK, other, 9, False))
        model, tail = [F_UNLCK] * N, F_UNLCK     # tail: the type of the bytes from N on
        for _ in range(12):
            t = rng.choice((F_RDLCK, F_WRLCK, F_UNLCK))
            s = rng.randrange(N)
            e = OFFSET_MAX if rng.random() < 0.15 else rng.randrange(s, N)
            _apply(ctx, me, s, e, t, 1, False)
            for i in range(s, min(e, N - 1) + 1):
                model[i] = t
            if e == OFFSET_MAX:
                tail = t
            _check(ctx, me, model, tail)
        assert [l for l in ctx.locks if l.owner is other] == [ctx.locks[0]]
