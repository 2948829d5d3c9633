"""The retention rules: which checkpoints pruning deletes, and why each other one stays.

One rule set for every storage. The engine's ``prune`` (over any ``CheckpointStorage``) and the
dashboard's database retention both describe their checkpoints as ``CheckpointFacts`` and ask
``decide`` (or ``decide_one``, a page at a time); neither has protections of its own. A storage
that narrows the candidates first, as the database does in SQL, narrows them with
``delete_before``, which bounds what ``decide_one`` can delete, so it only ever hands the rules a
superset of what they delete.

Protected, whatever the rules say (``Decision.protected``):

- the newest checkpoint of each run, where resuming and answering start; every checkpoint tied
  for newest, so the answer never hangs on the order a storage lists equal timestamps in;
- a checkpoint holding pending requests: someone may still answer from it;
- a checkpoint an approval request was raised in (the dashboard keeps it for the audit trail);
- the origin of a fork: another run started from it;
- a run's current checkpoint, when that is not its newest (it was resumed from an older one);
- a checkpoint on hold.

Kept by a rule: the ``keep_last`` newest of each run (ties at the boundary included) and anything
not older than ``cutoff``. The rest is deleted; when both rules are given, a checkpoint goes only
when both let it go.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

__all__ = [
    "CheckpointFacts",
    "Decision",
    "Reason",
    "RetentionRules",
    "RunHorizon",
    "decide",
    "decide_one",
    "delete_before",
]


class Reason(enum.StrEnum):
    """Why a checkpoint stays (or, ``EXPIRED`` alone, why it goes)."""

    NEWEST = "newest"
    PENDING_REQUESTS = "pending_requests"
    APPROVAL = "approval"
    FORK_ORIGIN = "fork_origin"
    CURRENT = "current"
    HELD = "held"
    KEEP_LAST = "keep_last"
    RECENT = "recent"
    EXPIRED = "expired"


PROTECTIONS = frozenset(Reason) - {Reason.KEEP_LAST, Reason.RECENT, Reason.EXPIRED}


@dataclass(frozen=True)
class RetentionRules:
    """What a pruning asks for: the ``keep_last`` newest of each run and/or nothing younger than
    ``cutoff`` (an aware instant). At least one of the two.

    Raises:
        ValueError: neither rule, a negative or non-integer ``keep_last``, a naive ``cutoff``.
    """

    keep_last: int | None = None
    cutoff: dt.datetime | None = None

    def __post_init__(self) -> None:
        if self.keep_last is None and self.cutoff is None:
            raise ValueError("prune needs keep_last and/or older_than")
        if self.keep_last is not None and (
            not isinstance(self.keep_last, int) or self.keep_last < 0
        ):
            raise ValueError("keep_last must be a non-negative integer")
        if self.cutoff is not None and (
            not isinstance(self.cutoff, dt.datetime) or self.cutoff.tzinfo is None
        ):
            raise ValueError("older_than must be timezone-aware")

    @classmethod
    def of(
        cls,
        *,
        keep_last: int | None = None,
        older_than: dt.timedelta | dt.datetime | None = None,
        now: dt.datetime | None = None,
    ) -> RetentionRules:
        """The rules for an age (``older_than`` a timedelta, counted back from ``now``, the
        current time by default) or a cutoff instant (an aware datetime)."""
        if older_than is None or isinstance(older_than, dt.datetime):
            return cls(keep_last=keep_last, cutoff=older_than)
        if isinstance(older_than, dt.timedelta):
            return cls(keep_last=keep_last, cutoff=(now or dt.datetime.now(dt.UTC)) - older_than)
        raise ValueError("older_than must be a timedelta or an aware datetime")


@dataclass(frozen=True)
class CheckpointFacts:
    """What the rules need to know about one checkpoint.

    ``run`` is the group ``keep_last`` and "newest" count within: the engine's run id (its
    lineage), or the dashboard's run. ``timestamp`` is aware. The flags are the storage's
    answers; one that cannot know (the engine keeps no holds or approvals) leaves it False.
    """

    checkpoint_id: str
    run: Hashable
    timestamp: dt.datetime
    pending_requests: bool = False
    approval: bool = False
    fork_origin: bool = False
    current: bool = False
    held: bool = False


@dataclass(frozen=True)
class RunHorizon:
    """Where a run's newest checkpoints begin: the greatest timestamp of the run, and the
    timestamp of its ``keep_last``-th newest checkpoint (None without that rule, or when the run
    has fewer checkpoints than that). A database computes both with an ``ORDER BY`` and an
    offset; ``of`` is the definition they must agree with."""

    newest: dt.datetime
    kth_newest: dt.datetime | None = None

    @classmethod
    def of(cls, timestamps: Iterable[dt.datetime], rules: RetentionRules) -> RunHorizon:
        """The horizon of a run with these (non-empty) checkpoint timestamps.

        Raises:
            ValueError: no timestamps.
        """
        newest_first = sorted(timestamps, reverse=True)
        if not newest_first:
            raise ValueError("a run's horizon needs at least one checkpoint")
        k = rules.keep_last
        kth = newest_first[k - 1] if k and k <= len(newest_first) else None
        return cls(newest=newest_first[0], kth_newest=kth)


@dataclass(frozen=True)
class Decision:
    """The verdict on one checkpoint and every reason for it."""

    checkpoint_id: str
    reasons: tuple[Reason, ...]

    @property
    def delete(self) -> bool:
        return self.reasons == (Reason.EXPIRED,)

    @property
    def protected(self) -> bool:
        return any(reason in PROTECTIONS for reason in self.reasons)


def delete_before(horizon: RunHorizon, rules: RetentionRules) -> dt.datetime | None:
    """The instant every checkpoint of this run that ``decide_one`` deletes is older than, or
    None when it deletes none of them: the bound a storage may filter candidates with."""
    bounds = [horizon.newest]
    if rules.keep_last:
        if horizon.kth_newest is None:
            return None  # the run has no more than keep_last checkpoints
        bounds.append(horizon.kth_newest)
    if rules.cutoff is not None:
        bounds.append(rules.cutoff)
    return min(bounds)


def decide_one(facts: CheckpointFacts, horizon: RunHorizon, rules: RetentionRules) -> Decision:
    """Whether ``facts``' checkpoint goes, given its run's ``horizon``."""
    flags = (
        (facts.timestamp >= horizon.newest, Reason.NEWEST),
        (facts.pending_requests, Reason.PENDING_REQUESTS),
        (facts.approval, Reason.APPROVAL),
        (facts.fork_origin, Reason.FORK_ORIGIN),
        (facts.current, Reason.CURRENT),
        (facts.held, Reason.HELD),
        (_kept_by_keep_last(facts, horizon, rules), Reason.KEEP_LAST),
        (rules.cutoff is not None and facts.timestamp >= rules.cutoff, Reason.RECENT),
    )
    reasons = tuple(reason for holds, reason in flags if holds)
    return Decision(facts.checkpoint_id, reasons or (Reason.EXPIRED,))


def _kept_by_keep_last(facts: CheckpointFacts, horizon: RunHorizon, rules: RetentionRules) -> bool:
    if rules.keep_last is None or rules.keep_last == 0:
        return False
    return horizon.kth_newest is None or facts.timestamp >= horizon.kth_newest


def decide(checkpoints: Iterable[CheckpointFacts], rules: RetentionRules) -> list[Decision]:
    """A decision for every checkpoint, in the order given; each run's horizon is computed from
    the checkpoints given for it, so pass every checkpoint of the runs concerned."""
    listed = list(checkpoints)
    runs: dict[Hashable, list[dt.datetime]] = {}
    for facts in listed:
        runs.setdefault(facts.run, []).append(facts.timestamp)
    horizons = {run: RunHorizon.of(stamps, rules) for run, stamps in runs.items()}
    return [decide_one(facts, horizons[facts.run], rules) for facts in listed]
