"""Alerts in a running deployment: the one agent that evaluates the rules over published results, and the webhook relay
that delivers alert events."""
