"""What a workflow's tools tell the dashboard, through MAF's own ``additional_properties`` (so
the workflow still runs on MAF unchanged).

``EDITABLE_ARGUMENTS``: approvers may change the arguments of a call to this tool before they
approve it; the tool then runs with theirs:
``@tool(approval_mode="always_require", additional_properties={EDITABLE_ARGUMENTS: True})``.
"""

from __future__ import annotations

__all__ = ["EDITABLE_ARGUMENTS"]

EDITABLE_ARGUMENTS = "superstep_editable_arguments"
