"""Scoring as pure code over a call's events: the engine that folds events into call state and
finalizes results (`engine`, `fold`), the QA metrics (`qa/`), the evaluation harness's signals
(`evaluation/`), the judge's pure side (`judge/`), cohorts, run summaries (`runs/`) and alerting
(`alerting/`). No Kafka, no web, no files: the live worker and replay run this same code."""
