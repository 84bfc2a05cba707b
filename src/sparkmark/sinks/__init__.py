"""Writers that take a plain Spark DataFrame to a target."""
