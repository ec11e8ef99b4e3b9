"""The import name a voice agent's own code uses for callqa's integrations (`callqa.pipecat`).

callqa's own packages are `models`, `scorers` and `streams`: names a bot may well have for packages of
its own, first on its path. This package's name is callqa's alone, and what it holds loads the
integration from its file beside it, not by a package name that the bot's could shadow.
"""
