"""The role wrapper: prompts rendered from roles/, answers validated, timeouts that fire for
async and sync responders alike, retries for faults, and unknown responders refused."""

import time
from pathlib import Path

import pytest

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.tasks.agents import ROLES, RoleFailed, ask, check_agents, render_prompt

pytestmark = pytest.mark.slow

REVIEW_CONTEXT = {"subject": "lane t", "candidates": [], "max_spread": 0.25, "min_samples": 5}


def ask_reviewer(tmp_path, responder, **options):
    """Ask the reviewer from inside a flow run, as the lanes do."""
    from prefect import flow

    @flow(name="ask-reviewer")
    def asking():
        return ask(
            "reviewer",
            inputs={"candidates": []},
            context=REVIEW_CONTEXT,
            record_dir=tmp_path,
            agents={"reviewer": responder},
            **options,
        )

    return asking()


def test_every_role_has_a_prompt_and_a_deterministic_responder():
    for role, spec in ROLES.items():
        assert spec.responder.__module__ == "kernel_bakeoff.tasks.agents.without_model"
        check_agents({role: f"kernel_bakeoff.tasks.agents.without_model:{spec.responder.__name__}"})
        assert (Path(__file__).parents[1] / "roles" / f"{spec.prompt}.md").is_file()
    text = render_prompt("reviewer", REVIEW_CONTEXT)
    assert "lane t" in text and "(none)" in text


def test_unknown_roles_and_unloadable_responders_are_refused():
    with pytest.raises(BadInput, match="unknown role 'critic'"):
        check_agents({"critic": "kernel_bakeoff.tasks.agents.without_model:review"})
    with pytest.raises(BadInput, match="cannot load responder"):
        check_agents({"reviewer": "kernel_bakeoff.tasks.agents.without_model:no_such_thing"})


def test_async_responder_that_never_answers_is_given_up(prefect_api, tmp_path):
    started = time.monotonic()
    with pytest.raises(RoleFailed, match="no valid answer after 1 attempt.*timeout"):
        ask_reviewer(tmp_path, "tests.role_doubles:never_answers_async", timeout_s=1, retries=0)
    assert time.monotonic() - started < 60  # its 1 s timeout, not the responder's hour


def test_answer_that_does_not_validate_fails_the_role(prefect_api, tmp_path):
    with pytest.raises(RoleFailed, match="ValidationError"):
        ask_reviewer(tmp_path, "tests.role_doubles:answers_nonsense", retries=0)


def test_fault_is_retried_and_the_answer_recorded(prefect_api, tmp_path):
    review = ask_reviewer(
        tmp_path, "tests.role_doubles:fails_once_then_reviews", retries=2, retry_delay_s=0.1
    )
    assert review.decision == "nothing-to-review"
    assert (tmp_path / "reviewer.prompt.md").read_text().startswith("You are the reviewer")
    assert '"nothing-to-review"' in (tmp_path / "reviewer.answer.json").read_text()
