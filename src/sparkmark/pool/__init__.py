"""Warm Spark processes: started ahead of need, so that an interactive session or a
small job begins on a running JVM (``pool``), and the messages a warm process and its
parent exchange (``protocol``)."""
