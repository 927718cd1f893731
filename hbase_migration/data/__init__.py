"""What moves and compares cells: the copy and the verification (imports clusters/, ledger/, replication/).

What a copy covers (`scope`), its partitions (`partitions`, `resume`), the data path to a cluster's cells
(`datapath`), the copy (`copy`) and its load-aware throttle (`throttle`), the verification (`verify`, `rowdiff`),
progress and the record of finished partitions (`progress`), where partitions run (`executors`), a whole table's
job (`runner`) and its arguments (`jobargs`), and the source's split/merge switches held off meanwhile
(`switches`).
"""
