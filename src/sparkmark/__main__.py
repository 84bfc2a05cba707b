"""``python -m sparkmark``: the same as the ``sparkmark`` command."""

from .cli.app import main

main()
