"""realhbase/rpclink.py's pure parts: the exact `tc` commands of the kernel's WAN link on the loopback, which packets
each direction takes, how its counters are read, and the refusal to replace a root qdisc that is not ours (no
command is run here: the link itself is exercised by bench/bench_verify_wan.py --data-path native)."""
from __future__ import annotations

import json
import subprocess

import pytest

from realhbase import rpclink


def test_each_datacenter_reaches_the_other_from_an_address_no_bed_uses():
    assert rpclink.client_address("dc1") == "127.41.0.1" and rpclink.client_address("dc2") == "127.41.0.2"
    with pytest.raises(ValueError, match="no datacenter 'dc3' on the link"):
        rpclink.client_address("dc3")


def test_the_link_is_an_htb_root_without_default_class_and_a_shaped_class_each_way():
    htb = ["tc", "qdisc", "add", "dev", "lo", "root", "handle", "7e41:", "htb", "direct_qlen", "100000"]
    shaped = ["htb", "rate", "160000kbit", "ceil", "160000kbit", "burst", "256k", "cburst", "256k", "quantum", "65536"]
    fifo = ["bfifo", "limit", str(256 << 20)]

    def u32(field, addr, classid):
        return ["tc", "filter", "add", "dev", "lo", "parent", "7e41:", "protocol", "ip", "prio", "1", "u32", "match",
                "ip", field, f"{addr}/32", "flowid", classid]

    assert rpclink.commands(160) == [
        htb,
        ["tc", "class", "add", "dev", "lo", "parent", "7e41:", "classid", "7e41:1", *shaped],
        ["tc", "qdisc", "add", "dev", "lo", "parent", "7e41:1", *fifo],
        ["tc", "class", "add", "dev", "lo", "parent", "7e41:", "classid", "7e41:2", *shaped],
        ["tc", "qdisc", "add", "dev", "lo", "parent", "7e41:2", *fifo],
        # dc1 -> dc2: dc1's jobs' requests to dc2's cluster, and dc1's cluster's answers to dc2's jobs
        u32("src", "127.41.0.1", "7e41:1"), u32("dst", "127.41.0.2", "7e41:1"),
        # dc2 -> dc1: the reverse
        u32("src", "127.41.0.2", "7e41:2"), u32("dst", "127.41.0.1", "7e41:2"),
    ]
    assert rpclink.commands(0.5)[1][10:14] == ["rate", "500kbit", "ceil", "500kbit"]
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="positive number of megabits/s"):
            rpclink.commands(bad)
    assert rpclink.removal() == ["tc", "qdisc", "del", "dev", "lo", "root", "handle", "7e41:"]
    assert rpclink.rate_commands(16) == [
        ["tc", "class", "change", "dev", "lo", "parent", "7e41:", "classid", f"7e41:{n}", "htb", "rate", "16000kbit",
         "ceil", "16000kbit", "burst", "256k", "cburst", "256k", "quantum", "65536"] for n in (1, 2)]
    with pytest.raises(ValueError, match="positive number of megabits/s"):
        rpclink.rate_commands(0)


# What iproute2 6.1 prints for `tc -s -j qdisc show dev lo` with the link installed (one run's, shortened).
SHOWN = [
    {"kind": "htb", "handle": "7e41:", "root": True, "options": {"default": "0", "direct_qlen": 100000},
     "bytes": 63604920, "packets": 3579},
    {"kind": "bfifo", "handle": "8005:", "parent": "7e41:1", "options": {"limit": 268435456}, "bytes": 31490354,
     "packets": 501, "drops": 0},
    {"kind": "bfifo", "handle": "8006:", "parent": "7e41:2", "options": {"limit": 268435456}, "bytes": 17368,
     "packets": 263, "drops": 0},
    {"kind": "bfifo", "handle": "9001:", "parent": "1:1", "bytes": 5},  # someone else's: not the link's
]


def test_the_bytes_each_way_are_the_counters_of_each_classs_fifo():
    assert rpclink.parse_stats(json.dumps(SHOWN)) == {"dc1->dc2": 31490354, "dc2->dc1": 17368}
    assert rpclink.parse_stats(json.dumps([{"kind": "noqueue", "handle": "0:", "root": True}])) == {}
    assert rpclink.parse_stats("") == {}


def test_the_root_qdisc_is_read_from_tcs_json():
    assert rpclink.root_qdisc(json.dumps(SHOWN)) == {"kind": "htb", "handle": "7e41:"}
    assert rpclink.root_qdisc('[{"kind":"noqueue","handle":"0:","root":true,"refcnt":2,"options":{}}]') == {
        "kind": "noqueue", "handle": "0:"}
    assert rpclink.root_qdisc("[]") is None


def test_install_refuses_to_replace_a_root_qdisc_that_is_there_and_runs_nothing(monkeypatch):
    ran = []

    def tc(args, check=True):
        ran.append(args)
        return subprocess.CompletedProcess(args, 0, json.dumps([{"kind": "tbf", "handle": "1:", "root": True}]), "")

    monkeypatch.setattr(rpclink, "_tc", tc)
    monkeypatch.setattr(rpclink.os, "geteuid", lambda: 0)
    with pytest.raises(rpclink.LinkError, match=r"lo has a root qdisc already \(tbf 1:\): not replacing it"):
        rpclink.install(160)
    assert ran == [["tc", "-j", "qdisc", "show", "dev", "lo"]]
