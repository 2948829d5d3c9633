"""Chat clients that answer without a model service: a scripted double and a tiny local model.

Tests and demos of agent workflows need Microsoft Agent Framework's real ``Agent``, tool loop,
approvals, declaration-only tools and streaming, but no network, no keys and no randomness.
These clients take exactly the place a provider's client takes: MAF's
``FunctionInvocationLayer``, ``ChatMiddlewareLayer`` and ``ChatTelemetryLayer`` over a raw
``BaseChatClient`` (the composition of ``OpenAIChatClient``). Everything above the model is
therefore MAF's own code; only the model's reply is ours.

- ``ScriptedChatClient`` replies from a script, one entry per model call, in order, and records
  what every call received, for tests that assert on exact conversations.
- ``LocalChatClient`` is a small deterministic "model" with generic rules (answer tool results,
  call the best-matching tool, fill a response schema, or digest the user's words), for demos
  and tests that should not have to script each turn.

Both stream MAF's ``ChatResponseUpdate`` chunks, report word-count usage and give every
response ids from a per-client counter, so two runs of the same conversation are identical.
"""

from __future__ import annotations

from .local_model import LocalChatClient
from .offline_chat import ScriptEntry, ScriptExhaustedError, ScriptReply, ToolCall
from .scripted_chat import ScriptedChatClient

__all__ = [
    "LocalChatClient",
    "ScriptEntry",
    "ScriptExhaustedError",
    "ScriptReply",
    "ScriptedChatClient",
    "ToolCall",
]
