"""A long conversation reads a page at a time: the run page shows its newest turns, each
"Show earlier messages" loads the page before, and the state tree folds it to a count."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from django.test import Client, override_settings

from dashboard import services
from dashboard.models import RunStatus, WorkflowRun
from dashboard.renderers.conversation import PAGE
from dashboard.web.checkpoints.fork_conversation import EDITABLE
from tests.helpers.fork_pages import page_url

pytestmark = pytest.mark.django_db(transaction=True)

Drive = Callable[..., WorkflowRun]
MESSAGES = 130  # the customer's and the assistant's, then the agent's own reply: 131 turns
EARLIER = re.compile(r'hx-get="([^"]+\?before=(\d+))"')


@pytest.fixture(autouse=True)
def long_threads() -> Iterator[None]:
    with override_settings(SUPERSTEP_WORKFLOW_MODULES=["tests.bench.thread_bench_flows"]):
        yield


@pytest.fixture
def thread(operator_client: Client, drive: Drive) -> WorkflowRun:
    run = drive(
        services.run_start,
        workflow_name="bench-long-thread",
        input=MESSAGES,
        user=operator_client.user,  # type: ignore[attr-defined]
    )
    assert run.status == RunStatus.COMPLETED, run.error_message
    return run


def turns(html: str) -> list[str]:
    return re.findall(r'<p class="chat-text">(turn \d+|So, where[^<]*|support:[^<]*)', html)


def test_the_run_page_shows_the_newest_page_and_loads_the_earlier_ones(
    operator_client: Client, thread: WorkflowRun
) -> None:
    page = operator_client.get(f"/runs/{thread.pk}/").content.decode()
    assert page.count('class="chat-turn') == PAGE
    read = turns(page)

    while found := EARLIER.search(page):
        url, before = found.groups()
        answer = operator_client.get(url, headers={"HX-Request": "true"})
        assert answer.status_code == 200
        page = answer.content.decode()
        earlier = turns(page)
        assert len(earlier) == min(PAGE, int(before))
        read = earlier + read

    assert len(read) == MESSAGES + 1 and len(set(read)) == len(read)
    assert read[0].startswith("turn 0") and read[-1].startswith("support:")


def test_a_page_of_turns_refuses_what_is_not_a_turn_number_and_an_unknown_agent(
    operator_client: Client, thread: WorkflowRun
) -> None:
    base = page_url(thread, thread.current_superstep) + "conversations/"

    assert operator_client.get(base + "support/?before=abc").status_code == 400
    assert operator_client.get(base + "support/?before=-1").status_code == 400
    assert operator_client.get(base + "support/?before=99999999999").status_code == 400
    assert operator_client.get(base + "history/?before=5").status_code == 404
    assert operator_client.get(base + "nobody/?before=5").status_code == 404


def test_the_checkpoint_page_folds_a_long_conversation_in_its_state_tree(
    operator_client: Client, thread: WorkflowRun
) -> None:
    page = operator_client.get(page_url(thread, thread.current_superstep)).content.decode()

    assert "131 messages: the conversation card reads them as a chat" in page
    # The chat's page, and the fork editor's newest messages of each copy of the thread.
    assert len(re.findall(r"turn \d+: ", page)) <= PAGE + 2 * EDITABLE
