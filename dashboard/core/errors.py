"""The errors services raise; ``status`` is what the HTTP layers answer with."""

from __future__ import annotations

__all__ = ["Conflict", "Forbidden", "InvalidInput", "LeaseLost", "NotFound", "ServiceError"]


class ServiceError(Exception):
    """A refused operation; ``status`` is the HTTP status the API answers with."""

    status = 400

    def __init__(self, message: str, *, errors: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors or {}


class InvalidInput(ServiceError):
    status = 400


class NotFound(ServiceError):
    status = 404


class Conflict(ServiceError):
    """The operation does not fit the object's current state (decided, finished, running)."""

    status = 409


class LeaseLost(Exception):
    """This worker no longer owns the run (it expired, was taken over, or the run was
    cancelled); it must stop without writing anything."""


class Forbidden(ServiceError):
    """The user's role does not allow this action (the refusal is in the audit log)."""

    status = 403
