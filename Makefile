VENV   ?= .venv
PY     := $(VENV)/bin/python
SM     := $(VENV)/bin/sparkmark
DEMO   := demo-data
JOBARGS = --JOB_NAME demo_orders --job-bookmark-option job-bookmark-enable \
          --input $(DEMO)/orders --output $(DEMO)/out

.PHONY: install demo test soak bench bench-quick clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $@

install: $(VENV)/.installed

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

test: install
	$(PY) -m pytest -q

# Crash every crash point 20 times (SQLite and PostgreSQL state alternating) and run the
# heavy bad inputs (a 1 GiB file, 100,000 tiny files); ends with "N passed, N failed".
soak: install
	SPARKMARK_CRASH_TRIALS=20 SPARKMARK_HEAVY=1 $(PY) -m pytest -q -p no:cacheprovider tests/reliability

bench: install
	$(PY) bench/files_incremental.py
	$(PY) bench/commit_cost.py
	$(PY) bench/jdbc_read.py
	$(PY) bench/quality.py
	@cat bench/results/latest.json

bench-quick: install
	$(PY) bench/files_incremental.py --quick --repeats 3
	$(PY) bench/commit_cost.py --quick
	$(PY) bench/jdbc_read.py --quick --repeats 3
	$(PY) bench/quality.py --quick --repeats 2
	@cat bench/results/latest.json

clean:
	rm -rf $(VENV) $(DEMO) .sparkmark build
