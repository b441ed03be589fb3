"""A round of N independent conversations: the same starting point, a different directive each.

Each conversation gets its own tools with its own share of the round's checks (the shares add
up to no more than the checks left), and runs on a thread of its own; the model calls overlap,
the uses of the lane's device do not (`device_lock`). Token, dollar and time budgets are the
lane's one `Ledger`, so a budget spent by any conversation stops every other at its next turn,
and so does `Ledger.halt` (author mode's first correct candidate, when asked). The round's best
is chosen by the caller from the record, never from what a conversation answered.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kernel_bakeoff.tasks.agents.transcript import BudgetSpent

MAX_PARALLEL = 4


def default_width(budget: int, per_round: int) -> int:
    """Conversations per round when the setting leaves it open: as many as let each make a
    full round's checks while the lane's budget still lasts two rounds, 1 to MAX_PARALLEL."""
    return max(1, min(MAX_PARALLEL, budget // max(1, 2 * per_round)))


def shares(checks: int, n: int) -> list[int]:
    """`checks` split over `n` conversations, the larger shares first; none is empty."""
    n = max(1, min(n, checks))
    return [checks // n + (1 if i < checks % n else 0) for i in range(n)]


@dataclass
class Outcome:
    conversation: int  # 1-based
    directive: str
    answer: object | None = None  # the validated RoundAnswer
    stopped: str | None = None  # a budget, the deadline or a halt ended it
    failed: str | None = None  # the model, the driver or the flow's code failed
    error: Exception | None = None


def run_round(conversations: list, one) -> list[Outcome]:
    """Run `one(k, directive)` for each (k, directive) at once; what each ended with."""

    def guarded(item) -> Outcome:
        k, directive = item
        out = Outcome(conversation=k, directive=directive)
        try:
            out.answer = one(k, directive)
        except BudgetSpent as exc:
            out.stopped = str(exc)
        except Exception as exc:  # one conversation's fault is not the others'
            out.failed, out.error = f"{type(exc).__name__}: {exc}", exc
        return out

    if len(conversations) == 1:
        return [guarded(conversations[0])]
    with ThreadPoolExecutor(len(conversations), thread_name_prefix="conversation") as pool:
        return list(pool.map(guarded, conversations))
