"""Building the wheel and installing it where the tests can run it, without network (tests/app/test_package.py,
tests/app/test_dockerfile.py).

build_wheel(source, out) -> Path    `pip wheel --no-deps` of the project in `source` into `out`, or the pip
                                    command given, with this environment's setuptools (no build isolation, no
                                    index): the wheel's path
fresh_venv(folder) -> Path          a new virtual environment whose packages are its own, then this test
                                    environment's (so installing needs no download): its python
install(python, *pip_args)          `pip install WHEEL` (pip_args) into that environment, its dependencies resolved
                                    offline
run_env(python, **extra)            the environment variables a command of that environment runs with: its bin/
                                    first on PATH, no PYTHONPATH (the source tree must not stand in for the wheel),
                                    offline for Hugging Face
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

PIP = [sys.executable, "-m", "pip"]
"""This environment's pip, which also installs into the fresh ones (`--python`): they are made without pip."""


def _pip(*args: str, cwd: Path | None = None) -> None:
    done = subprocess.run([*PIP, *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"pip {' '.join(args)} failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"


def build_wheel(source: Path, out: Path, pip_args: list[str] | None = None) -> Path:
    """The wheel of the project in `source`, written to `out` by `pip wheel --no-deps` or by `pip_args` (which must)."""
    _pip(*(pip_args or ["wheel", "--no-deps", "--wheel-dir", str(out), "."]), "--no-build-isolation", "--no-index", "-q",
         cwd=source)
    wheels = list(out.glob("feedback_lab-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def fresh_venv(folder: Path) -> Path:
    """A new virtual environment in `folder` that sees this environment's packages after its own: its python.

    A .pth line adds the test environment's site-packages to the new one's path as a plain folder, so the
    dependencies (torch, panel, ...) are found without a download while this environment's .pth files, among
    them an editable install of the source tree, are not run.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    python = folder / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "test-environment.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python


def install(python: Path, *pip_args: str) -> None:
    """`pip install ...` (pip_args) into `python`'s environment, with no index: the dependencies must be there."""
    _pip("--python", str(python), *pip_args, "--no-index", "-q")


def run_env(python: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, "PATH": f"{python.parent}{os.pathsep}{env['PATH']}", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
            **extra}
