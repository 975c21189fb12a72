"""The command line: one module per verb; the only place that maps errors to exit codes."""
