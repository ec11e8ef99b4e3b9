"""Alerts on call quality: event-time windows over published results, rules, and their episodes."""
