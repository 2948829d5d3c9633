"""Where checkpoints are written to and read from the database.

* ``storage``: ``DjangoCheckpointStorage``, the engine's ``CheckpointStorage`` over the
  dashboard's tables (what the engine and the API read through);
* ``writes``: the one write path (``save_split``): checkpoint row, new blobs and blob uses
  in one transaction (one statement on PostgreSQL), with a per-process cache of blobs known
  to exist;
* ``blob_uses``: which lineage uses which blob, and collecting blobs nobody uses;
* ``documents``: a stored checkpoint's whole document, its blobs joined back in.

A run's checkpoint is committed together with its events and progress by
``services.checkpoint_commit``, through the storage's ``write`` (the worker's storage
overrides ``commit``): on PostgreSQL ``writes.commit_split``, the same statement with the
run's fenced update and its events in it.
"""
