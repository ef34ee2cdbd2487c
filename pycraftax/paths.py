"""Checks on the paths the command line writes to, made before any work starts, so that a
long job never ends on an unwritable output."""

from __future__ import annotations

import os


def output_dir_problem(path: str) -> str | None:
    """Why files cannot be written into directory `path` (None when they can): it is a file,
    it cannot be created, or it is not writable. Creates the directory when it is missing."""
    path = path or "."
    if os.path.exists(path) and not os.path.isdir(path):
        return f"{path} exists and is not a directory"
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        return f"cannot create directory {path}: {exc.strerror or exc}"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"directory {path} is not writable"
    return None


def output_file_problem(path: str) -> str | None:
    """Why file `path` cannot be written (None when it can): see output_dir_problem."""
    if os.path.isdir(path):
        return f"{path} is a directory, not a file name"
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return f"{path} exists and is not writable"
    return output_dir_problem(os.path.dirname(path))
