"""Glue's data quality as a service: rulesets kept as resources, evaluation runs and
rule recommendation runs on catalog tables, run in a warm Spark of the server's own."""
