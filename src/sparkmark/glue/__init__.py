"""The Glue-compatible façade: AWS Glue's Python names, translated onto sparkmark.

Modules mirror ``awsglue``: ``context``, ``job``, ``utils``, ``dynamicframe`` and
``transforms``. Under ``sparkmark run`` (or after ``sparkmark glue install-shim``)
``import awsglue.x`` loads ``sparkmark.glue.x``.
"""
