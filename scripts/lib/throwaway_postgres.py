"""A throwaway PostgreSQL server for scripts: initdb into a temporary folder, a free port on
127.0.0.1, run as the `postgres` user when the caller is root (PostgreSQL refuses root)."""
import os
import pwd
import socket
import subprocess
import urllib.parse

PG_BIN = "/usr/lib/postgresql/15/bin"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require_postgres(script):
    if not os.path.exists(os.path.join(PG_BIN, "initdb")):
        raise SystemExit(f"{script}: PostgreSQL is not installed ({PG_BIN}/initdb missing): apt-get install postgresql")


class Postgres:
    """A throwaway PostgreSQL server, run as `postgres` when we are root (it refuses root)."""

    def __init__(self, folder):
        self.folder = folder
        self.data = os.path.join(folder, "data")
        self.port = free_port()
        self.as_postgres = os.geteuid() == 0
        os.makedirs(self.data)
        if self.as_postgres:
            user = pwd.getpwnam("postgres")
            os.chown(folder, user.pw_uid, user.pw_gid)
            os.chown(self.data, user.pw_uid, user.pw_gid)
        self.run("initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "--no-sync")
        self.start()
        self.psql("postgres", "CREATE DATABASE reports")
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/reports"

    def run(self, program, *args, check=True):
        command = [os.path.join(PG_BIN, program), *args]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, check=check, timeout=120, capture_output=True, text=True)

    def start(self):
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1"
        self.run("pg_ctl", "-D", self.data, "-o", options, "-l", os.path.join(self.folder, "log"), "-w", "start")

    def crash(self):
        self.run("pg_ctl", "-D", self.data, "-m", "immediate", "stop", check=False)

    def stop(self):
        self.run("pg_ctl", "-D", self.data, "-m", "fast", "stop", check=False)

    def psql(self, database, sql):
        result = self.run("psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database, "-At", "-c", sql)
        return result.stdout

    def stored_ids(self, app):
        return set(self.psql("reports", f"SELECT report_id FROM reports WHERE app = '{app}'").split())


def attach(folder):
    """The server `start` left running in `folder`, to stop it."""
    server = Postgres.__new__(Postgres)
    server.folder = folder
    server.data = os.path.join(folder, "data")
    server.as_postgres = os.geteuid() == 0
    with open(os.path.join(folder, "url")) as file:
        server.url = file.read().strip()
    server.port = urllib.parse.urlsplit(server.url).port
    return server


if __name__ == "__main__":
    # For shell scripts: `throwaway_postgres.py start FOLDER` prints the URL of a new server in
    # FOLDER (which must not exist); `throwaway_postgres.py stop FOLDER` stops it.
    import sys

    command, folder = sys.argv[1], os.path.abspath(sys.argv[2])
    if command == "start":
        require_postgres("throwaway_postgres")
        server = Postgres(folder)
        with open(os.path.join(folder, "url"), "w") as file:
            file.write(server.url)
        print(server.url)
    elif command == "stop":
        attach(folder).stop()
    else:
        raise SystemExit("usage: throwaway_postgres.py start|stop FOLDER")
