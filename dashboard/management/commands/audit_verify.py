"""``manage.py audit_verify [--seal]``: walk the audit log's hash chain and report the first
broken link; exit status 1 when the chain is broken or entries went unsealed."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.access import audit_chain


class Command(BaseCommand):
    help = (
        "Check the audit log's hash chain from its first link; print how many entries hold and "
        "the latest digest (keep it outside the database), or the first broken link."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--seal", action="store_true", help="first seal the entries written since the job ran"
        )

    def handle(self, *args: Any, seal: bool, **options: Any) -> None:
        sealed = 1 if seal else 0
        while sealed:  # a batch at a time, until nothing is left to seal
            sealed = audit_chain.seal_pending()
        verdict = audit_chain.verify()
        if verdict.broken_seq is not None:
            raise CommandError(
                f"the audit chain is broken at link {verdict.broken_seq}: {verdict.reason}; "
                f"the {verdict.checked:,} links before it hold"
            )
        if verdict.unsealed:
            raise CommandError(
                f"{verdict.checked:,} links hold, but {verdict.reason}: is the seal-audit job "
                "running (celery beat, or the embedded server)?"
            )
        self.stdout.write(
            f"the audit chain holds: {verdict.checked:,} entries; "
            f"latest digest {verdict.latest_digest}"
        )
