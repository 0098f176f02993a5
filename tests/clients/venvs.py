"""Private virtualenvs for Memos clients whose dependencies clash with Daybook's.

Two MCP servers for Memos need ``mcp<2`` (Daybook runs ``mcp`` 2) and both ship
a top-level package named ``memos_mcp``; grabmymemos needs Python 3.12. Each
gets its own venv, built from ``requirements/<client>.txt``, which pins every
package exactly and is installed with ``--no-deps`` (no resolver, the same
tree every time). The venv is kept between runs in a cache directory keyed on
the file's content and the interpreter, so a run pays the install only the
first time on a machine; ``DAYBOOK_CLIENT_VENVS`` moves the cache.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
from collections.abc import Iterator

HERE = pathlib.Path(__file__).parent / "requirements"
INSTALL_TIMEOUT = 900


def cache_root() -> pathlib.Path:
    configured = os.environ.get("DAYBOOK_CLIENT_VENVS")
    if configured:
        return pathlib.Path(configured)
    return pathlib.Path.home() / ".cache" / "daybook" / "client-venvs"


def _version(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    return (int(out[0]), int(out[1])) if len(out) == 2 else None


def find_python(minimum: tuple[int, int]) -> str | None:
    """This interpreter if new enough, else another on the machine (PATH, pyenv)."""
    if sys.version_info[:2] >= minimum:
        return sys.executable
    candidates = [shutil.which(f"python3.{minor}") for minor in range(minimum[1], 20)]
    pyenv = pathlib.Path(os.environ.get("PYENV_ROOT", pathlib.Path.home() / ".pyenv"))
    candidates += sorted(glob.glob(str(pyenv / "versions" / "3.*" / "bin" / "python3")))
    for python in candidates:
        found = _version(python) if python else None
        if found is not None and found >= minimum:
            return python
    return None


@contextlib.contextmanager
def _locked(path: pathlib.Path) -> Iterator[None]:
    """One builder per venv across pytest-xdist workers and concurrent runs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def client_venv(client: str, python: str | None = None) -> pathlib.Path:
    """The ``bin`` directory of a venv holding exactly ``requirements/<client>.txt``."""
    requirements = HERE / f"{client}.txt"
    python = python or sys.executable
    version = _version(python)
    key = hashlib.sha256(requirements.read_bytes() + repr(version).encode()).hexdigest()[:16]
    root = cache_root() / f"{client}-{key}"
    done = root / ".complete"
    with _locked(cache_root() / f"{client}-{key}.lock"):
        if not done.exists():
            shutil.rmtree(root, ignore_errors=True)
            subprocess.run([python, "-m", "venv", str(root)], check=True, timeout=120)
            subprocess.run(
                [
                    str(root / "bin" / "python"),
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--no-input",
                    "--disable-pip-version-check",
                    "--no-deps",
                    "-r",
                    str(requirements),
                ],
                check=True,
                timeout=INSTALL_TIMEOUT,
                stdin=subprocess.DEVNULL,
            )
            done.write_text(requirements.read_text())
    return root / "bin"
