"""Bad requests get an OpenAI-style 4xx naming what is wrong, and the gateway keeps serving after
each (the `still_serving` fixture sends a good request and checks /health afterwards). Answers
cut inside a multi-byte character by a tiny max_tokens are repaired, never a 400/500."""

import json

import pytest

import e2e_util as u


def raw(gateway, path, content):
    return gateway.post(path, content=content)


def test_malformed_json_is_400(gateway, still_serving):
    for path in ("/v1/completions", "/v1/chat/completions", "/v1/rerank"):
        r = raw(gateway, path, b'{"prompt": "abc", "best_of": ')
        assert r.status_code == 400, (path, r.status_code, r.text)
        assert u.error_of(r)["type"] == "invalid_request_error"


@pytest.mark.parametrize("path,body,field", [
    ("/v1/completions", b'{"model":"m","prompt":"caf\xe9 au lait","best_of":2,"max_tokens":4}', "prompt"),
    ("/v1/chat/completions",
     b'{"model":"m","messages":[{"role":"user","content":"caf\xe9"}],"best_of":2,"max_tokens":4}',
     "messages[0].content"),
], ids=["prompt", "chat-content"])
def test_non_utf8_byte_is_400_naming_the_field(gateway, still_serving, path, body, field):
    r = raw(gateway, path, body)
    assert r.status_code == 400, (r.status_code, r.text)
    err = u.error_of(r)
    assert err["type"] == "invalid_request_error"
    assert field in err["message"] or err.get("param") == field, err


@pytest.mark.parametrize("body,param", [
    ({"prompt": "Hi", "best_of": 4, "stream": True, "max_tokens": 4}, "stream"),
    ({"prompt": "Hi", "best_of": 65, "max_tokens": 4}, "best_of"),
    ({"prompt": "Hi", "best_of": 0, "max_tokens": 4}, "best_of"),
    ({"prompt": "Hi", "best_of": 2, "n": 3, "max_tokens": 4}, "n"),
    ({"prompt": "Hi", "best_of": 2, "alpha": 1.5, "max_tokens": 4}, "alpha"),
    ({"prompt": "Hi", "best_of": 2, "policy": "greedy", "max_tokens": 4}, "policy"),
], ids=["stream-with-best_of", "best_of-over-max", "best_of-0", "n-over-best_of", "alpha", "policy"])
def test_bad_parameter_is_400(gateway, model_name, still_serving, body, param):
    r = gateway.post("/v1/completions", {"model": model_name, **body})
    assert r.status_code == 400, (r.status_code, r.text)
    err = u.error_of(r)
    assert err["type"] == "invalid_request_error", err
    assert err.get("param") == param or param in err["message"], err


PROMPTS = {
    "completions": "日本の首都はどこですか？絵文字で答えてください 🎌🗼",
    "chat": "用中文和表情符号回答：你今天感觉怎么样？🙂🎉",
}


@pytest.mark.parametrize("max_tokens", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("route", ["completions", "chat"])
def test_tiny_max_tokens_with_multibyte_text_is_200(gateway, model_name, still_serving, route, max_tokens):
    if route == "completions":
        path, body = "/v1/completions", {"prompt": PROMPTS[route]}
    else:
        path, body = "/v1/chat/completions", {"messages": [{"role": "user", "content": PROMPTS[route]}]}
    r = gateway.post(path, {"model": model_name, "best_of": 4, "n": 2, "max_tokens": max_tokens,
                            "temperature": 1.0, **body})
    assert r.status_code == 200, (r.status_code, r.text)
    # Valid UTF-8 on the wire, and no lone surrogate escapes in the decoded strings.
    d = json.loads(r.content.decode("utf-8"))
    texts = [c["text"] for c in d["hetreward"]["candidates"]]
    texts += [c.get("text") if route == "completions" else c["message"]["content"] for c in d["choices"]]
    for t in texts:
        t.encode("utf-8")  # raises on a lone surrogate
