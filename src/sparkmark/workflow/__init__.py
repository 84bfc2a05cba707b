"""Jobs, triggers and workflows declared in sparkmark.toml, and the scheduler that runs them."""
