"""``manage.py prune_checkpoints [--dry-run] [--policy NAME]``: apply retention policies now."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard import services


class Command(BaseCommand):
    help = "Apply retention policies (every enabled one, or --policy NAME); --dry-run only reports."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="report what would be deleted")
        parser.add_argument("--policy", help="the name of one policy (enabled or not)")
        parser.add_argument("--batch-size", type=int, default=services.retention.BATCH_SIZE)

    def handle(
        self, *args: Any, dry_run: bool, policy: str | None, batch_size: int, **options: Any
    ) -> None:
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        try:
            reports = services.checkpoint_prune(
                policy=policy, dry_run=dry_run, batch_size=batch_size
            )
        except services.ServiceError as exc:
            raise CommandError(exc.message) from None
        if not reports:
            self.stdout.write("no enabled retention policy")
        verb = "would delete" if dry_run else "deleted"
        for report in reports:
            self.stdout.write(
                f"{report.policy}: {verb} {report.runs} runs, {report.checkpoints} checkpoints, "
                f"{report.megabytes:.2f} MB in {report.batches} batches "
                f"(longest transaction {report.longest_transaction_seconds * 1000:.0f} ms)"
            )
