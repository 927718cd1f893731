"""The in-freeze drain decision (`replication/wal_drain.py`): marked WALs, queues afterwards, the exact verdict."""
from __future__ import annotations

from hbase_migration.clusters.zk import QueueInfo, parse_queue_id
from hbase_migration.replication.wal_drain import QueuesSeen, WalDrain, decide, mark

RS1 = "rs1.dc-a,16020,1700000000001"
RS2 = "rs2.dc-a,16020,1700000000002"
DEAD = "rs9.dc-a,16020,1600000000009"
OLD1, NEW1 = "rs1.dc-a%2C16020%2C1700000000001.1700000000100", "rs1.dc-a%2C16020%2C1700000000001.1700000009000"
OLD2, NEW2 = "rs2.dc-a%2C16020%2C1700000000002.1700000000200", "rs2.dc-a%2C16020%2C1700000000002.1700000009100"
DEADWAL = "rs9.dc-a%2C16020%2C1600000000009.1600000000300"


def queue(server: str, wals: list[str], queue_id: str = "p1") -> QueueInfo:
    parsed = parse_queue_id(queue_id)
    return QueueInfo(server, queue_id, parsed.peer_id, parsed.recovered, list(parsed.dead_servers),
                     [(w, 0) for w in wals])


def seen(*queues: QueueInfo, live=(RS1, RS2)) -> QueuesSeen:
    return QueuesSeen("p1", tuple(live), tuple(queues))


BEFORE = seen(queue(RS1, [OLD1]), queue(RS2, [OLD2]))


def test_mark_lists_each_servers_wals_before_the_roll():
    assert mark(BEFORE) == {RS1: (OLD1,), RS2: (OLD2,)}


def test_drained_once_every_marked_wal_left_its_queue():
    after = seen(queue(RS1, [NEW1]), queue(RS2, [NEW2]))
    assert decide(mark(BEFORE), after) == WalDrain(True, (), 0, {RS1: (OLD1,), RS2: (OLD2,)})


def test_not_drained_while_the_roll_has_not_happened_or_the_old_wal_is_still_shipping():
    verdict = decide(mark(BEFORE), seen(queue(RS1, [OLD1, NEW1]), queue(RS2, [NEW2])))
    assert not verdict.drained and verdict.waiting_wals == 1
    assert verdict.reasons == (f"{RS1} queue p1: 1 WAL(s) from before the roll not shipped to their end yet "
                               "(1700000000100)",)
    assert not decide(mark(BEFORE), BEFORE).drained  # the roll not seen yet: still the same WALs


def test_a_server_without_a_queue_before_is_fine():
    before = seen(queue(RS1, [OLD1]))
    assert decide(mark(before), seen(queue(RS1, [NEW1]), queue(RS2, [NEW2]))).drained


def test_a_recovered_queue_or_a_dead_servers_queue_keeps_it_undrained():
    recovered = queue(RS2, [DEADWAL], queue_id=f"p1-{DEAD}")
    verdict = decide(mark(BEFORE), seen(queue(RS1, [NEW1]), queue(RS2, [NEW2]), recovered))
    assert verdict.reasons == (f"{RS2}: recovered queue p1-{DEAD} for dead server(s) {DEAD} still holds 1 WAL(s)",)
    unclaimed = queue(DEAD, [DEADWAL])
    verdict = decide(mark(BEFORE), seen(queue(RS1, [NEW1]), queue(RS2, [NEW2]), unclaimed))
    assert verdict.reasons == (f"queue p1 under {DEAD}, which is not live: 1 WAL(s) not claimed by a live server "
                               "yet",)


def test_no_live_server_is_not_drained():
    assert decide({}, seen(live=())).reasons == ("no live region server registered in ZooKeeper",)
