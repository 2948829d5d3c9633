"""``workflows.storage.retention``: the one rule set every storage's pruning decides with."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workflows.storage import (
    CheckpointFacts,
    Reason,
    RetentionRules,
    RunHorizon,
    decide,
    decide_one,
    delete_before,
)

T0 = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)


def at(day: int, cid: str, run: str = "a", **flags: bool) -> CheckpointFacts:
    return CheckpointFacts(cid, run, T0 + dt.timedelta(days=day), **flags)


def verdicts(facts: list[CheckpointFacts], rules: RetentionRules) -> dict[str, tuple[str, ...]]:
    return {d.checkpoint_id: tuple(d.reasons) for d in decide(facts, rules)}


def test_decide_gives_every_reason_a_checkpoint_stays_for() -> None:
    facts = [
        at(0, "old"),
        at(1, "waiting", pending_requests=True),
        at(2, "raised", approval=True, held=True),
        at(3, "origin", fork_origin=True),
        at(4, "current", current=True),
        at(5, "kept"),
        at(6, "newest"),
    ]
    rules = RetentionRules(keep_last=2, cutoff=T0 + dt.timedelta(days=10))
    assert verdicts(facts, rules) == {
        "old": ("expired",),
        "waiting": ("pending_requests",),
        "raised": ("approval", "held"),
        "origin": ("fork_origin",),
        "current": ("current",),
        "kept": ("keep_last",),
        "newest": ("newest", "keep_last"),
    }


def test_protected_is_a_protection_and_keep_last_or_recent_is_not() -> None:
    rules = RetentionRules(keep_last=2, cutoff=T0 + dt.timedelta(days=1, hours=12))
    decisions = {d.checkpoint_id: d for d in decide([at(0, "x"), at(1, "y"), at(2, "z")], rules)}
    assert decisions["x"].delete and not decisions["x"].protected
    assert not decisions["y"].delete and not decisions["y"].protected  # kept by keep_last only
    assert decisions["z"].protected and tuple(decisions["z"].reasons) == (
        Reason.NEWEST,
        Reason.KEEP_LAST,
        Reason.RECENT,
    )


def test_a_checkpoint_goes_only_when_every_rule_given_lets_it_go() -> None:
    facts = [at(day, f"c{day}") for day in range(5)]
    both = RetentionRules(keep_last=2, cutoff=T0 + dt.timedelta(days=1))
    assert [d.delete for d in decide(facts, both)] == [True, False, False, False, False]


def test_checkpoints_tied_for_newest_or_for_the_keep_last_boundary_all_stay() -> None:
    facts = [at(0, "a0"), at(1, "a1"), at(1, "a1-twin"), at(2, "a2"), at(2, "a2-twin")]
    assert verdicts(facts, RetentionRules(keep_last=0, cutoff=T0 + dt.timedelta(days=9))) == {
        "a0": ("expired",),
        "a1": ("expired",),
        "a1-twin": ("expired",),
        "a2": ("newest",),
        "a2-twin": ("newest",),
    }
    kept = [d.checkpoint_id for d in decide(facts, RetentionRules(keep_last=3)) if not d.delete]
    assert kept == ["a1", "a1-twin", "a2", "a2-twin"]


def test_runs_are_decided_apart() -> None:
    facts = [at(0, "a0"), at(9, "b0", run="b"), at(1, "a1"), at(10, "b1", run="b")]
    deleted = [d.checkpoint_id for d in decide(facts, RetentionRules(keep_last=1)) if d.delete]
    assert deleted == ["a0", "b0"]


def test_a_run_shorter_than_keep_last_keeps_everything() -> None:
    rules = RetentionRules(keep_last=5, cutoff=T0 + dt.timedelta(days=99))
    horizon = RunHorizon.of([T0, T0 + dt.timedelta(days=1)], rules)
    assert horizon.kth_newest is None and delete_before(horizon, rules) is None
    assert not any(d.delete for d in decide([at(0, "x"), at(1, "y")], rules))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "keep_last and/or older_than"),
        ({"keep_last": -1}, "non-negative"),
        ({"keep_last": 1.5}, "non-negative"),
        ({"cutoff": dt.datetime(2030, 1, 1)}, "timezone"),
    ],
)
def test_rules_refuse_what_means_nothing(arguments: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RetentionRules(**arguments)  # type: ignore[arg-type]


def test_rules_of_an_age_count_back_from_now() -> None:
    rules = RetentionRules.of(older_than=dt.timedelta(days=3), now=T0)
    assert rules.cutoff == T0 - dt.timedelta(days=3)
    assert RetentionRules.of(older_than=T0).cutoff == T0
    with pytest.raises(ValueError, match="timedelta"):
        RetentionRules.of(older_than=7)  # type: ignore[arg-type]


def test_a_horizon_needs_a_checkpoint() -> None:
    with pytest.raises(ValueError):
        RunHorizon.of([], RetentionRules(keep_last=1))


_flags = st.fixed_dictionaries(
    {
        name: st.booleans()
        for name in ("pending_requests", "approval", "fork_origin", "current", "held")
    }
)


@given(
    runs=st.lists(st.lists(st.tuples(st.integers(0, 20), _flags), min_size=1, max_size=8)),
    keep_last=st.none() | st.integers(0, 6),
    cutoff_day=st.none() | st.integers(0, 21),
)
def test_delete_before_bounds_what_decide_deletes_so_a_storage_may_filter_with_it(
    runs: list[list[tuple[int, dict[str, bool]]]], keep_last: int | None, cutoff_day: int | None
) -> None:
    if keep_last is None and cutoff_day is None:
        keep_last = 1
    cutoff = None if cutoff_day is None else T0 + dt.timedelta(days=cutoff_day)
    rules = RetentionRules(keep_last=keep_last, cutoff=cutoff)
    for r, run in enumerate(runs):
        facts = [at(day, f"{r}-{i}", run=str(r), **flags) for i, (day, flags) in enumerate(run)]
        horizon = RunHorizon.of([f.timestamp for f in facts], rules)
        bound = delete_before(horizon, rules)
        for f, decision in zip(facts, decide(facts, rules), strict=True):
            assert decision == decide_one(f, horizon, rules)
            if decision.delete:
                assert bound is not None and f.timestamp < bound
            if (
                bound is not None
                and f.timestamp < bound
                and not any((f.pending_requests, f.approval, f.fork_origin, f.current, f.held))
            ):
                assert decision.delete  # the bound is tight: nothing younger slips through
