"""Reading the znodes the toolkit reads and writes, independently of the toolkit's codec (clusters/zk.py), so that
the bytes themselves are compared: the ZKMetadata header (RecoverableZooKeeper's `FF` + int32 length + id +
8 random bytes), then `PBUF` + a protobuf message, walked field by field here."""
from __future__ import annotations


def split_metadata(data: bytes) -> tuple[str | None, bytes]:
    """(the header's id, the payload); id None when the payload carries no header (HBase never wraps b"")."""
    if not data or data[0] != 0xFF:
        return None, data
    length = int.from_bytes(data[1:5], "big")
    assert length >= 8, f"ZKMetadata length {length} too short for its 8 salt bytes"
    return data[5:5 + length - 8].decode(), data[5 + length:]


def varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def fields(data: bytes, nested: dict[int, dict] | None = None) -> list[tuple]:
    """Protobuf fields in wire order: (number, value) with varints as ints, length-delimited as bytes, or as a list
    of fields when `nested` names the field (its own nesting map as the value)."""
    nested = nested or {}
    out: list[tuple] = []
    pos = 0
    while pos < len(data):
        key, pos = varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(data, pos)
        elif wire == 2:
            length, pos = varint(data, pos)
            value = data[pos:pos + length]
            pos += length
            if number in nested:
                value = fields(value, nested[number])
        else:
            raise AssertionError(f"unexpected wire type {wire} for field {number} in {data!r}")
        out.append((number, value))
    return out


# ReplicationPeer: table_cfs (5) and exclude_table_cfs (9) are TableCF{TableName table_name = 1; bytes families = 2}
PEER_NESTING = {5: {1: {}}, 9: {1: {}}, 3: {}, 4: {}}
# RegionServerInfo{int32 infoPort = 1; VersionInfo version_info = 2}
RS_NESTING = {2: {}}


def pb_payload(payload: bytes) -> bytes:
    assert payload[:4] == b"PBUF", f"no PBUF magic: {payload[:8]!r}"
    return payload[4:]


def read_tree(client, path: str) -> dict[str, tuple[bytes, bool]]:
    """path (relative to `path`) -> (data, ephemeral) of `path` and everything below it."""
    from kazoo.exceptions import NoNodeError

    out: dict[str, tuple[bytes, bool]] = {}

    def walk(p: str, rel: str) -> None:
        try:
            data, stat = client.get(p)
            children = client.get_children(p)
        except NoNodeError:
            return  # went while listed (a queue moving on)
        out[rel] = (data, bool(stat.ephemeralOwner))
        for child in children:
            walk(f"{p}/{child}", f"{rel}/{child}" if rel else child)

    walk(path, "")
    return out
