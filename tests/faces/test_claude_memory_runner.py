"""The adapter inside the SDK's own tool runner, against a local stand-in for the Messages API.

The runner sends each request to a real HTTP server on 127.0.0.1 that answers from a script, runs the
memory tool calls the scripted replies ask for, and sends the results back: what the model would read.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

anthropic = pytest.importorskip("anthropic")

import fsmem  # noqa: E402
from fsmem.claude_memory import FsmemMemoryTool  # noqa: E402


class ScriptedMessagesAPI:
    """``POST /v1/messages`` answered from a list of assistant replies; every request is kept."""

    def __init__(self, replies: list[dict]) -> None:
        self.replies = list(replies)
        self.requests: list[dict] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                api.requests.append(body)
                reply = api.replies.pop(0)
                message = {"id": f"msg_{len(api.requests)}", "type": "message", "role": "assistant",
                           "model": body["model"], "stop_sequence": None,
                           "usage": {"input_tokens": 1, "output_tokens": 1}, **reply}
                data = json.dumps(message).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def __enter__(self) -> "ScriptedMessagesAPI":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def tool_use(use_id: str, **tool_input) -> dict:
    return {"content": [{"type": "tool_use", "id": use_id, "name": "memory", "input": tool_input}],
            "stop_reason": "tool_use"}


def test_the_sdk_tool_runner_drives_fsmem(tmp_path):
    memory = fsmem.open(tmp_path / "root", create=True)
    (tmp_path / "outside.md").write_text("not memory\n")
    replies = [
        tool_use("tu1", command="view", path="/memories"),
        tool_use("tu2", command="create", path="/memories/rules.md", file_text="- Titles end with | Field Notes\n"),
        tool_use("tu3", command="view", path="/memories/../outside.md"),
        tool_use("tu4", command="str_replace", path="/memories/rules.md", old_str="Field Notes", new_str="FN"),
        {"content": [{"type": "text", "text": "Saved the rule."}], "stop_reason": "end_turn"},
    ]
    tool = FsmemMemoryTool(memory, thread_id="conversation-7")
    with ScriptedMessagesAPI(replies) as api:
        client = anthropic.Anthropic(base_url=api.url, api_key="test-key", max_retries=0)
        runner = client.beta.messages.tool_runner(
            model="claude-test", max_tokens=256, tools=[tool], thread=False,
            messages=[{"role": "user", "content": "Titles end with | Field Notes. Remember that."}])
        final = runner.until_done()

    assert [block.text for block in final.content] == ["Saved the rule."]
    assert all(request["tools"] == [{"type": "memory_20250818", "name": "memory"}] for request in api.requests)
    results = [request["messages"][-1]["content"][0] for request in api.requests[1:]]
    assert results[0]["tool_use_id"] == "tu1" and "is_error" not in results[0]
    assert results[0]["content"].endswith("\t/memories/MEMORY.md")
    assert results[1] == {"type": "tool_result", "tool_use_id": "tu2",
                          "content": "File created successfully at: /memories/rules.md"}
    assert results[2] == {"type": "tool_result", "tool_use_id": "tu3", "is_error": True,
                          "content": "Path /memories/../outside.md would escape /memories directory"}
    # Its own write counts as seen, so the edit needs no view first.
    assert results[3]["content"].startswith("The memory file has been edited.")
    assert (memory.root / "rules.md").read_text() == "- Titles end with | FN\n"
    threads = [json.loads(line)["thread"] for line in (memory.root / ".fsmem" / "log.jsonl").read_text().splitlines()]
    assert threads == ["conversation-7", "conversation-7"]
