"""deploy/spark_jvm.py: the short jobs' driver options (pure: paths and strings)."""
from deploy.spark_jvm import FLAGS, submit_opts, with_submit_opts


def test_the_archive_is_named_only_when_it_exists(tmp_path):
    archive = tmp_path / "spark-driver.jsa"
    assert submit_opts(archive) == " ".join(FLAGS)
    archive.write_bytes(b"x")
    assert submit_opts(archive).endswith(f" -XX:SharedArchiveFile={archive}")
    assert "-XX:TieredStopAtLevel=1" in submit_opts(archive) and "-XX:+UseSerialGC" in submit_opts(archive)


def test_an_environment_with_its_own_options_keeps_them(tmp_path):
    assert with_submit_opts({"SPARK_SUBMIT_OPTS": ""}, tmp_path / "a.jsa") == {"SPARK_SUBMIT_OPTS": ""}
    assert with_submit_opts({}, tmp_path / "a.jsa") == {"SPARK_SUBMIT_OPTS": " ".join(FLAGS)}
