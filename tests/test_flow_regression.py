"""The nightly regression flow: a suite file, one bake-off per kernel, one summary artifact."""

import pytest

from kernel_bakeoff.scripts.errors import BadInput

from .conftest import EXAMPLES, ROOT
from .role_doubles import QUICK

pytestmark = pytest.mark.slow


def test_shipped_suite_lists_shipped_examples():
    from kernel_bakeoff.flows.regression import load_suite

    kernels = load_suite(ROOT / "deployments" / "suites" / "nightly.toml")
    assert kernels and all(EXAMPLES.as_posix() in k["kernel_path"] for k in kernels)
    assert all(k["mode"] == "bakeoff" for k in kernels)


@pytest.mark.parametrize(
    "text, message",
    [
        ("[[kernels]]\nmode = 'bakeoff'\n", "needs a path"),
        ("[[kernels]]\npath = 'x'\nspeed = 'max'\n", "unknown keys"),
        ("[defaults]\nmode = 'optimize'\n", "lists no [[kernels]]"),
        ("[[kernels]\n", "not valid TOML"),
    ],
)
def test_malformed_suites_are_refused(tmp_path, text, message):
    from kernel_bakeoff.flows.regression import load_suite

    suite = tmp_path / "suite.toml"
    suite.write_text(text)
    with pytest.raises(BadInput, match=message.replace("[", r"\[")):
        load_suite(suite)


def test_nightly_full_bakeoff_runs_every_kernel_and_summarises(prefect_api, tmp_path, monkeypatch):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from kernel_bakeoff.flows.regression import regression

    monkeypatch.setenv("BAKEOFF_LOCK_DIR", str(tmp_path / "locks"))
    suite = tmp_path / "suite.toml"
    suite.write_text(
        "[defaults]\nmode = 'optimize'\nbudget = 1\nfull_bakeoff = true\n\n"
        f"[[kernels]]\npath = '{EXAMPLES / 'rmsnorm_torch'}'\n\n"
        f"[[kernels]]\npath = '{tmp_path / 'missing_op'}'\n"
    )
    rows = regression(
        str(suite), runs_root=str(tmp_path / "nightly"), agents=QUICK, artifact_key="test-nightly"
    )
    assert [r["status"] for r in rows] == ["no-history", "failed"]
    assert [r["bakeoff"]["status"] for r in rows] == ["completed", "failed"]
    assert "no such file or directory" in rows[1]["bakeoff"]["reason"]
    summary = next((tmp_path / "nightly").glob("*/summary.md")).read_text()
    assert "rmsnorm" in summary and "missing_op" in summary
    with get_client(sync_client=True) as client:
        artifact = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["test-nightly"]))
        )[0]
    assert artifact.data == summary
    # the fresh bake-off went into the history, where the next night will look
    from kernel_bakeoff.tasks.history import records

    recorded = records.runs(records.history_url(tmp_path / "nightly"), "rmsnorm")
    assert len(recorded) == 1 and recorded[0].kind == "bakeoff"
