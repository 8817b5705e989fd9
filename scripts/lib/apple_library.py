"""The venv with Apple's app-store-server-library for Python (and `cryptography` with it), shared by
the benchmarks that measure beside it (scripts/bench-purchases, scripts/bench-import)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV = os.path.join(ROOT, ".build", "bench-purchases", "venv")
VENV_PYTHON = os.path.join(VENV, "bin", "python")


def ensure_venv(script):
    """Re-runs `script` inside the venv, made on the first run (PyPI)."""
    if os.path.realpath(sys.prefix) == os.path.realpath(VENV):
        return
    if not os.path.exists(VENV_PYTHON):
        print("installing app-store-server-library into " + VENV, file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True, timeout=300)
        subprocess.run([VENV_PYTHON, "-m", "pip", "install", "-q", "app-store-server-library"], check=True, timeout=900)
    os.execv(VENV_PYTHON, [VENV_PYTHON, os.path.abspath(script), *sys.argv[1:]])
