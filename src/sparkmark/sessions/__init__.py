"""Glue interactive sessions: a process per session, running the statements it is
sent in one namespace, as Glue notebooks and dbt-glue expect (``manager``), and how a
statement is run and what it answers (``statement``)."""
