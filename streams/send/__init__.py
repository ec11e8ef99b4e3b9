"""Sending to the events topic: what `callqa send` publishes and how it is acknowledged, and the
operator's events a command puts on a partition (such as a watermark reset)."""
