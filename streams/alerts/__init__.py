"""Alerting in the worker: results relayed onto the alert input, evaluated by one worker whose state
lives in a changelog-backed table, and the alerts it publishes and posts to a webhook."""
