"""Servers for tests and local development, started from what the project installs:
a single-node Apache Kafka broker in KRaft mode (jars from ``make jars``) and an S3 API
server (moto's server mode, from the test extras). Each listens on 127.0.0.1 only,
keeps its data in a folder it is given, and is stopped by its process id."""
