"""docs/secured-clusters.md tells an operator which keys to set on secured clusters; each key it names is one the
secured test bed (`realhbase up --secure`, where the toolkit's security is shown against real HBase and HDFS)
really sets, so the page says what ran (issue 29 part 5). The few it names and the bed leaves alone are listed
here with why. The site files are built as `up --secure` builds them (realhbase/config.py, realhbase/secure.py):
nothing is started."""
import re
from pathlib import Path

from realhbase import config, secure

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "secured-clusters.md"
SECTION = "## What to set on the clusters"
KEY = re.compile(r"^(?:hbase|hadoop|dfs)\.[A-Za-z0-9_.\-]+[A-Za-z0-9]$")
# Named on the page, not set by the bed:
NOT_SET = {
    "hadoop.security.instrumentation.requires.admin": "the page's condition ('if the info servers restrict "
                                                      "instrumentation to admins'); the bed keeps the default",
    "hbase.security.authentication.spnego.admin.users": "only under that condition",
    "dfs.permissions.superusergroup": "named for its default, supergroup, which the bed keeps and maps the "
                                      "toolkit into",
}


def page_keys() -> set[str]:
    text = PAGE.read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start:end if end >= 0 else None]
    keys = set()
    for quoted in re.findall(r"`([^`]+)`", section):  # one key, or several in one span ("a=b, c=d")
        keys |= {part for part in re.split(r"[,=\s]+", quoted) if KEY.match(part)}
    return keys


def bed_keys(tmp_path: Path) -> set[str]:
    ports = {name: 20000 + i for i, name in enumerate(config.PORT_NAMES)}
    keys = set()
    for name in ("dc1", "dc2"):
        cluster = tmp_path / name
        for props in (config.hbase_site(name, cluster, "127.0.0.1:2181", ports, secure.server_host(name)),
                      config.core_site(cluster, ports), config.hdfs_site(cluster, ports),
                      *secure.site_overlay(name, tmp_path, cluster).values()):
            keys |= {key for key, _value, _why in props}
    return keys


def test_every_key_the_page_names_is_one_the_secured_bed_sets(tmp_path):
    named = page_keys()
    assert len(named) >= 25, sorted(named)  # the section was found and read
    assert sorted(named - bed_keys(tmp_path) - set(NOT_SET)) == []


def test_the_keys_left_unset_are_still_named_on_the_page(tmp_path):
    named = page_keys()
    assert sorted(set(NOT_SET) - named) == []  # a stale exception here would hide a key the page dropped
    assert not set(NOT_SET) & bed_keys(tmp_path)  # and one the bed came to set needs no exception
