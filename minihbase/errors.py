"""HBase's exceptions, by the Java class names a client sees in an `IOError` message.

The Thrift1 server puts `Throwables.getStackTraceAsString(e)` into `IOError.message`, whose first line is
`<java class>: <message>`; `java_text()` gives that line so clients and operators see what HBase would show.
"""
from __future__ import annotations


class HBaseError(Exception):
    """An IOException on the HBase side (answered as Thrift `IOError`)."""

    java_class = "java.io.IOException"
    can_retry = False

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def java_text(self) -> str:
        return f"{self.java_class}: {self.message}"


class DoNotRetryIOException(HBaseError):
    java_class = "org.apache.hadoop.hbase.DoNotRetryIOException"


class RegionReadOnly(DoNotRetryIOException):
    """`HRegion.checkReadOnly()`: a mutation of a region whose table is READONLY. Java throws the plain
    `DoNotRetryIOException("region is read only")`; the subclass only lets minihbase's client tell it apart."""

    def __init__(self, message: str = "region is read only"):
        super().__init__(message)


class TableNotFound(HBaseError):
    java_class = "org.apache.hadoop.hbase.TableNotFoundException"


class TableExists(HBaseError):
    java_class = "org.apache.hadoop.hbase.TableExistsException"


class TableNotEnabled(HBaseError):
    java_class = "org.apache.hadoop.hbase.TableNotEnabledException"


class TableNotDisabled(HBaseError):
    java_class = "org.apache.hadoop.hbase.TableNotDisabledException"


class NoSuchColumnFamily(HBaseError):
    java_class = "org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException"


class NotServingRegion(HBaseError):
    java_class = "org.apache.hadoop.hbase.NotServingRegionException"
    can_retry = True


class RegionServerAborted(HBaseError):
    java_class = "org.apache.hadoop.hbase.regionserver.RegionServerAbortedException"
    can_retry = True


class RetriesExhausted(HBaseError):
    java_class = "org.apache.hadoop.hbase.client.RetriesExhaustedException"


class WALAppendFailed(HBaseError):
    """The WAL could not take an edit (e.g. an HDFS quota): HBase aborts the region server."""

    java_class = "org.apache.hadoop.hbase.regionserver.wal.DamagedWALException"


class JavaIllegalArgument(Exception):
    """`java.lang.IllegalArgumentException`: bad input (table name, filter string, column descriptor).

    Thrift methods that catch it answer `IllegalArgument`; the others let it escape, and Thrift answers
    `TApplicationException(INTERNAL_ERROR, "Internal error processing <method>")`, as HBase does.
    """

    java_class = "java.lang.IllegalArgumentException"

    def java_text(self) -> str:
        return f"{self.java_class}: {self}"
