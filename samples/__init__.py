"""Bundled sample data: a seeded generator of a realistic call-event log (see README.md)."""
