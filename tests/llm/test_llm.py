"""Model clients over a real local HTTP connection, and the scripted model."""

from __future__ import annotations

import email.utils
import json
from datetime import datetime, timedelta, timezone

import pytest

from fsmem._errors import ModelError
from fsmem._llm.model import (
    DEFAULT_MAX_TOKENS,
    JSON_OBJECT,
    ChatModel,
    ModelSettings,
    ScriptedModel,
    tool_call,
)
from fsmem._llm.openai import OpenAICompatibleModel, build_model, chat_url
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


def test_the_usage_a_server_reports_is_kept_on_the_reply_and_never_sent_back() -> None:
    import json

    body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "Hi"}}],
                       "usage": {"prompt_tokens": 812, "completion_tokens": 3, "total_tokens": 815, "extra": "x"}})
    with ChatServer([Reply(raw=body)]) as server:
        model = OpenAICompatibleModel(server.base_url, "tiny", context_window=32_768)
        reply = model.complete(HELLO)
    assert reply["usage"] == {"prompt_tokens": 812, "completion_tokens": 3, "total_tokens": 815}
    assert model.context_window == 32_768
    from fsmem._memory.tool_calls import assistant_message

    assert assistant_message(reply) == {"role": "assistant", "content": "Hi"}  # the thread never holds it


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


# ---- what every common server takes, and how failures read (issue 14) -------------------------------


def test_null_content_beside_tool_calls_is_sent_as_empty_text() -> None:
    # llama-cpp-python answers HTTP 500 to "content": null; the same thread with "" is fine
    call = tool_call("memory", {"command": "read", "path": ""}, call_id="c1")
    thread = [*HELLO, {"role": "assistant", "content": None, "tool_calls": [call]},
              {"role": "tool", "tool_call_id": "c1", "content": "MEMORY.md"}]
    with ChatServer(["Done."], modes={"strict_content"}) as server:
        assert OpenAICompatibleModel(server.base_url, "tiny").complete(thread)["content"] == "Done."
    assert server.requests[0].messages[1]["content"] == ""
    assert thread[1]["content"] is None  # the caller's thread is not changed


def test_tools_go_with_tool_choice_auto() -> None:
    tools = [{"type": "function", "function": {"name": "memory", "parameters": {"type": "object"}}}]
    call = tool_call("memory", {"command": "read", "path": ""}, call_id="c1")
    with ChatServer([Reply(tool_calls=[call]), "plain"], modes={"needs_tool_choice"}) as server:
        model = OpenAICompatibleModel(server.base_url, "tiny")
        assert model.complete(HELLO, tools=tools)["tool_calls"][0]["id"] == "c1"
        model.complete(HELLO)
    assert server.requests[0].body["tool_choice"] == "auto"
    assert "tool_choice" not in server.requests[1].body and "tools" not in server.requests[1].body


def test_settings_reach_the_request_and_the_call_can_override_temperature() -> None:
    settings = ModelSettings(url="http://unused/v1", model="tiny", max_tokens=64, temperature=0.7)
    with ChatServer(["a", "b"]) as server:
        model = build_model(ModelSettings(**{**settings.__dict__, "url": server.base_url}))
        model.complete(HELLO)
        model.complete(HELLO, temperature=0.0)
    assert [(r.body["max_tokens"], r.body["temperature"]) for r in server.requests] == [(64, 0.7), (64, 0.0)]


def test_settings_from_the_environment_and_overrides() -> None:
    env = {"FSMEM_MODEL_URL": "http://h:1/v1", "FSMEM_MODEL": "gemma", "FSMEM_TIMEOUT": "12.5"}
    assert ModelSettings.from_env(env) == ModelSettings(url="http://h:1/v1", model="gemma", timeout=12.5)
    assert ModelSettings.from_env(env, model="other", max_tokens=None).model == "other"
    assert ModelSettings.from_env({}).max_tokens == DEFAULT_MAX_TOKENS == 1024
    with pytest.raises(ModelError, match=r"\$FSMEM_TIMEOUT is 'soon'; set it to a number of seconds"):
        ModelSettings.from_env({"FSMEM_TIMEOUT": "soon"})
    with pytest.raises(ModelError, match="no model: pass --model-url URL and --model NAME"):
        build_model(ModelSettings.from_env({"FSMEM_MODEL_URL": "http://h:1/v1"}))


def test_an_uncapped_server_answers_because_max_tokens_is_sent() -> None:
    # without max_tokens this server generates until its context is full (here: until it is stopped)
    with ChatServer(["word " * 2000], modes={"uncapped"}) as server:
        reply = build_model(ModelSettings(url=server.base_url, model="tiny", timeout=5)).complete(HELLO)
    assert server.requests[0].body["max_tokens"] == 1024
    assert len(reply["content"].split(" ")) == 1024


def test_a_server_that_trickles_forever_is_cut_off_at_the_timeout() -> None:
    # each byte comes within the socket timeout, so only a deadline on the whole answer ends the call
    trickled = Reply(raw=json.dumps({"choices": [{"message": {"content": "x" * 400}}]}), trickle=0.05)
    with ChatServer([trickled]) as server:
        with pytest.raises(ModelError, match=r"did not answer within 0.5 seconds; raise --timeout, lower "
                                             r"--max-tokens"):
            OpenAICompatibleModel(server.base_url, "tiny", timeout=0.5).complete(HELLO)


def test_429_and_503_are_retried_as_retry_after_says() -> None:
    waits: list[float] = []
    script = [Reply(status=429, raw='{"error": {"message": "rate limited"}}', headers={"Retry-After": "7"}),
              Reply(status=503, raw="busy"),
              Reply(status=503, raw="busy", headers={"Retry-After": "3600"}),
              "ok"]
    with ChatServer(script) as server:
        reply = OpenAICompatibleModel(server.base_url, "tiny", sleep=waits.append).complete(HELLO)
    assert reply["content"] == "ok" and len(server.requests) == 4
    assert waits == [7.0, 2.0, 30.0]  # Retry-After, else 1, 2, 4…; never more than 30 s


def test_retry_after_as_an_http_date() -> None:
    when = email.utils.format_datetime(datetime.now(timezone.utc) + timedelta(seconds=20), usegmt=True)
    waits: list[float] = []
    with ChatServer([Reply(status=503, raw="busy", headers={"Retry-After": when}), "ok"]) as server:
        OpenAICompatibleModel(server.base_url, "tiny", sleep=waits.append).complete(HELLO)
    assert len(waits) == 1 and 10 < waits[0] <= 20


def test_retries_are_bounded_and_the_error_names_the_servers_message() -> None:
    waits: list[float] = []
    busy = Reply(status=503, raw=json.dumps({"error": {"message": "Loading model", "type": "unavailable"}}))
    with ChatServer([busy] * 6) as server:
        url = server.base_url
        with pytest.raises(ModelError) as caught:
            OpenAICompatibleModel(url, "tiny", sleep=waits.append).complete(HELLO)
    assert waits == [1.0, 2.0, 4.0] and len(server.requests) == 4
    assert caught.value.message == (f"the model server at {url}/chat/completions answered HTTP 503: "
                                    "Loading model. Tried 4 times; try again later.")


def test_a_server_that_refuses_response_format_is_asked_again_without_it_once() -> None:
    with ChatServer(['{"facts": []}', '{"facts": []}'], modes={"no_response_format"}) as server:
        model = OpenAICompatibleModel(server.base_url, "tiny")
        assert model.complete(HELLO, response_format=JSON_OBJECT)["content"] == '{"facts": []}'
        assert model.complete(HELLO, response_format=JSON_OBJECT)["content"] == '{"facts": []}'
    assert [r.body.get("response_format") for r in server.requests] == [JSON_OBJECT, None, None]


def test_an_error_that_does_not_name_response_format_is_not_retried() -> None:
    with ChatServer([Reply(status=400, raw='{"error": {"message": "context length exceeded"}}'), "ok"]) as server:
        with pytest.raises(ModelError, match="answered HTTP 400: context length exceeded"):
            OpenAICompatibleModel(server.base_url, "tiny").complete(HELLO, response_format=JSON_OBJECT)
    assert len(server.requests) == 1


def test_a_redirect_is_not_followed_with_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # urllib would follow a 302 on a POST as a GET to the named host, the Authorization header kept.
    monkeypatch.setenv("TEST_MODEL_KEY", "k-123")
    with ChatServer(["stolen"]) as elsewhere:
        with ChatServer([Reply(status=302, raw="", headers={"Location": elsewhere.base_url + "/chat/completions"})]) as server:
            with pytest.raises(ModelError) as refused:
                OpenAICompatibleModel(server.base_url, "tiny", api_key_env="TEST_MODEL_KEY").complete(HELLO)
    assert elsewhere.requests == []
    assert "HTTP 302" in refused.value.message and "give that address as --model-url" in refused.value.message
