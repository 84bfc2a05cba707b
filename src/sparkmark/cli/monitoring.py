"""``sparkmark monitoring rules|dashboard``: print the Prometheus alerting rules and the
Grafana dashboard sparkmark ships, to load into a team's own Prometheus and Grafana
(docs/observability.md says how)."""

from __future__ import annotations

import sys

import typer

from ..monitoring import DASHBOARD, RULES

app = typer.Typer(
    help="The Prometheus rules and Grafana dashboard for sparkmark's metrics.", no_args_is_help=True
)


@app.command("rules")
def rules() -> None:
    """Print the Prometheus alerting rules (a rule file: rule_files in prometheus.yml)."""
    sys.stdout.write(RULES.read_text(encoding="utf-8"))


@app.command("dashboard")
def dashboard() -> None:
    """Print the Grafana dashboard (JSON, to import; it asks for a Prometheus data source)."""
    sys.stdout.write(DASHBOARD.read_text(encoding="utf-8"))
