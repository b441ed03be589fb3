"""One module per role: its declaration (`ROLE = Role(...)`), its inputs model and, where a
model answers it, its model-driven responder (or a thin call into the module that holds it).

Modules here are imported when the registry loads (tasks/agents/registry.py): keep their
top-level imports light and load a responder's machinery inside the responder.
"""
