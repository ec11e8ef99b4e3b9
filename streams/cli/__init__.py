"""The `callqa` command line: one module per command, the shared argument helpers, and the readable rendering of
results."""
