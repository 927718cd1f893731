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


class NamespaceNotFound(HBaseError):
    java_class = "org.apache.hadoop.hbase.NamespaceNotFoundException"


class NamespaceExist(HBaseError):
    java_class = "org.apache.hadoop.hbase.NamespaceExistException"


class ConstraintException(HBaseError):
    java_class = "org.apache.hadoop.hbase.constraint.ConstraintException"


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


class WrongRowIOException(HBaseError):
    """A RowMutations holding a mutation of another row."""

    java_class = "org.apache.hadoop.hbase.client.WrongRowIOException"


class RetriesExhaustedWithDetails(HBaseError):
    """What `Table.put(List)` / `Table.delete(List)` throw when some actions of a batch failed (the others were
    applied): HBase's `RetriesExhaustedWithDetailsException` message. `failures` is a list of (exception,
    servername or None) per failed action. Thrown inside the client (not sent over RPC), so its message, which is
    what a Thrift2 TIOError carries, is not prefixed by the class name."""

    java_class = "org.apache.hadoop.hbase.client.RetriesExhaustedWithDetailsException"

    def __init__(self, failures: list[tuple[HBaseError, str | None]]):
        self.failures = failures
        counts: dict[str, int] = {}
        for exc, _ in failures:
            # RetriesExhaustedWithDetailsException.classifyExs: a DoNotRetryIOException by its message (here the
            # Java text, as a remote exception's message starts with its class), others by class simple name.
            key = exc.java_text() if not exc.can_retry else exc.java_class.rpartition(".")[2]
            counts[key] = counts.get(key, 0) + 1
        desc = "".join(f"{k}: {n} time{'s' if n > 1 else ''}, " for k, n in counts.items())
        servers = list(dict.fromkeys(s if s is not None else "null" for _, s in failures))
        desc += "servers with issues: " + ", ".join(servers)
        n = len(failures)
        super().__init__(f"Failed {n} action{'s' if n > 1 else ''}: {desc}")

    def java_text(self) -> str:
        return self.message
