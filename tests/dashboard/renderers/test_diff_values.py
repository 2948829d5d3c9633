"""Checkpoint values as the diff writes them (``dashboard/renderers/diff_values.py``): in the JSON
notation the trees beside it use, never Python's reprs."""

from __future__ import annotations

from dashboard.renderers import diff_values


def test_scalars_read_as_json() -> None:
    assert (
        diff_values.text({"a": None, "b": True, "c": False}) == '{"a": null, "b": true, "c": false}'
    )


def test_a_model_reads_by_its_class_with_json_fields() -> None:
    task = {"$t": "model", "name": "pkg.Task", "v": {"done": False, "note": None}}
    assert diff_values.text(task) == "Task(done=false, note=null)"
    lines, _ = diff_values.pretty([task], width=20)
    assert "        done=false," in lines and "        note=null," in lines
