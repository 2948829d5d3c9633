"""The checkpoint inspector and the fork editor on it.

* ``views``: state trees, the diff against another checkpoint, one value side by side, earlier
  pages of an agent's conversation, the JSON download, and the resume and fork actions;
* ``fork_conversation``: conversations in the fork editor, as messages;
* ``fork_form``: the fork editor's form over a checkpoint, read back into a fork's edits;
* ``fork_editor``: one value read back from what the editor showed, as codec JSON.
"""
