"""Integrations: code that runs inside a voice agent's own process and turns what it does into callqa
events, with no callqa code of its own to write. Each module here is self-contained (it imports only
the standard library, its framework and aiokafka, never `models`, `scorers` or `streams`), so that a
bot whose own top-level packages carry those names can load it: `pipecat.py` is the Pipecat observer.
"""
