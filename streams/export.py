"""Write an exported run (relative path → bytes, from `scorers.runs.export_run`) to a directory, and read
one back for the resume path (`scorers.runs.load_run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping


def write_export(files: Mapping[str, bytes], out_dir: str | Path) -> list[Path]:
    """Write every file under `out_dir`, creating directories as needed; returns the paths written.
    `out_dir` must be new or empty: a run's scenario folders written among another's would be read
    back as one run."""
    root = Path(out_dir).resolve()
    if root.is_dir() and any(root.iterdir()):
        raise ValueError(f"{out_dir} is not empty: export a run into a new or empty directory "
                         "(its scenario folders would mix with what is there)")
    written = []
    for relative, content in files.items():
        path = (root / relative).resolve()
        if not path.is_relative_to(root):
            raise ValueError(f"export path {relative!r} leaves {root}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        written.append(path)
    return written


def read_export(out_dir: str | Path) -> dict[str, bytes]:
    """Every file under `out_dir`, keyed by its path relative to it (with `/` separators)."""
    root = Path(out_dir)
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}
