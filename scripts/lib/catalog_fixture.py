"""A throwaway `catalog serve` for the scripts that test it from outside (browser-test, api-fuzz).

The server runs on a temporary copy of the demo catalog (catalog/, public/ and public.records/) with a fresh
SQLite store, on a free loopback port; every wait is bounded.
"""
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Every wait: long enough for a loaded CI machine, short enough to fail.
WAIT_SECONDS = 20


def fail(message):
    """Print why, prefixed with the script's name, and exit 1."""
    print(f"{os.path.basename(sys.argv[0])}: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def http(method, url, body=None, headers=None, timeout=10):
    """(status, headers, body text) of one request; errors are answers too."""
    request = urllib.request.Request(url, method=method, data=body, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()


def wait_until(what, check, seconds=WAIT_SECONDS):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            value = check()
        except (OSError, ValueError):
            value = None
        if value:
            return value
        time.sleep(0.2)
    fail(f"{what}: not within {seconds}s")


class Server:
    """`catalog serve` on a copy of the demo catalog, with its own store and token."""

    def __init__(self, binary, workspace):
        self.binary = binary
        self.workspace = workspace
        shutil.copytree(os.path.join(ROOT, "catalog"), os.path.join(workspace, "catalog"))
        shutil.copytree(os.path.join(ROOT, "public"), os.path.join(workspace, "public"))
        # The published tree's private records (identifier history, snapshots) live beside it.
        shutil.copytree(os.path.join(ROOT, "public.records"), os.path.join(workspace, "public.records"))
        os.makedirs(os.path.join(workspace, "var"))
        self.store = "sqlite:" + os.path.join(workspace, "var", "catalog.sqlite")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = os.path.join(workspace, "serve.log")
        self.process = None

    def command(self, *arguments):
        return subprocess.run(
            [self.binary, *arguments], cwd=self.workspace, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)

    def create_token(self, name):
        made = self.command("token", "create", name, "--role", "editor", "--store", self.store)
        if made.returncode != 0:
            fail(f"catalog token create: {made.stderr.strip()}")
        return made.stdout.strip().splitlines()[-1]

    def start(self, *extra):
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [self.binary, "serve", "--port", str(self.port), "--catalog", "catalog", "--public", "public", "--store", self.store, *extra],
            cwd=self.workspace, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_until("catalog serve ready", lambda: self.process.poll() is None and http("GET", self.base + "/readyz")[0] == 200, 60)
        if self.process.poll() is not None:
            fail("catalog serve exited")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.process:
            self.log.close()

    def log_text(self):
        try:
            with open(self.log_path) as log:
                return log.read()
        except OSError:
            return ""
