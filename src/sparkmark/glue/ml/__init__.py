"""``awsglueml``: Glue's machine-learning transforms (``import awsglueml…`` loads these)."""
