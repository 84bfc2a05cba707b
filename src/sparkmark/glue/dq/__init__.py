"""``awsgluedq``: Glue Data Quality's entry points, on sparkmark.quality."""
