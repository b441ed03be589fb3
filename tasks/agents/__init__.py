"""Role agents: the roles, the one task every role is asked through, and the model drivers.

Where things go:

    a role     a module in tasks/agents/roles/ declaring `ROLE = Role(...)` (its prompt, its
               inputs model, output model, deterministic and model-driven responders, timeout,
               retries), plus its prompt roles/<prompt>.md and, for a model-driven role, its
               output model in outputs.py. The registry finds the module; nothing else changes.
               (oracle_freezer and update_experience are model conversations that are not asked
               through `ask`: freezer.py and experience.py call `conversation.talk` directly.)
    a driver   a module with `converse(...)` as `drivers.Driver` says, named in `drivers.DRIVERS`
               and in `AgentSettings.driver`'s Literal.

The room:

    roles/       one module per role: planner, lane (author, optimizer), reviewer,
                 op_benchmarker, reporter
    registry     `Role`, the registry of roles gathered from roles/, which responder answers
    inputs       `RoleInputs`, the base of each role's typed inputs
    request      `RoleRequest`, what a responder is handed
    role_task    ask(): a role's prompt rendered, its responder run as a Prefect task, its answer
                 validated (the deterministic responders live in tasks.agents.without_model)
    prompts      roles/<prompt>.md rendered with jinja2
    conversation one model conversation: transcript opened, driver run, transcript closed
    drivers      the `Driver` protocol and the drivers by name
    messages     the Messages API driver (tool use, structured answers, retries)
    claude_code  the Claude Code CLI driver, behind a local proxy that holds the key
    settings     model, budgets and retries in one place
    loop         the lane loop of the author and optimizer roles
    explore      a round's N conversations at once, each with its share of the checks
    memory       what each round starts from: the best, lessons, next ideas, dead ends
    sheet        the task sheet's measurable part (roofline, tolerance, device, card facts)
    quick        the quick check: correctness only, small sizes, untimed, no receipt
    digest       the profile digest's table; profile_parse reads ncu, rocprofv3, torch.profiler
    review       the reviewer's model conversation (its diff, its profile digest)
    experience   update_experience: one learned card after a measured win
    freezer      oracle_freezer: an op spec for a kernel directory that has none (Freeze's hook)
    outputs      the output model of every model-driven role (its `submit` tool's schema)
    tools        file, command, check, quick-check and profile tools confined to the workspace
    workspace    the lane workspace, its git history, the iterations log and the receipts
    transcript   transcripts, tokens and cost per role call and per lane
    knowledge    curated cards for a lane, learned cards and the archive of winning variants

Importing this package changes nothing: each entry point (the `bakeoff` command's main, the
first line of every flow) moves ANTHROPIC_API_KEY out of the environment (`tasks.run.key.take_key`),
so that nothing its process starts afterwards inherits it.
"""

# Each name loads its module on first use: `ask` brings Prefect, the registry every role's
# module, so code that needs only the settings or the spec hook (`bakeoff freeze`
# on a directory without a spec) stays light.
_LAZY = {
    "RoleInputs": "inputs",
    "RoleRequest": "request",
    "ROLES": "registry",
    "Role": "registry",
    "check_agents": "registry",
    "deterministic": "registry",
    "load_responder": "registry",
    "responder_for": "registry",
    "render_prompt": "prompts",
    "RoleFailed": "role_task",
    "ask": "role_task",
}
__all__ = list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"kernel_bakeoff.tasks.agents.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'kernel_bakeoff.tasks.agents' has no attribute {name!r}")
