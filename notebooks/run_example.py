"""Runs one of the crate's examples for a notebook, or falls back to the data committed with it.

Every notebook regenerates its data the same way: `cargo run --release --example NAME -- ARGS`
from the repository root. This module is that one step, shared:

* cargo's build output is shown as it happens (the first release build takes a few minutes; a
  silent cell would look hung), then the example runs and its output is returned;
* without cargo, when the build or the run fails (a toolchain too old, no network for the
  dependencies), or when the environment variable ``SYNOPSES_NOTEBOOK_DATA=committed`` asks for
  it (CI executes every notebook that way), the notebook goes on with the committed data, and
  says so loudly;
* with no committed data to fall back on, a failure is an error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def repository_root(notebook_dir: Path) -> Path:
    """The repository root: the notebook's parent when that holds the crate's Cargo.toml."""
    return notebook_dir.parent if (notebook_dir.parent / "Cargo.toml").exists() else notebook_dir


def warn(message: str) -> None:
    """A warning a reader cannot miss, in the cell's output."""
    print(f"\n*** {message} ***\n", file=sys.stderr, flush=True)


def run_example(name: str, args: list, root: Path, committed: list) -> str | None:
    """The standard output of the example `name` run with `args` from `root`, or None when the
    notebook should use the committed files `committed` (paths) instead."""
    have_data = bool(committed) and all(Path(p).exists() for p in committed)
    cmd = ["cargo", "run", "--release", "--example", name, "--", *args]
    print("$", " ".join(cmd), "   # from the repository root", flush=True)

    def fall_back(why: str) -> None:
        if not have_data:
            raise RuntimeError(f"{why}, and there is no committed data to use instead")
        warn(f"{why}: using the committed data ({', '.join(os.path.relpath(p, root) for p in committed)})")

    if os.environ.get("SYNOPSES_NOTEBOOK_DATA") == "committed":
        fall_back("SYNOPSES_NOTEBOOK_DATA=committed")
        return None
    if shutil.which("cargo") is None:
        fall_back("cargo is not installed")
        return None
    # The build first, its progress streamed: the first release build compiles for minutes.
    build = ["cargo", "build", "--release", "--example", name]
    with subprocess.Popen(build, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        tail = []
        for line in proc.stdout:
            tail = (tail + [line])[-40:]
            if line.lstrip().startswith(("Compiling", "Finished", "error", "warning: unused")):
                print(line.rstrip(), flush=True)
    if proc.returncode != 0:
        print("".join(tail), file=sys.stderr)
        fall_back(f"`{' '.join(build)}` failed (exit {proc.returncode})")
        return None
    result = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stderr[-3000:], file=sys.stderr)
        fall_back(f"the {name} example failed (exit {result.returncode})")
        return None
    return result.stdout
