#!/usr/bin/env python3
"""Write the callcenter table as an earlier release leaves it, for the upgrade test
(tests/integration/test_upgrades.py): that release's own code, from git, creates the
tables on a throwaway DynamoDB Local, loads demo data and makes a few everyday changes;
the table's definition and every item go to tests/fixtures/tables/<name>.json.

    .venv/bin/python scripts/tables-of-release.py a354158 0.3.0
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from queues_app.ddb.client import Dynamo  # noqa: E402
from queues_app.ddb.local import DynamoDBLocal  # noqa: E402

# Everyday changes after the demo data: a release to wrap-up, a log-off, a call ended.
CHANGES = """
from queues_app.agents.call_center import CallCenter
center = CallCenter()
attending = center.agents.list(status="attending", limit=10).items
center.release(attending[0].agent_id, "wrap_up")
center.release(attending[1].agent_id, "queue")
queued = center.agents.list(status="queued", limit=10).items
center.log_off(queued[0].agent_id)
"""


def main(commit: str, name: str) -> None:
    out = ROOT / "tests" / "fixtures" / "tables" / f"{name}.json"
    with tempfile.TemporaryDirectory() as tmp:
        release = Path(tmp) / "release"
        subprocess.run(["git", "worktree", "add", "--detach", str(release), commit], cwd=ROOT, check=True)
        server = DynamoDBLocal().start()
        try:
            env = {
                "PATH": "/usr/bin:/bin",
                "DEBUG": "true",
                "SECRET_KEY": "tables-of-release-" + "x" * 40,
                "DYNAMODB_ENDPOINT_URL": server.endpoint,
                "DYNAMODB_TABLE_PREFIX": "release-",
                "AWS_ACCESS_KEY_ID": "local",
                "AWS_SECRET_ACCESS_KEY": "local",
                "AWS_DEFAULT_REGION": "us-east-1",
                "DATABASE_URL": f"sqlite:///{tmp}/db.sqlite3",
                "PYTHONPATH": str(release),
            }
            manage = [sys.executable, "manage.py"]
            for args in (
                ["dynamo_tables", "create"],
                ["seed_demo", "--agents", "24", "--callers", "10", "--available", "14"]
                + ["--shipments", "0", "--tasks", "0", "--seed", "7"],
                ["shell", "-c", CHANGES],
            ):
                subprocess.run(manage + args, cwd=release, env=env, check=True)
            db = Dynamo(prefix="release-", endpoint_url=server.endpoint, region="us-east-1")
            table = db.call("describe_table", TableName=db.table("callcenter"))["Table"]
            items = [i for page in db.pages("scan", TableName=db.table("callcenter")) for i in page["Items"]]
        finally:
            server.stop()
            subprocess.run(["git", "worktree", "remove", "--force", str(release)], cwd=ROOT, check=True)
    definition = {
        "AttributeDefinitions": table["AttributeDefinitions"],
        "KeySchema": table["KeySchema"],
        "GlobalSecondaryIndexes": [
            {k: index[k] for k in ("IndexName", "KeySchema", "Projection")}
            for index in table.get("GlobalSecondaryIndexes", [])
        ],
    }
    items.sort(key=lambda i: (i["pk"]["S"], i["sk"]["S"]))
    document = {"release": name, "commit": commit, "table": definition, "items": items}
    out.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    print(f"{len(items)} items of {name}'s callcenter table written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
