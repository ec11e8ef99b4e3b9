"""The LLM judge around the pure judge logic of scorers/judge: the HTTP client, the live worker's runner and the offline
judging of recorded logs."""
