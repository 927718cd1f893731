"""The test bed's HDFS block size: 1 MiB (small quotas work), or a production-sized one a benchmark asks for
through REALHBASE_DFS_BLOCKSIZE; anything else is refused by name."""
import pytest

from realhbase import config


def written(monkeypatch, tmp_path, value: str | None) -> dict[str, str]:
    if value is None:
        monkeypatch.delenv("REALHBASE_DFS_BLOCKSIZE", raising=False)
    else:
        monkeypatch.setenv("REALHBASE_DFS_BLOCKSIZE", value)
    return {k: v for k, v, _ in config.hdfs_site(tmp_path, {"namenode": 1, "namenode_http": 2})}


def test_the_block_size_is_the_test_beds_unless_a_production_size_is_asked_for(monkeypatch, tmp_path):
    assert written(monkeypatch, tmp_path, None)["dfs.blocksize"] == str(1 << 20)
    assert written(monkeypatch, tmp_path, str(128 << 20))["dfs.blocksize"] == "134217728"


@pytest.mark.parametrize("bad", ["128m", "1000", str((1 << 20) + 1)])
def test_a_block_size_hdfs_would_refuse_is_refused_by_name(monkeypatch, tmp_path, bad):
    with pytest.raises(ValueError, match="REALHBASE_DFS_BLOCKSIZE"):
        written(monkeypatch, tmp_path, bad)
