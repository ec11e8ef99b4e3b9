"""Write an exported run (relative path → bytes, from `scorers.runs.export_run`) to a directory, and read
one back for the resume path (`scorers.runs.load_run`)."""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from pathlib import Path
from typing import Mapping


def write_export(files: Mapping[str, bytes], out_dir: str | Path) -> list[Path]:
    """Write every file under `out_dir`, creating directories as needed; returns the paths written.
    `out_dir` must be new or empty: a run's scenario folders written among another's would be read
    back as one run.

    Complete or not there at all: the files are written into a directory beside `out_dir`, which takes
    its place once every file is written. A failure (a full disk, Ctrl-C) removes it and leaves
    `out_dir` as it was, so the same command can simply be run again."""
    root = Path(out_dir).resolve()
    if root.is_dir() and any(root.iterdir()):
        raise ValueError(f"{out_dir} is not empty: export a run into a new or empty directory "
                         "(its scenario folders would mix with what is there)")
    for relative in files:
        if not (root / relative).resolve().is_relative_to(root):
            raise ValueError(f"export path {relative!r} leaves {root}")
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = root.parent / f".{root.name}.{secrets.token_hex(6)}.partial"
    staging.mkdir()  # (as `out_dir` itself would have been made: the umask applies)
    try:
        for relative, content in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        if root.is_dir():
            staging.chmod(stat.S_IMODE(root.stat().st_mode))  # (it takes an empty directory's place)
        try:
            os.replace(staging, root)  # (onto an empty directory too; one filled meanwhile is refused)
        except OSError as exc:
            raise OSError(exc.errno, f"cannot put the export in place at {out_dir}: {exc.strerror}") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [root / relative for relative in files]


def read_export(out_dir: str | Path) -> dict[str, bytes]:
    """Every file under `out_dir`, keyed by its path relative to it (with `/` separators)."""
    root = Path(out_dir)
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}
