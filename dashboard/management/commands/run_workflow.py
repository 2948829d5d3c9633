"""``manage.py run_workflow NAME [--input JSON] [--no-follow] [--user NAME]``: start a run from
the shell through ``services.run_start`` (the API's door), then follow it until it ends.

Exit status: 0 completed (its output printed on stdout as JSON, in the readable form the
dashboard shows, or with ``--raw`` exactly as the JSON API returns it), 1 failed or cancelled,
2 the input or the workflow name was refused (with the validation messages). A user who may
not start runs (``--user``) is refused with 1; Ctrl-C stops following with 130, the run goes
on. Progress goes to stderr: a line redrawn in place on a terminal, one line per change
otherwise (logs, CI).

Following reads the run row every ``--interval`` seconds: the row is the truth about a run in
both modes, and a shell has no websocket. In embedded mode (no ``REDIS_URL``) there are no
workers: the run executes on background threads of this very process, so even ``--no-follow``
returns only once the run has finished or waits for an answer (its id is printed first).

Progress is a status line of our own rather than a progress-bar library: a run has no known
number of supersteps, so there is no bar to fill, only a counter and a status to redraw.
"""

from __future__ import annotations

import itertools
import json
from time import monotonic, sleep
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from django.urls import reverse

from dashboard import selectors, services
from dashboard.execution import embedded
from dashboard.models import RunStatus, WorkflowRun
from workflows.readable import readable

BAD_INPUT = 2
FAILED = 1
INTERRUPTED = 130
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class Command(BaseCommand):
    help = "Start a run of a registered workflow and follow it to the end."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="a registered workflow (see `manage.py workflows`)")
        parser.add_argument(
            "--input",
            default="{}",
            help="the run's input as JSON (default: {}, the type's defaults)",
        )
        parser.add_argument("--no-follow", action="store_true", help="print the run id and return")
        parser.add_argument(
            "--user",
            default="",
            help="start it as this user (their role applies; default: the system)",
        )
        parser.add_argument(
            "--interval", type=float, default=0.5, help="seconds between looks at the run"
        )
        parser.add_argument(
            "--raw", action="store_true", help="print the output as the JSON API returns it"
        )

    def handle(
        self,
        *args: Any,
        name: str,
        input: str,
        no_follow: bool,
        user: str,
        interval: float,
        raw: bool,
        **options: Any,
    ) -> None:
        value = parse_input(input)
        try:
            run = services.run_start(workflow_name=name, input=value, user=acting_user(user))
        except services.InvalidInput as exc:
            raise CommandError(_refusal(exc), returncode=BAD_INPUT) from None
        except services.ServiceError as exc:
            raise CommandError(exc.message, returncode=FAILED) from None
        if no_follow:
            self.stdout.write(str(run.pk))
            self.stdout.flush()
            self.wait_for_embedded_execution()
            return
        progress = Progress(self.stderr, interactive=self.stderr.isatty())
        progress.started(run)
        try:
            finished = follow(run, progress, interval=max(0.05, interval))
        except KeyboardInterrupt:
            progress.close()
            raise CommandError(
                f"stopped following run {run.pk}; it goes on "
                f"(see {reverse('dashboard:run_detail', args=[run.pk])})",
                returncode=INTERRUPTED,
            ) from None
        # The task that finished the run may still be sending its last events.
        self.wait_for_embedded_execution(quiet=True)
        self.finish(finished, raw=raw)

    def wait_for_embedded_execution(self, *, quiet: bool = False) -> None:
        if not settings.SUPERSTEP_EMBEDDED:
            return
        if not quiet:
            self.stderr.write(
                "embedded mode: this process executes the run; waiting for it", style_func=_plain
            )
        # No timeout: the run is this process's work, and leaving early would strand it until
        # a server's lease sweeper takes it over.
        while not embedded.wait_for_background_tasks(timeout=60):
            pass

    def finish(self, run: WorkflowRun, *, raw: bool) -> None:
        if run.status == RunStatus.COMPLETED:
            output = run.output if raw else readable(run.output)
            self.stdout.write(json.dumps(output, indent=2, ensure_ascii=False))
            return
        detail = f": {run.error_type}: {run.error_message}" if run.error_message else ""
        raise CommandError(f"run {run.pk} {run.status}{detail}", returncode=FAILED)


def parse_input(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(f"--input is not JSON: {exc}", returncode=BAD_INPUT) from None


def acting_user(username: str) -> User | None:
    if not username:
        return None
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        raise CommandError(f"no active user named {username!r}", returncode=BAD_INPUT)
    return user


def _refusal(exc: services.ServiceError) -> str:
    lines = [exc.message, *(f"  {field}: {message}" for field, message in exc.errors.items())]
    return "\n".join(lines)


def follow(run: WorkflowRun, progress: Progress, *, interval: float) -> WorkflowRun:
    """Read the run until it reaches a terminal status; report each change to ``progress``."""
    while True:
        current = selectors.run_get(run.pk)
        if current is None:
            raise CommandError(f"run {run.pk} was deleted", returncode=FAILED)
        progress.update(current)
        if current.is_terminal:
            progress.close()
            return current
        sleep(interval)


class Progress:
    """The run's status and superstep: redrawn in place on a terminal, a line per change else."""

    def __init__(self, out: OutputWrapper, *, interactive: bool) -> None:
        self.out = out
        self.interactive = interactive
        self.spinner = itertools.cycle(SPINNER)
        self.shown: tuple[str, int] | None = None
        self.began = monotonic()
        self.drawn = False

    def started(self, run: WorkflowRun) -> None:
        self.write(
            f"run {run.pk} of {run.workflow_name} started; on the dashboard: "
            f"{reverse('dashboard:run_detail', args=[run.pk])}"
        )

    def update(self, run: WorkflowRun) -> None:
        state = (str(run.status), run.current_superstep)
        changed, self.shown = state != self.shown, state
        label = RunStatus(run.status).label.lower()
        if self.interactive:
            elapsed = monotonic() - self.began
            self.write(
                f"\r\x1b[K{next(self.spinner)} {label:<22} superstep {run.current_superstep:<5} "
                f"{elapsed:6.1f}s",
                ending="",
            )
            self.drawn = True
        elif changed:
            self.write(f"{label}, superstep {run.current_superstep}")
        if changed and run.status == RunStatus.WAITING:
            self.waiting(run)

    def waiting(self, run: WorkflowRun) -> None:
        pending = selectors.pending_approvals_by_run([run.pk]).get(run.pk, [])
        self.close()
        for approval in pending:
            self.write(
                f"  waiting for an answer to {approval.request_id} from executor "
                f"{approval.executor_id}: decide it on the dashboard "
                f"({reverse('dashboard:approval_inbox')})"
            )

    def close(self) -> None:
        if self.drawn:
            self.write("")
            self.drawn = False

    def write(self, text: str, *, ending: str = "\n") -> None:
        # Progress, not an error: without a style Django paints all of stderr red.
        self.out.write(text, style_func=_plain, ending=ending)
        self.out.flush()


def _plain(text: str) -> str:
    return text
