"""The import graph's walls, read from source (tests/import_graph.py): no circles, no import up
the floor of rooms, and the harness (scripts/) never imports the orchestration side, which it
must not need on a bare GPU box and must not hand to the untrusted code it runs."""

from tests.import_graph import (
    FLOOR,
    arrows_up,
    circles,
    edges,
    modules,
    room,
    room_graph,
    two_way_rooms,
    unexplained_function_imports,
)


def test_no_import_circles_in_flows_tasks_scripts():
    assert circles() == []


def test_the_rooms_import_one_way():
    # A room (tasks/<room>/, flows, scripts) that imports another which imports it back, or
    # round a longer circle of rooms, is one room in several places: what it needs moves down,
    # or the caller above passes it in. Without such circles the rooms stand in floors, every
    # import pointing down.
    assert two_way_rooms() == []
    assert circles(room_graph()) == []


def test_no_room_imports_a_room_above_it():
    # The floor (FLOOR in tests/import_graph.py, bottom to top) is the order the rooms stand
    # in; an import from a room to one above it, even inside a function, is a wall broken.
    # A new room is placed on the floor where its imports allow.
    assert sorted({room(m) for m in modules()} - set(FLOOR)) == []
    assert arrows_up() == []


def test_an_import_inside_a_function_says_why():
    # With no circle of rooms, an import inside a function is there for a reason of its own
    # (a second of torch its callers skip, a command's start-up, a module that imports this
    # one back at run time, a boxed child that needs less, a file also run as a bare script):
    # the comment beside it names it.
    assert [w for p in ("tasks", "flows", "scripts") for w in unexplained_function_imports(p)] == []


def test_the_harness_imports_nothing_of_the_orchestration_side():
    crossing = {
        module: sorted(t for t in targets if not t.startswith("scripts"))
        for module, targets in edges().items()
        if module.startswith("scripts")
    }
    assert {m: t for m, t in crossing.items() if t} == {}


def test_the_graph_sees_a_circle_and_a_lazy_import():
    # The checker itself: a circle closed by an import inside a function is found.
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    # tasks/agents/roles/lane.py imports the lane loop inside `model_lane`
    assert "tasks.agents.loop" in edges()["tasks.agents.roles.lane"]
    assert two_way_rooms({"tasks.a.x": {"tasks.b.y"}, "tasks.b.z": {"tasks.a.w"}}) == [
        ("tasks.a", "tasks.b")
    ]
    # An import up the floor is found, and one of a room not on it counts as up.
    up = {"tasks.models.x": {"tasks.agents.y", "scripts.z"}, "flows.a": {"tasks.new.b"}}
    assert arrows_up(up) == [("flows.a", "tasks.new.b"), ("tasks.models.x", "tasks.agents.y")]


def test_an_import_moves_no_key_and_the_command_moves_it_first(tmp_path):
    """No side effects on import: the API key stays where it is until an entry point (the
    command's main, a flow) takes it; the command takes it before anything it starts."""
    import subprocess
    import sys

    from tests.import_graph import ROOT

    code = (
        "import os\n"
        "os.environ['ANTHROPIC_API_KEY'] = 'sk-ant-walls'\n"
        "import kernel_bakeoff.tasks.agents, kernel_bakeoff.tasks.agents.messages\n"
        "import kernel_bakeoff.flows.bakeoff, kernel_bakeoff.flows.cli, kernel_bakeoff.flows.lane\n"
        "print('after imports', os.environ.get('ANTHROPIC_API_KEY'))\n"
        "from kernel_bakeoff.flows.cli import main\n"
        f"code = main(['check', {str(tmp_path / 'none')!r}, {str(tmp_path / 'none')!r}])\n"
        "print('after main', code, os.environ.get('ANTHROPIC_API_KEY'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("after")]
    assert lines == ["after imports sk-ant-walls", "after main 2 None"], (done.stdout, done.stderr)
