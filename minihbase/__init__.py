"""minihbase: a local stand-in for Apache HBase (master, region servers, WALs, Thrift1, WebHDFS, /jmx) for
development, tests and the demo. It imports nothing from the toolkit. See minihbase/README.md."""
