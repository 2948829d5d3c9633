"""What a handoff workflow tells its caller: that an agent handed over, and that an agent
answered without handing over and waits for the user.

Both travel outside the run (an event's data, a pending request kept in checkpoints), so both
are registered with the checkpoint codec when this module loads.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_framework import AgentResponse, Message

from ..registry import register_type

__all__ = ["HandoffAgentUserRequest", "HandoffSentEvent"]


@register_type
@dataclass
class HandoffSentEvent:
    """The data of a ``handoff_sent`` event: ``source`` handed the conversation to ``target``."""

    source: str
    target: str


@register_type
@dataclass
class HandoffAgentUserRequest:
    """The request a handoff workflow raises when an agent answers without handing over.

    Answer it with a ``list[Message]``: the user's next turn, or an empty list to end the
    conversation (``create_response`` and ``terminate`` build both).

    Attributes:
        agent_response: the agent's answer that the user is to reply to.
    """

    agent_response: AgentResponse

    @staticmethod
    def create_response(response: str | list[str] | Message | list[Message]) -> list[Message]:
        """The answer for a user who replies ``response``: text becomes user messages,
        messages are kept as they are.

        Raises:
            TypeError: ``response`` (or an item of it) is neither text nor a ``Message``.
        """
        if isinstance(response, str):
            return [Message(role="user", contents=[response])]
        if isinstance(response, Message):
            return [response]
        if not isinstance(response, list):
            raise TypeError("Response must be str, list of str, Message, or list of Message")
        messages: list[Message] = []
        for item in response:
            if isinstance(item, Message):
                messages.append(item)
            elif isinstance(item, str):
                messages.append(Message(role="user", contents=[item]))
            else:
                raise TypeError("List items must be either str or Message instances")
        return messages

    @staticmethod
    def terminate() -> list[Message]:
        """The answer that ends the conversation: no messages."""
        return []
