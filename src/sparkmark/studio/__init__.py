"""Visual jobs: Glue Studio's job graphs (``CodeGenConfigurationNodes``) read, checked
against botocore's model of Glue, and turned into Glue-style PySpark scripts."""
