"""A stored checkpoint's whole document, as the codec's JSON, for everyone who reads one.

Pages and the API read it through ``selectors.checkpoint_document`` (and mask it,
``dashboard.access.masking``); services that need the values themselves (revealing a masked
field, forking with edits) read it here.
"""

from __future__ import annotations

import json
from typing import Any

from dashboard.checkpoints.blob_uses import ref_digests
from dashboard.models import Checkpoint, CheckpointBlob
from workflows import CheckpointDecodeError
from workflows.storage import join_document

__all__ = ["checkpoint_document"]


def checkpoint_document(checkpoint: Checkpoint) -> dict[str, Any]:
    """The checkpoint's whole document in the codec's JSON: its record with every blob (and
    every long conversation's chunks) put back. Nothing is decoded, so it reads even when the
    types it names are gone; a missing blob shows as ``{"$missing": ...}`` where it belongs."""
    record = checkpoint.document if isinstance(checkpoint.document, dict) else {}
    # Blobs are stored as the JSON text the codec wrote (the bytes its digest is of).
    blobs = {
        digest: json.loads(text)
        for digest, text in CheckpointBlob.objects.filter(
            digest__in=ref_digests(record.get("blob_refs"))
        ).values_list("digest", "data")
    }

    def blob(digest: str) -> Any:
        return blobs.get(digest, {"$missing": f"blob {digest} is missing"})

    try:
        return join_document({"blob_refs": [], **record}, blob)
    except CheckpointDecodeError:
        doc = {k: v for k, v in record.items() if k not in ("blob_refs", "pending_request_ids")}
        return {"state": {}, "executor_states": {}, **doc}
