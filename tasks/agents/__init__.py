"""Role agents: the one task wrapper every role goes through, and the model-driven responders.

    wrapper      ask(): a role's prompt rendered, its responder run as a Prefect task, its
                 answer validated (the deterministic responders live in tasks.roles_default)
    settings     model, budgets and retries in one place; the one holder of the API key
    messages     the Messages API driver (tool use, structured answers, retries)
    claude_code  the Claude Code CLI driver, behind a local proxy that holds the key
    loop         the lane loop of the author and optimizer roles
    review       the reviewer's and update_experience's model conversations
    freezer      oracle_freezer: an op spec for a kernel directory that has none (Freeze's hook)
    judgment     op_benchmarker (the author plan) and reporter (prose, figures checked)
    tools        file, command, check and profile tools confined to the lane workspace
    workspace    the lane workspace, its git history, the iterations log and the receipts
    transcript   transcripts, tokens and cost per role call and per lane
    knowledge    curated cards for a lane, learned cards and the archive of winning variants

Importing this package moves ANTHROPIC_API_KEY out of the environment (`settings.take_key`), so
that nothing this process starts afterwards inherits it.
"""

from tasks.agents.settings import take_key

take_key()

# The wrapper (and with it Prefect) loads on first use of one of its names, so code that needs
# only the settings or the spec hook (`bakeoff freeze` on a directory without a spec) stays light.
_WRAPPER = (
    "ROLES",
    "Deadline",
    "DeadlineExceeded",
    "RoleFailed",
    "RoleRequest",
    "RoleSpec",
    "ask",
    "check_agents",
    "load_responder",
    "render_prompt",
    "responder_for",
)
__all__ = list(_WRAPPER)


def __getattr__(name: str):
    if name in _WRAPPER:
        from tasks.agents import wrapper

        return getattr(wrapper, name)
    raise AttributeError(f"module 'tasks.agents' has no attribute {name!r}")
