"""The GPU acceptance's peers process: what it says about the harness's compiler cache (no GPU)."""

from benchmarks.acceptance_peers import cache_files, cache_use


def test_cache_use_names_the_files_a_peer_added_and_the_tuned_configs(tmp_path):
    from torch._dynamo.utils import counters

    (tmp_path / "inductor" / "ab").mkdir(parents=True)
    (tmp_path / "inductor" / "ab" / "kernel.py").write_text("# compiled by the harness\n")
    before = cache_files(str(tmp_path))
    assert before == {"inductor/ab/kernel.py"}
    (tmp_path / "inductor" / "ab" / "kernel.best_config").write_text("{}")
    (tmp_path / "inductor" / "ab" / "other.py").write_text("# compiled again here\n")
    counters.clear()
    counters["inductor"]["fxgraph_cache_hit"] += 1
    counters["inductor"]["fxgraph_cache_miss"] += 2
    used = cache_use(before, cache_files(str(tmp_path)))
    assert used == {
        "fxgraph_hits": 1,
        "fxgraph_misses": 2,
        "files_added": 2,
        "best_configs_added": ["inductor/ab/kernel.best_config"],
    }
    counters.clear()


def test_no_cache_has_no_files(tmp_path):
    assert cache_files(None) == set()
    assert cache_files(str(tmp_path / "absent")) == set()
