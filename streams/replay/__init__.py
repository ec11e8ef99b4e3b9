"""Replay of recorded logs through the same engine as the live worker, in one process or in parallel jobs, and the
recording of the events topic as a log."""
