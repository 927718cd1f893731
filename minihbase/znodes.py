"""The znode payloads HBase writes, byte for byte (reference §0 and §1.5), written independently of the toolkit.

Every non-empty payload is wrapped as `RecoverableZooKeeper` does: `FF`, int32 id length, the id (a process
identifier) and an 8-byte salt, then `PBUF` + the protobuf message.
"""
from __future__ import annotations

import os
import socket
import struct

PB_MAGIC = b"PBUF"
HBASE_VERSION = "2.5.8"


def _varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pb_varint(field_no: int, value: int) -> bytes:
    return _varint(field_no << 3) + _varint(value)


def pb_bytes(field_no: int, value: bytes | str) -> bytes:
    if isinstance(value, str):
        value = value.encode("utf-8")
    return _varint((field_no << 3) | 2) + _varint(len(value)) + value


def with_metadata(payload: bytes, ident: str | None = None, salt: bytes | None = None) -> bytes:
    """ZKMetadata.appendMetaData: empty payloads stay empty."""
    if not payload:
        return payload
    ident_b = (ident or f"{os.getpid()}@{socket.gethostname()}").encode()
    salt = salt if salt is not None else os.urandom(8)
    return b"\xff" + struct.pack(">i", len(ident_b) + len(salt)) + ident_b + salt + payload


def cluster_id(uuid_text: str) -> bytes:
    """`ClusterId { required string cluster_id = 1 }` with the PBUF magic (also hbase.id on HDFS)."""
    return PB_MAGIC + pb_bytes(1, uuid_text)


def version_info() -> bytes:
    major, minor = (int(x) for x in HBASE_VERSION.split(".")[:2])
    return b"".join((
        pb_bytes(1, HBASE_VERSION), pb_bytes(2, "https://github.com/apache/hbase"), pb_bytes(3, "minihbase"),
        pb_bytes(4, "minihbase"), pb_bytes(5, "Thu Jan  1 00:00:00 UTC 1970"), pb_bytes(6, "0" * 32),
        pb_varint(7, major), pb_varint(8, minor),
    ))


def region_server_info(info_port: int) -> bytes:
    """`RegionServerInfo { optional int32 infoPort = 1; optional VersionInfo version_info = 2 }`."""
    return PB_MAGIC + pb_varint(1, info_port) + pb_bytes(2, version_info())


def server_name(host: str, port: int, startcode: int) -> bytes:
    return pb_bytes(1, host) + pb_varint(2, port) + pb_varint(3, startcode)


def master(host: str, port: int, startcode: int, info_port: int) -> bytes:
    """`Master { required ServerName master = 1; optional uint32 rpc_version = 2; optional uint32 info_port = 3 }`."""
    return PB_MAGIC + pb_bytes(1, server_name(host, port, startcode)) + pb_varint(2, 0) + pb_varint(3, info_port)


def meta_region_server(host: str, port: int, startcode: int) -> bytes:
    """`MetaRegionServer { required ServerName server = 1; optional uint32 rpc_version = 2; state = 3 (OPEN=3) }`."""
    return PB_MAGIC + pb_bytes(1, server_name(host, port, startcode)) + pb_varint(2, 0) + pb_varint(3, 3)
