"""The ``sparkmark`` command line."""
