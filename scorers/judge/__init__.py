"""The LLM judge's pure side: what it is shown, how its answer is checked, and how the answer
replaces the heuristic results. The request itself is I/O and lives in streams/judge/client.py."""
