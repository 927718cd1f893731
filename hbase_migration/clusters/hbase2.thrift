/*
 * The part of HBase's Thrift2 IDL (hbase-thrift/src/main/resources/org/apache/hadoop/hbase/thrift2/hbase.thrift,
 * service THBaseService, the `hbase thrift2` daemon) that the toolkit's data path uses. Field ids and argument ids
 * are HBase's: they are the protocol. Fields the toolkit never reads are left out; a Thrift reader skips them.
 */
namespace py hbase

struct TTimeRange {
  1: required i64 minStamp,
  2: required i64 maxStamp
}

struct TColumn {
  1: required binary family,
  2: optional binary qualifier,
  3: optional i64 timestamp
}

struct TColumnValue {
  1: required binary family,
  2: required binary qualifier,
  3: required binary value,
  4: optional i64 timestamp,
  5: optional binary tags,
  6: optional byte type
}

struct TResult {
  1: optional binary row,
  2: required list<TColumnValue> columnValues,
  3: optional bool stale = false
  4: optional bool partial = false
}

enum TDeleteType {
  DELETE_COLUMN = 0,
  DELETE_COLUMNS = 1,
  DELETE_FAMILY = 2,
  DELETE_FAMILY_VERSION = 3
}

enum TDurability {
  USE_DEFAULT = 0,
  SKIP_WAL = 1,
  ASYNC_WAL = 2,
  SYNC_WAL = 3,
  FSYNC_WAL = 4
}

struct TGet {
  1: required binary row,
  2: optional list<TColumn> columns,
  3: optional i64 timestamp,
  4: optional TTimeRange timeRange,
  5: optional i32 maxVersions,
  6: optional binary filterString,
  7: optional map<binary, binary> attributes
}

struct TPut {
  1: required binary row,
  2: required list<TColumnValue> columnValues
  3: optional i64 timestamp,
  5: optional map<binary, binary> attributes,
  6: optional TDurability durability
}

struct TDelete {
  1: required binary row,
  2: optional list<TColumn> columns,
  3: optional i64 timestamp,
  4: optional TDeleteType deleteType = 1,
  6: optional map<binary, binary> attributes,
  7: optional TDurability durability
}

struct TScan {
  1: optional binary startRow,
  2: optional binary stopRow,
  3: optional list<TColumn> columns
  4: optional i32 caching,
  5: optional i32 maxVersions=1,
  6: optional TTimeRange timeRange,
  7: optional binary filterString,
  8: optional i32 batchSize,
  9: optional map<binary, binary> attributes
  11: optional bool reversed
  12: optional bool cacheBlocks
  15: optional i32 limit
}

struct THRegionInfo {
  1: required i64 regionId
  2: required binary tableName
  3: optional binary startKey
  4: optional binary endKey
  5: optional bool offline
  6: optional bool split
  7: optional i32 replicaId
}

struct TServerName {
  1: required string hostName
  2: optional i32 port
  3: optional i64 startCode
}

struct THRegionLocation {
  1: required TServerName serverName
  2: required THRegionInfo regionInfo
}

struct TTableName {
  1: optional binary ns
  2: required binary qualifier
}

struct TColumnFamilyDescriptor {
  1: required binary name
  10: optional i32 maxVersions
  11: optional i32 minVersions
  12: optional i32 scope
  13: optional i32 timeToLive
}

struct TTableDescriptor {
 1: required TTableName tableName
 2: optional list<TColumnFamilyDescriptor> columns
 3: optional map<binary, binary> attributes
 4: optional TDurability durability
}

exception TIOError {
  1: optional string message
}

exception TIllegalArgument {
  1: optional string message
}

enum TThriftServerType {
  ONE = 1,
  TWO = 2
}

service THBaseService {
  TResult get(1: required binary table, 2: required TGet tget) throws (1: TIOError io)
  list<TResult> getMultiple(1: required binary table, 2: required list<TGet> tgets) throws (1: TIOError io)
  void putMultiple(1: required binary table, 2: required list<TPut> tputs) throws (1: TIOError io)
  list<TDelete> deleteMultiple(1: required binary table, 2: required list<TDelete> tdeletes) throws (1: TIOError io)
  i32 openScanner(1: required binary table, 2: required TScan tscan) throws (1: TIOError io)
  list<TResult> getScannerRows(1: required i32 scannerId, 2: i32 numRows = 1)
      throws (1: TIOError io, 2: TIllegalArgument ia)
  void closeScanner(1: required i32 scannerId) throws (1: TIOError io, 2: TIllegalArgument ia)
  THRegionLocation getRegionLocation(1: required binary table, 2: required binary row, 3: bool reload)
      throws (1: TIOError io)
  list<THRegionLocation> getAllRegionLocations(1: required binary table) throws (1: TIOError io)
  TTableDescriptor getTableDescriptor(1: required TTableName table) throws (1: TIOError io)
  bool tableExists(1: TTableName tableName) throws (1: TIOError io)
  TThriftServerType getThriftServerType()
}
