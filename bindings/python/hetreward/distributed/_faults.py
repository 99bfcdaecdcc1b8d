"""What goes wrong in a round, and how a running round is watched.

A round that fails raises a :class:`ShardError` naming the shards and the workers involved
and the round (0 = the summary pass): :class:`WorkerLostError` when a worker died (a killed
process, a dead actor, a lost executor) and the engine could not, or was told not to, run its
shards elsewhere; :class:`RoundTimeoutError` when shards did not answer within the fit's
``round_timeout`` (a frozen worker); a plain :class:`ShardError` when a shard failed on its
worker (a file that no longer reads, or changed since the fit started) or sent back damaged
bytes. A cancellation that reaches a running round is a :class:`hetreward.CancelledError`
that names the round and the shards still out.

Engines wait for a round through a :class:`Watch` (``watch.check(pending)`` every
:data:`POLL` seconds at most), which raises the cancellation or the timeout.
"""

from __future__ import annotations

import re
import time
from typing import Callable, Dict, Iterable, Optional, Sequence

from ..errors import CANCELLED, CancelledError

#: Seconds between two looks at a running round (cancellation, timeout, lost workers).
POLL = 0.1


class ShardError(RuntimeError):
    """A round failed: ``shards`` (indices), ``workers`` (their names, same order) and
    ``round`` (1-based; 0 = the summary pass)."""

    def __init__(self, message: str, shards: Sequence[int] = (), workers: Sequence[str] = (),
                 round: int = 0):
        super().__init__(message)
        self.shards, self.workers, self.round = tuple(shards), tuple(workers), round


class WorkerLostError(ShardError):
    """The worker holding a shard died and the shard was not (or could not be) run
    elsewhere."""


class RoundTimeoutError(ShardError, TimeoutError):
    """Shards did not answer within the round's timeout (a frozen or overloaded worker)."""


def where(pending: Dict[int, str]) -> str:
    """``shard 3 on worker tcp://...:4567, shard 5 on ...`` (at most 8 named)."""
    items = sorted(pending.items())
    text = ", ".join(f"shard {k} on {w}" for k, w in items[:8])
    return text + (f" and {len(items) - 8} more" if len(items) > 8 else "")


def what_round(index: int) -> str:
    return "the summary pass" if index == 0 else f"round {index}"


class Watch:
    """The fit's view of one running round: its index, deadline and cancellation sources.

    ``cancelled()`` returns why the fit was cancelled (a sentence) or ``None``."""

    def __init__(self, index: int, timeout: Optional[float],
                 cancelled: Callable[[], Optional[str]]):
        self.index = index
        self.timeout = timeout
        self.started = time.monotonic()
        self.deadline = None if timeout is None else self.started + timeout
        self._cancelled = cancelled

    def remaining(self, cap: float = POLL) -> float:
        """Seconds to wait before the next check (at most ``cap``)."""
        if self.deadline is None:
            return cap
        return max(0.0, min(cap, self.deadline - time.monotonic()))

    def check(self, pending: Dict[int, str]) -> None:
        """Raises :class:`hetreward.CancelledError` or :class:`RoundTimeoutError` naming the
        shards in ``pending`` (shard -> worker) that have not answered yet."""
        reason = self._cancelled()
        if reason is not None:
            out = f"; still out: {where(pending)}" if pending else ""
            raise CancelledError(CANCELLED, f"cancelled during {what_round(self.index)}: "
                                            f"{reason}{out}")
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise RoundTimeoutError(
                f"{what_round(self.index)} timed out after {self.timeout:g} s (round_timeout): "
                f"no answer from {where(pending)}",
                list(sorted(pending)), [pending[k] for k in sorted(pending)], self.index)

    def lost(self, shards: Iterable[int], worker: str, cause: object) -> WorkerLostError:
        shards = sorted(shards)
        named = ", ".join(str(k) for k in shards)
        return WorkerLostError(
            f"{what_round(self.index)}: {worker} holding shard{'s' if len(shards) > 1 else ''}"
            f" {named} was lost ({cause})", shards, [worker] * len(shards), self.index)

    def failed(self, shard: int, worker: str, cause: BaseException) -> ShardError:
        """Shard ``shard`` failed on ``worker``; the worker's own ``shard k: ...`` line
        (:func:`_shards.answer_of`) when the engine's error text holds one."""
        said = re.search(r"shard \d+: ([^\n]*)", str(cause))
        detail = said.group(1) if said else f"{type(cause).__name__}: {cause}"
        return ShardError(f"{what_round(self.index)}: shard {shard} failed on {worker}: "
                          f"{detail}", [shard], [worker], self.index)


def unwatched(index: int = 0) -> Watch:
    """A watch that never cancels nor times out (engines called without one)."""
    return Watch(index, None, lambda: None)
