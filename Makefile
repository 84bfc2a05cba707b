VENV   ?= .venv
PY     := $(VENV)/bin/python
SM     := $(VENV)/bin/sparkmark
DEMO   := demo-data
JOBARGS = --JOB_NAME demo_orders --job-bookmark-option job-bookmark-enable \
          --input $(DEMO)/orders --output $(DEMO)/out

.PHONY: wheel install clients services jars runtimes trino rck test-glue5 browser console-assets console console-screenshots cluster kafka s3 demo test test-needs system test-fast lint soak bench bench-quick bench-clients clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	$(SM) glue install-shim  # what the wheel ships; an editable install does not get it
	touch $@

install: $(VENV)/.installed

# The wheel a Glue user's repository installs (sparkmark is not on PyPI):
#   pip install "sparkmark[testing] @ file://$(CURDIR)/dist/sparkmark-VERSION-py3-none-any.whl"
wheel: install
	$(PY) -m pip wheel -q --no-deps . -w dist
	@ls dist/sparkmark-*.whl

# Clients of the Glue endpoint nobody here wrote that cannot share sparkmark's
# virtualenv, each in a virtualenv of its own, which the tests drive as processes:
# Airflow with its Amazon provider, dbt-glue, and AWS's Glue Jupyter kernel.
CLIENTS := .venv-clients
$(CLIENTS)/airflow/.installed: Makefile
	python3 -m venv $(CLIENTS)/airflow
	$(CLIENTS)/airflow/bin/python -m pip install -q "apache-airflow==3.3.2" "apache-airflow-providers-amazon==9.39.0"
	touch $@

# dbt-glue with the dbt-core it pairs with on PyPI alone: dbt-core 1.12 needs
# dbt-core-experimental-parser, whose build downloads from outside the registries.
$(CLIENTS)/dbt/.installed: Makefile
	python3 -m venv $(CLIENTS)/dbt
	$(CLIENTS)/dbt/bin/python -m pip install -q "dbt-glue==1.10.19" "dbt-core==1.10.23"
	touch $@

# AWS's Glue Jupyter kernels, and nbconvert to run a notebook with them.
$(CLIENTS)/jupyter/.installed: Makefile
	python3 -m venv $(CLIENTS)/jupyter
	$(CLIENTS)/jupyter/bin/python -m pip install -q "aws-glue-sessions==1.0.9" "nbconvert==7.17.2"
	touch $@

# Engines beside Spark that read the catalog over Glue's Iceberg REST endpoint and the Glue
# API: DuckDB with its Iceberg, HTTPFS and Avro extensions from PyPI (the duckdb-ext-*
# packages of DuckDB's core extensions, so nothing is downloaded at run time), and Daft
# with PyIceberg.
$(CLIENTS)/duckdb/.installed: Makefile
	python3 -m venv $(CLIENTS)/duckdb
	$(CLIENTS)/duckdb/bin/python -m pip install -q "duckdb==1.4.4" "duckdb-ext-iceberg==1.4.4.20260205" \
		"duckdb-ext-httpfs==1.4.4.20260205" "duckdb-ext-avro==1.4.4.20260205"
	touch $@

$(CLIENTS)/daft/.installed: Makefile
	python3 -m venv $(CLIENTS)/daft
	$(CLIENTS)/daft/bin/python -m pip install -q "daft==0.7.26" "pyiceberg==0.12.0" "boto3==1.43.117"
	touch $@

# Athena's Python client, PyAthena, with its pandas cursor (which needs pandas 3; sparkmark's
# own virtualenv keeps pandas 2).
$(CLIENTS)/athena/.installed: Makefile
	python3 -m venv $(CLIENTS)/athena
	$(CLIENTS)/athena/bin/python -m pip install -q "pyathena[pandas]==4.2.1" "boto3==1.43.117"
	touch $@

# dbt-athena, with the dbt-core it pairs with on PyPI alone (as dbt-glue's, above).
$(CLIENTS)/dbt-athena/.installed: Makefile
	python3 -m venv $(CLIENTS)/dbt-athena
	$(CLIENTS)/dbt-athena/bin/python -m pip install -q "dbt-athena-community==1.11.1" "dbt-core==1.10.23"
	touch $@

clients: $(CLIENTS)/airflow/.installed $(CLIENTS)/dbt/.installed $(CLIENTS)/jupyter/.installed \
	$(CLIENTS)/duckdb/.installed $(CLIENTS)/daft/.installed $(CLIENTS)/athena/.installed \
	$(CLIENTS)/dbt-athena/.installed

# dbt-duckdb, for the benches only (S3d: dbt-glue's run beside a local adapter's). The
# dbt-core dbt-glue pairs with, for the reason above.
$(CLIENTS)/dbt-duckdb/.installed: Makefile
	python3 -m venv $(CLIENTS)/dbt-duckdb
	$(CLIENTS)/dbt-duckdb/bin/python -m pip install -q "dbt-duckdb==1.10.1" "dbt-core==1.10.23"
	touch $@

bench-clients: clients $(CLIENTS)/dbt-duckdb/.installed

# PostgreSQL and MariaDB on 127.0.0.1 from Debian's packages, with database `test`
# (installed and started when missing; a no-op when both answer). Needs root.
services:
	@bash scripts/services.sh

# Connector jars (S3A, Kafka, Avro, JDBC drivers) and the Kafka broker, from Maven
# Central through jars/pom.xml; a no-op when already resolved.
jars:
	@bash scripts/jars.sh

# Debian's Chromium and ChromeDriver, for the console's browser tests. Needs root.
browser:
	@bash scripts/browser.sh

# The console's front-end libraries from npm, copied into the Python package (committed).
console-assets:
	@bash scripts/console_assets.sh

# The web console on the demo's state (./.sparkmark and demo/sparkmark.toml, unless
# SPARKMARK_HOME / SPARKMARK_CONFIG say otherwise).
console: install
	SPARKMARK_CONFIG=$${SPARKMARK_CONFIG:-demo/sparkmark.toml} $(SM) console

# The README's pictures of the console, from the demo's state (after `make demo`).
console-screenshots: install browser
	$(PY) scripts/console_screenshots.py

# Development servers in the foreground, on 127.0.0.1 (Ctrl-C stops them).
kafka: install jars
	$(PY) -m sparkmark.devservices kafka

# A Spark standalone master and two workers on 127.0.0.1, from the pinned PySpark.
cluster: install
	$(PY) -m sparkmark.devservices cluster

# moto's server: the S3 API, and the Kinesis API for streaming jobs.
s3: install
	$(PY) -m sparkmark.devservices s3

demo: install
	rm -rf $(DEMO)
	$(SM) bookmark reset demo_orders --missing-ok
	$(SM) bookmark reset demo_transform --missing-ok
	$(SM) bookmark reset demo_quality --missing-ok
	$(PY) demo/generate.py $(DEMO)/orders --days 3 --files-per-day 4
	@echo "== run 1: every file is new"
	$(SM) run demo/orders_job.py $(JOBARGS)
	$(PY) demo/generate.py $(DEMO)/orders --append 2
	@echo "== run 2: only the 2 new files"
	$(SM) run demo/orders_job.py $(JOBARGS)
	$(SM) runs list demo_orders --limit 2
	$(SM) bookmark get demo_orders
	@echo "== crawl the data into the catalog, then read it back by table name"
	$(SM) crawler create --file demo/crawler.toml
	$(SM) crawler run demo_lake
	$(SM) catalog partitions demo.orders
	$(SM) run demo/catalog_job.py --JOB_NAME demo_catalog --predicate "dt >= '2026-11-03'"
	@echo "== a workflow: crawl, then transform, then check quality; then its run graph"
	$(SM) workflow run demo_nightly --config demo/sparkmark.toml --strict
	@echo "== all of it in the web console: run this, then open the sign-in URL it prints"
	@echo "   make console      (that is: SPARKMARK_CONFIG=demo/sparkmark.toml $(SM) console)"

# What the tests need beyond the virtualenv, installed side by side: the three client
# virtualenvs and Maven wait on the network more than on the two cores. The two steps
# that use apt-get (PostgreSQL and MariaDB, then Chromium) share dpkg's lock, so they
# run one after the other (`system`).
test-needs: install
	$(MAKE) --no-print-directory -j5 clients jars system runtimes trino rck

# Iceberg's REST Compatibility Kit, the reference catalog tests the REST endpoint is run
# against (tests/test_iceberg_rest_rck.py), from Maven Central into .rck.
rck:
	@bash scripts/rck.sh

# Trino's server with its Hive and Iceberg plugins, from Maven Central, in .trino (Java 25).
trino:
	@bash scripts/trino.sh

# The Glue 5.0 runtime (PySpark 3.5.4 from PyPI, over this install: `sparkmark runtime
# add`) in .runtimes, and its connector jars from Maven Central. The Maven mirror this
# project's CI reaches serves Spark's Kafka connector for 3.5.3 and 3.5.7 but not for
# 3.5.4, so the runtime takes 3.5.3's (the same Scala build and line).
RUNTIMES := .runtimes
$(RUNTIMES)/glue-5.0/runtime.json: $(VENV)/.installed
	SPARKMARK_RUNTIMES_DIR=$(RUNTIMES) $(SM) runtime add 5.0

runtimes: jars $(RUNTIMES)/glue-5.0/runtime.json
	@SPARKMARK_KAFKA_CONNECTOR_VERSION=3.5.3 bash scripts/jars.sh $(RUNTIMES)/glue-5.0/bin/python

system:
	@$(MAKE) --no-print-directory services
	@$(MAKE) --no-print-directory browser

# The suite on sparkmark's own Spark (Glue 6.0), then the fast tests and the end-to-end
# core (tests marked core35: docs/glue-versions.md lists them) on the Glue 5.0 runtime.
test: test-needs
	$(PY) -m pytest -q
	$(MAKE) --no-print-directory test-glue5

test-glue5: runtimes
	SPARKMARK_RUNTIMES_DIR=$(RUNTIMES) $(RUNTIMES)/glue-5.0/bin/python -m pytest -q -p no:cacheprovider -m "fast or core35"

# The inner loop: every test that needs no JVM, database server, broker or browser
# (tests/conftest.py marks them), in well under two minutes.
# Pure logic only: JAVA_HOME points nowhere, so a test that starts a JVM fails here.
test-fast: install
	JAVA_HOME=/nonexistent/test-fast-starts-no-jvm $(PY) -m pytest -q -m fast -p no:cacheprovider

# ruff (lint and format) and mypy, as configured in pyproject.toml.
lint: install
	$(VENV)/bin/ruff check src tests bench demo examples
	$(VENV)/bin/ruff format --check src tests bench demo examples
	$(VENV)/bin/mypy

# Crash every crash point 20 times (SQLite and PostgreSQL state alternating) and run the
# heavy bad inputs (a 1 GiB file, 100,000 tiny files), and read 20,001 Kinesis records
# until caught up across a kill; and chain 100 killed runs (every table crash point 20
# times) per table format (Iceberg, Delta) on local disk and on moto's S3; and the cases
# of over two minutes each that `make test` leaves to it (multi-job table reads on S3,
# a killed cluster driver, a Kafka batch killed mid-way); ends with "N passed, N failed".
soak: install services jars
	SPARKMARK_CRASH_TRIALS=20 SPARKMARK_HEAVY=1 $(PY) -m pytest -q -p no:cacheprovider tests/reliability \
		tests/test_streaming_kinesis.py::test_until_caught_up_reads_every_record_over_many_batches_and_a_kill \
		tests/test_table_writes.py::test_a_paused_run_with_a_range_reads_what_those_runs_read_from_a_delta_table \
		tests/test_table_writes.py::test_an_iceberg_table_written_by_one_job_is_read_incrementally_by_another \
		tests/test_table_writes.py::test_a_delta_table_written_by_one_job_is_read_incrementally_by_another \
		tests/cluster/test_cluster.py::test_file_bookmarks_and_a_driver_killed_before_its_commit \
		tests/test_streaming_kafka.py::test_killed_in_the_middle_of_a_batch_loses_and_repeats_nothing

$(VENV)/.bench: $(VENV)/.installed
	$(PY) -m pip install -q -e ".[test,bench]"
	touch $@

bench: install services jars bench-clients $(VENV)/.bench
	$(PY) bench/files_incremental.py
	$(PY) bench/history.py
	$(PY) bench/commit_cost.py
	$(PY) bench/jdbc_read.py
	$(PY) bench/quality.py
	$(PY) bench/quality_dynamic.py
	$(PY) bench/anomaly.py
	$(PY) bench/small_work.py
	$(PY) bench/session_start.py
	$(PY) bench/table_formats.py
	$(PY) bench/sessions.py
	$(PY) bench/metrics.py
	$(PY) bench/state_growth.py --postgres
	$(PY) bench/h2_runs.py
	$(PY) bench/s3_incremental.py
	$(PY) bench/u1_plugin.py
	$(PY) bench/u1_runs.py
	$(PY) bench/logs.py
	$(PY) bench/partition_index.py
	$(PY) bench/dynamodb_read.py
	$(PY) bench/python_shell.py
	$(PY) bench/iceberg_rest.py
	$(PY) bench/athena.py
	$(PY) bench/table.py

bench-quick: install services jars bench-clients $(VENV)/.bench
	$(PY) bench/files_incremental.py --quick --repeats 3
	$(PY) bench/history.py --quick --repeats 3
	$(PY) bench/commit_cost.py --quick
	$(PY) bench/jdbc_read.py --quick --repeats 3
	$(PY) bench/quality.py --quick --repeats 2
	$(PY) bench/quality_dynamic.py --quick --repeats 2
	$(PY) bench/anomaly.py
	$(PY) bench/small_work.py --repeats 2
	$(PY) bench/session_start.py --repeats 3
	$(PY) bench/table_formats.py --quick --repeats 3
	$(PY) bench/sessions.py --repeats 2
	$(PY) bench/metrics.py --quick --repeats 3
	$(PY) bench/state_growth.py --quick
	$(PY) bench/h2_runs.py --quick --repeats 3
	$(PY) bench/s3_incremental.py --quick --repeats 3
	$(PY) bench/u1_plugin.py --quick
	$(PY) bench/u1_runs.py --quick
	$(PY) bench/logs.py --quick --repeats 5
	$(PY) bench/partition_index.py --quick --repeats 5
	$(PY) bench/dynamodb_read.py --quick --repeats 2
	$(PY) bench/python_shell.py --quick
	$(PY) bench/iceberg_rest.py --quick
	$(PY) bench/athena.py --quick
	$(PY) bench/table.py

clean:
	rm -rf $(VENV) $(CLIENTS) $(DEMO) .sparkmark build
