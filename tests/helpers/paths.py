"""Where the repository's own files are, for tests that read the samples, schemas or sources."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
