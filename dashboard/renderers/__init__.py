"""Pure renderers for the pages: plain data in, plain data out, no Django and no database.

They may import only the engine and the standard library (the import-layer test holds them in
the lowest layer, and a test checks that importing them loads no Django), so they are unit
tested without a settings module and cannot reach a request, a template or a query.

* ``graph_layout``: the layered left-to-right layout of a workflow graph;
* ``graph_geometry``: its coordinates and SVG path data;
* ``diff_values``: checkpoint values as the operator thinks of them, never the codec's tags;
* ``diff_match``: who each item of a list is, and where it went;
* ``jsondiff``: the structural diff of two checkpoint values;
* ``checkpoint_diff``: a checkpoint diff grouped as the inspector shows it;
* ``workflow_graph``: a workflow's description read as a graph, and its layout;
* ``gantt``: the geometry of the run page's per-executor timeline;
* ``conversation``: an agent executor's conversation read as a chat, a page at a time;
* ``orchestration``: handoffs, group chat rounds and Magentic plans and ledgers, from events.
"""
