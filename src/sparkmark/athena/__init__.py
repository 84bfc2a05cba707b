"""Athena's API over the Glue catalog: queries in Athena's SQL, translated to Spark SQL
and run on a warm Spark, with results written where Athena writes them."""
