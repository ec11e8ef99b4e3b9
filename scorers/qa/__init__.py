"""The eleven QA metrics of the QA-judges specification, one module each (latency, WER, naturalness,
sentiment, hallucination, knowledge-base recall, tool-call accuracy, transfer success and wait time,
transition accuracy, overlapping speech), with what several share in `base.py`, `tool_calls.py` and
`transfers.py`. Each is a pure scorer over a call's events; the registry (scorers/registry.py) lists them."""
