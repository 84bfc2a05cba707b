"""What sparkmark ships for a team's own monitoring, as package data:

- ``prometheus-rules.yml``: Prometheus alerting rules for the alarms AWS's Glue guides
  describe (a bookmarked job that keeps reading nothing while its source has new
  files, a run near its timeout or longer than 30 minutes, a spike in records read,
  a streaming lag that keeps rising, a failed run, a driver short of heap), unit-tested
  with ``promtool test rules``;
- ``grafana-dashboard.json``: a Grafana dashboard over the same series.

``sparkmark monitoring rules`` and ``sparkmark monitoring dashboard`` print them.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent
RULES = HERE / "prometheus-rules.yml"
DASHBOARD = HERE / "grafana-dashboard.json"
