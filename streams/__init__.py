"""Everything that moves events and results: the Kafka worker (`worker/`) and its journal (`journal/`),
replay of recorded logs (`replay/`), sending logs (`send/`), the LLM judge's I/O (`judge/`), live alerts
(`alerts/`), the HTTP API (`web/`), the command line (`cli/`), files (`files/`) and Kafka plumbing
(`kafka/`). The top-level modules are what all of them share: settings, topic names, partitioning, the
engine's wiring, process tuning, redaction and result sizing. No scoring logic lives here."""
