"""Where checkpoints are written to and read from the database.

* ``storage``: ``DjangoCheckpointStorage``, the engine's ``CheckpointStorage`` over the
  dashboard's tables (what the engine and the API read through);
* ``writes``: the one write path (``save_split``): checkpoint row, new blobs and blob uses
  in one transaction, with a per-process cache of blobs known to exist;
* ``blob_uses``: which lineage uses which blob, and collecting blobs nobody uses;
* ``async_connection``: the psycopg async connection the storage's async path uses.

A run's checkpoint is committed together with its events and progress by
``services.checkpoint_commit``, which calls ``writes.save_split``.
"""
