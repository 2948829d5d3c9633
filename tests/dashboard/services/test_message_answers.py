def test_a_bulk_approval_skips_a_handoff_that_needs_its_words_and_decides_a_review(
    drive: Drive, operator_user: Any, approver_user: Any
) -> None:
    handoff = waiting(drive, operator_user, "handoff-triage", "My invoice shows a double charge")
    review = waiting(drive, operator_user, "reviewed-answer", "Write about kettles")

    outcomes = services.approvals_decide_many(
        [handoff.request_id, review.request_id], user=approver_user, approved=True, reason="ok"
    )

    assert [(o.decided, o.reason) for o in outcomes] == [
        (False, "its response has fields to fill in: decide it on its own"),
        (True, ""),
    ]
