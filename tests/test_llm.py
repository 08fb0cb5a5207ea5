"""Model clients over a real local HTTP connection, and the scripted model."""

from __future__ import annotations

import json

import pytest

from fsmem.errors import ModelError
from fsmem.llm import ChatModel, OpenAICompatibleModel, ScriptedModel, chat_url, tool_call
from tests.chat_server import ChatServer, Reply

HELLO = [{"role": "user", "content": "Hi"}]


def test_a_completion_round_trip_sends_the_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_MODEL_KEY", "k-123")
    with ChatServer(["Hello!"]) as server:
        model = OpenAICompatibleModel(server.base_url, "tiny", api_key_env="TEST_MODEL_KEY")
        assert model.complete(HELLO) == {"role": "assistant", "content": "Hello!"}
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["Authorization"] == "Bearer k-123"
    assert sent.body == {"model": "tiny", "messages": HELLO, "temperature": 0.0, "max_tokens": 1024}


def test_no_key_sends_no_authorization(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ChatServer(["ok"]) as server:
        OpenAICompatibleModel(server.base_url, "tiny").complete(HELLO)
    assert "Authorization" not in server.requests[0].headers


def test_tools_and_tool_calls_travel_both_ways() -> None:
    tools = [{"type": "function", "function": {"name": "memory", "parameters": {"type": "object"}}}]
    call = tool_call("memory", {"command": "read", "path": ""}, call_id="call_1")
    with ChatServer([Reply(tool_calls=[call])]) as server:
        reply = OpenAICompatibleModel(server.base_url + "/chat/completions", "tiny").complete(
            HELLO, tools=tools, temperature=0.2)
    assert reply == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "memory", "arguments": '{"command": "read", "path": ""}'}}]}
    assert server.requests[0].body["tools"] == tools
    assert server.requests[0].body["temperature"] == 0.2


def test_extra_body_is_sent() -> None:
    with ChatServer(["ok"]) as server:
        OpenAICompatibleModel(server.base_url, "tiny",
                              extra_body={"chat_template_kwargs": {"enable_thinking": False}}).complete(HELLO)
    assert server.requests[0].body["chat_template_kwargs"] == {"enable_thinking": False}


@pytest.mark.parametrize("reply, message", [
    (Reply(raw="this is not json"), "answered with something that is not JSON: this is not json"),
    (Reply(raw=json.dumps({"choices": []})), "answered without choices[0].message"),
    (Reply(raw=json.dumps({"error": {"message": "model overloaded"}})), "answered with an error: model overloaded"),
    (Reply(status=500, raw="boom"), "answered HTTP 500: boom."),
    (Reply(status=404, raw='{"error": "no such model"}'), "Check the model name."),
    (Reply(raw=json.dumps({"choices": [{"message": {"content": 3}}]})), "content that is not text"),
])
def test_failures_are_one_model_error(reply: Reply, message: str) -> None:
    with ChatServer([reply]) as server:
        with pytest.raises(ModelError) as caught:
            OpenAICompatibleModel(server.base_url, "tiny").complete(HELLO)
    assert message in caught.value.message
    assert caught.value.code == "MODEL_ERROR"


def test_an_http_error_never_repeats_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secretsecretsecret")
    with ChatServer([Reply(status=401, raw="bad key sk-secretsecretsecret")]) as server:
        with pytest.raises(ModelError) as caught:
            OpenAICompatibleModel(server.base_url, "tiny").complete(HELLO)
    assert "sk-secretsecretsecret" not in caught.value.message
    assert "answered HTTP 401: bad key [key]. Check the key in $OPENAI_API_KEY." in caught.value.message


def test_a_slow_server_ends_in_a_timeout_error() -> None:
    with ChatServer([Reply(content="late", delay=1.0)]) as server:
        with pytest.raises(ModelError, match="did not answer within 0.2 seconds"):
            OpenAICompatibleModel(server.base_url, "tiny", timeout=0.2).complete(HELLO)


def test_an_unreachable_server_is_named() -> None:
    with ChatServer([]) as server:
        url = server.base_url
    with pytest.raises(ModelError, match=r"could not reach the model server at http://127.0.0.1:\d+/v1/chat/completions"):
        OpenAICompatibleModel(url, "tiny", timeout=5).complete(HELLO)


def test_urls_and_names_are_checked() -> None:
    assert chat_url("http://h:1/v1/") == "http://h:1/v1/chat/completions"
    assert chat_url("http://h:1/v1/chat/completions") == "http://h:1/v1/chat/completions"
    with pytest.raises(ModelError, match="must start with http:// or https://"):
        chat_url("localhost:1234")
    with pytest.raises(ModelError, match="no model name"):
        OpenAICompatibleModel("http://h/v1", "")


def test_the_scripted_model_answers_in_order_and_records() -> None:
    model = ScriptedModel("one")
    model.enqueue({"role": "assistant", "content": None,
                   "tool_calls": [tool_call("memory", {"command": "read"}, call_id="c1")]})
    model.enqueue(ModelError("scripted failure"))
    assert isinstance(model, ChatModel)
    assert model.complete(HELLO)["content"] == "one"
    assert model.complete(HELLO, tools=[{"x": 1}])["tool_calls"][0]["id"] == "c1"
    with pytest.raises(ModelError, match="scripted failure"):
        model.complete(HELLO)
    with pytest.raises(ModelError, match="no reply left"):
        model.complete(HELLO)
    assert model.requests == [HELLO] * 4
    assert model.calls[1]["tools"] == [{"x": 1}]
