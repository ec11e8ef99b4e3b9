"""Write an exported run (relative path → bytes, from `scorers.runs.export_run`) to a directory, and read
one back for the resume path (`scorers.runs.load_run`)."""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Mapping
from pathlib import Path


def write_export(files: Mapping[str, bytes], out_dir: str | Path) -> list[Path]:
    """Write every file under `out_dir`, creating directories as needed; returns the paths written.
    `out_dir` must be new or empty: a run's scenario folders written among another's would be read
    back as one run.

    Complete or not there at all, so that the same command can simply be run again after a failure
    (a full disk, Ctrl-C): a new `out_dir` is written beside its place and moved there once every file
    is written; an empty one (`.`, a mount point, a directory whose owner or mode was set for it) is
    filled where it is, and emptied again if the export is cut short."""
    root = Path(out_dir).resolve()
    if root.is_dir() and any(root.iterdir()):
        raise ValueError(
            f"{out_dir} is not empty: export a run into a new or empty directory "
            "(its scenario folders would mix with what is there)"
        )
    for relative in files:
        if not (root / relative).resolve().is_relative_to(root):
            raise ValueError(f"export path {relative!r} leaves {root}")
    if root.is_dir():
        target = root
    else:
        root.parent.mkdir(parents=True, exist_ok=True)
        target = root.parent / f".{root.name}.{secrets.token_hex(6)}.partial"
        target.mkdir()  # (as `out_dir` itself would have been made: the umask applies)
    try:
        for relative, content in files.items():
            path = target / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        if target != root:
            try:
                os.replace(target, root)  # (a directory made there meanwhile, and filled, is refused)
            except OSError as exc:
                raise OSError(exc.errno, f"cannot put the export in place at {out_dir}: {exc.strerror}") from None
    except BaseException:
        if target != root:
            shutil.rmtree(target, ignore_errors=True)
        else:
            _empty(root)
        raise
    return [root / relative for relative in files]


def _empty(directory: Path) -> None:
    """Remove everything in `directory` (an export cut short in a directory that was empty)."""
    for entry in directory.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def read_export(out_dir: str | Path) -> dict[str, bytes]:
    """Every file under `out_dir`, keyed by its path relative to it (with `/` separators)."""
    root = Path(out_dir)
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}
