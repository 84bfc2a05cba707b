"""The Data Catalog: databases, tables and partitions in Spark's Hive metastore,
mirrored with their schema history into the state store."""
