"""Follows a Deskhand task with httpx-sse, a third-party SSE client: submits a task over TCP
with the bearer token, reads its events, approves the action it waits for from the stream,
drops the connection after that, resumes with Last-Event-ID, and reports what it saw as one
JSON line: {"status", "tool_result", "resumed_from", "duplicates"}.

Usage: sse_client.py BASE_URL TOKEN
"""

import json
import sys

import httpx
from httpx_sse import connect_sse


def main() -> None:
    base, token = sys.argv[1], sys.argv[2]
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=20) as client:
        task = client.post("/v1/tasks", json={"prompt": "echo something", "tools": ["bash"]})
        task.raise_for_status()
        task_id = task.json()["id"]
        seen_ids = []
        last_id = None
        # First connection: read until the approval, answer it, then drop the connection.
        with connect_sse(client, "GET", f"/v1/tasks/{task_id}/events") as source:
            for event in source.iter_sse():
                seen_ids.append(int(event.id))
                last_id = event.id
                if event.event == "approval_needed":
                    call = event.json()["request"]["tool_use_id"]
                    answer = client.post(f"/v1/tasks/{task_id}/approve", json={"tool_use_id": call})
                    answer.raise_for_status()
                    break
        # Second connection: everything after the last event seen, to the end.
        status = None
        tool_result = None
        with connect_sse(
            client, "GET", f"/v1/tasks/{task_id}/events", headers={"Last-Event-ID": last_id}
        ) as source:
            for event in source.iter_sse():
                if event.id:
                    seen_ids.append(int(event.id))
                data = event.json()
                if event.event == "tool_result":
                    tool_result = data["text"]
                if event.event == "done":
                    status = data["status"]
        print(
            json.dumps(
                {
                    "status": status,
                    "tool_result": tool_result,
                    "resumed_from": int(last_id),
                    "duplicates": len(seen_ids) - len(set(seen_ids)),
                }
            )
        )


if __name__ == "__main__":
    main()
