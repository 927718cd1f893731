"""realhbase: two real Apache HBase clusters with real HDFS (Maven Central's jars) on one machine, the judge that
the stand-in and the toolkit are checked against. See realhbase/README.md; `python -m realhbase --help`."""
