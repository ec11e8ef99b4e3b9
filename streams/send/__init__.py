"""Publishing recorded event logs to the events topic: what goes out in which order (plan), the sending, and the
broker's acknowledgements."""
