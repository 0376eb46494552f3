"""A throwaway PostgreSQL cluster and Redis server on loopback, for the tests of the
several-hosts shape (Django's users, sessions and tokens in PostgreSQL, the panel cache
in Redis). Each lives in a temporary folder of its own, on a free port, and is gone
after `stop()`.

They use Debian's servers (packages `postgresql` and `redis-server`; `make
postgres-redis` installs them, `make test` does it first). PostgreSQL refuses to run as
root: as root, the cluster belongs to the `postgres` user (which Debian's package makes),
or to `nobody`.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from queues_app.ddb.local import free_port

INSTALL = "install Debian's packages with `make postgres-redis` (apt-get install postgresql redis-server)"
USER = "switchboard"


class ServerMissing(RuntimeError):
    pass


def postgres_bin() -> Path:
    """The folder of the newest PostgreSQL's programs (Debian keeps them off PATH)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    if initdb := shutil.which("initdb"):
        return Path(initdb).parent
    raise ServerMissing(f"PostgreSQL's initdb is not installed: {INSTALL}.")


def redis_server() -> str:
    if found := shutil.which("redis-server"):
        return found
    raise ServerMissing(f"redis-server is not installed: {INSTALL}.")


def _owner() -> pwd.struct_passwd | None:
    """Whom the cluster belongs to: None for this process's own user, unless that is root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise ServerMissing("Running as root, and there is no `postgres` or `nobody` user to run PostgreSQL as.")


def _wait(ready, what: str, process: subprocess.Popen, log: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with code {process.returncode}:\n{log.read_text()}")
        try:
            if ready():
                return
        except Exception:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not answer within {timeout:.0f} s:\n{log.read_text()}")


def _stop(process: subprocess.Popen | None, folder: Path | None, sig: int, grace: float) -> None:
    """Ask the server to stop with `sig`, kill it after `grace` seconds, remove its folder."""
    if process and process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


class LocalPostgres:
    """`initdb` into a temporary folder, then `postgres` on 127.0.0.1:`port` (its socket
    in that folder), trusting local connections of the superuser `switchboard`. Durability
    is off: the data is thrown away anyway."""

    def __init__(self) -> None:
        self.bin = postgres_bin()
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.folder: Path | None = None

    def url(self, database: str) -> str:
        return f"postgres://{USER}@127.0.0.1:{self.port}/{database}"

    def start(self) -> LocalPostgres:
        owner = _owner()
        self.folder = Path(tempfile.mkdtemp(prefix="switchboard-postgres-"))
        data, log = self.folder / "data", self.folder / "postgres.log"
        if owner:
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
        as_owner = {"user": owner.pw_uid, "group": owner.pw_gid, "extra_groups": []} if owner else {}
        initdb = [str(self.bin / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "--encoding=UTF8"]
        initdb += ["--locale=C", "--no-sync", "--no-instructions"]
        with open(log, "w") as out:
            if owner:
                os.chown(log, owner.pw_uid, owner.pw_gid)
            done = subprocess.run(initdb, stdout=out, stderr=subprocess.STDOUT, cwd=self.folder, **as_owner)
        if done.returncode:
            raise RuntimeError(f"initdb failed (exit code {done.returncode}):\n{log.read_text()}")
        server = [str(self.bin / "postgres"), "-D", str(data), "-p", str(self.port), "-k", str(self.folder)]
        server += ["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off"]
        server += ["-c", "full_page_writes=off", "-c", "max_connections=200"]
        with open(log, "a") as out:
            self.process = subprocess.Popen(
                server, stdout=out, stderr=subprocess.STDOUT, cwd=self.folder, start_new_session=True, **as_owner
            )
        _wait(self._answers, "PostgreSQL", self.process, log)
        return self

    def _answers(self) -> bool:
        import psycopg

        with psycopg.connect(self.url("postgres"), connect_timeout=2):
            return True

    def create_database(self, name: str) -> str:
        """A new, empty database; its URL."""
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def databases(self) -> set[str]:
        import psycopg

        with psycopg.connect(self.url("postgres")) as connection:
            return {row[0] for row in connection.execute("SELECT datname FROM pg_database")}

    def stop(self) -> None:
        _stop(self.process, self.folder, signal.SIGINT, 30)  # SIGINT: fast shutdown, clients disconnected


class LocalRedis:
    """`redis-server` on 127.0.0.1:`port`, in memory only (no snapshots, no append log)."""

    def __init__(self) -> None:
        self.program = redis_server()
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.folder: Path | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def client(self, db: int = 0):
        import redis

        return redis.Redis.from_url(self.url(db))

    def start(self) -> LocalRedis:
        self.folder = Path(tempfile.mkdtemp(prefix="switchboard-redis-"))
        log = self.folder / "redis.log"
        command = [self.program, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        command += ["--daemonize", "no", "--dir", str(self.folder)]
        with open(log, "w") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        _wait(lambda: self.client().ping(), "redis-server", self.process, log)
        return self

    def stop(self) -> None:
        _stop(self.process, self.folder, signal.SIGTERM, 10)
