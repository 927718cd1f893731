"""The switching writer's bookkeeping (demo/switching_writer.py): pure functions over a WriterLog."""
from demo.switching_writer import Ack, WriterLog, freeze_figures, lost_writes


def _log(*acks):
    return WriterLog(acks=[Ack(cluster, "t", row, accepted - 0.01, accepted) for cluster, row, accepted in acks])


def test_lost_writes_names_the_acknowledged_rows_a_cluster_lacks():
    log = _log(("dc1", b"a", 1.0), ("dc1", b"b", 2.0), ("dc2", b"c", 3.0))
    assert lost_writes(log, lambda table, keys: {b"a", b"c"}) == [("t", b"b")]


def test_lost_writes_before_an_instant_ignores_newer_acks_not_shipped_yet():
    log = _log(("dc2", b"a", 1.0), ("dc2", b"b", 2.0), ("dc2", b"c", 3.0))
    on_source = lambda table, keys: {b"a"}  # noqa: E731 - the reverse peer has shipped only the first
    assert lost_writes(log, on_source, accepted_before=2.0) == []
    assert lost_writes(log, on_source, accepted_before=2.5) == [("t", b"b")]
    assert lost_writes(log, on_source) == [("t", b"b"), ("t", b"c")]


def test_freeze_figures_measure_from_the_old_clusters_last_ack_to_the_new_ones_first():
    log = _log(("dc1", b"a", 1.0), ("dc1", b"b", 2.0), ("dc2", b"c", 5.5), ("dc1", b"d", 6.0))
    figures = freeze_figures(log, "dc1", "dc2")
    assert figures["last_old_accept"] == 2.0 and figures["first_new_accept"] == 5.5
    assert figures["writes_accepted_by_both"] == 1 and figures["write_freeze_s"] == 3.5
