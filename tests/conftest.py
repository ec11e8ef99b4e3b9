import sys
from pathlib import Path

# Test helpers (eventkit, fake servers) live beside the tests and are imported by name.
sys.path.insert(0, str(Path(__file__).parent))
