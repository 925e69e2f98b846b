"""The API's contract: one error shape, every status a route can return
documented, a response model on every JSON route, and schema examples that
the server accepts."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

from inference.core.bounds import MAX_INDEX
from inference.core.checkpoint import load_checkpoint
from inference.core.hooks import hook_points
from inference.core.places import REPO_ROOT

ERROR_REF = "#/components/schemas/ErrorResponse"
ERROR_CONDITIONS = {  # status -> the words that name its condition, in its documented example and in real answers
    400: "the limit is",
    403: "cross-origin request refused",
    404: "unknown model",
    409: "is unavailable",
    413: "the request body is over",
    414: "the URL is over",  # answered before the app (app/server.py): tests/e2e/test_long_url.py
    422: "Input should be less than or equal to",
}


@pytest.fixture(scope="module")
def spec(client) -> dict:
    return client.get("/openapi.json").json()


def operations(spec):
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def test_every_error_status_answers_the_one_error_model(spec):
    for path, method, operation in operations(spec):
        statuses = [s for s in operation["responses"] if s.startswith(("4", "5"))]
        if operation.get("parameters") or operation.get("requestBody"):
            assert {"413", "422"} <= set(statuses), (method, path)
        for status in statuses:
            schema = operation["responses"][status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": ERROR_REF}, (method, path, status)
    assert "HTTPValidationError" not in spec["components"]["schemas"]


def test_every_json_route_has_a_response_model(spec):
    for path, method, operation in operations(spec):
        schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
        assert schema not in (
            {},
            {"type": "object"},
            {"additionalProperties": True, "type": "object", "title": "Response"},
        ), (method, path)


def test_model_routes_document_400_404_and_409(spec):
    for path, method, operation in operations(spec):
        body = operation.get("requestBody", {}).get("content", {})
        if method == "post" and "model" in str(body) and path != "/api/sweeps":
            assert {"400", "404", "409"} <= set(operation["responses"]), (method, path)


def test_the_schema_examples_are_accepted(spec, client, segments_client):
    """The request examples name the shipped models; here every example is sent
    with a tiny model of the same kind in its place (a segment model's to the server of the briefly trained ones)."""
    tiny = {
        "memtransformer_10": "tiny_memtransformer",
        "transformer": "tiny_transformer",
        "working_memory_de_en": "tiny_working_memory",
        "language_model": "tiny_language_model",
        "rmt_copy": "rmt",
    }
    schemas = spec["components"]["schemas"]
    sent = 0
    for path, _, operation in operations(spec):
        ref = (
            operation.get("requestBody", {})
            .get("content", {})
            .get("application/json", {})
            .get("schema", {})
            .get("$ref")
        )
        if not ref:
            continue
        for example in schemas[ref.rsplit("/", 1)[1]].get("examples", []):
            body = {
                k: tiny.get(v, v) if isinstance(v, str) else [tiny.get(m, m) for m in v] if k == "models" else v
                for k, v in example.items()
            }
            if body.get("model") == "tiny_language_model" and "layer" in body:
                body["layer"] = 1
            server = segments_client if body.get("model") == "rmt" else client
            response = server.post(path, json=body)
            assert response.status_code == 200, (path, body, response.text)
            sent += 1
    assert sent >= 8


def test_the_scale_examples_name_hook_points_of_the_shipped_models(spec):
    """Every example hook of a `scale` is a hook point of the shipped model of its kind."""
    examples = spec["components"]["schemas"]["Scale"]["properties"]["hook"]["examples"]
    shipped = {
        name: set(hook_points(load_checkpoint(REPO_ROOT / "checkpoints" / name, "cpu").model))
        for name in ("memtransformer_10", "language_model")
    }
    assert examples and all(any(hook in points for points in shipped.values()) for hook in examples), examples


def documented_error_examples(spec) -> dict[int, set[str]]:
    """Status -> every example detail the docs show for it, over all routes."""
    examples = defaultdict(set)
    for _, _, operation in operations(spec):
        for status, response in operation["responses"].items():
            if status.startswith("4"):
                examples[int(status)].add(response["content"]["application/json"]["example"]["detail"])
    return examples


def test_each_error_status_has_its_own_example_naming_its_condition(spec):
    examples = documented_error_examples(spec)
    assert set(examples) == set(ERROR_CONDITIONS)
    assert all(len(texts) == 1 for texts in examples.values()), examples
    texts = {status: texts.pop() for status, texts in examples.items()}
    assert len(set(texts.values())) == len(texts), texts
    for status, condition in ERROR_CONDITIONS.items():
        assert condition in texts[status], (status, texts[status])


def shape(message: str) -> str:
    """A message with its quoted names and its numbers masked: what a real answer and its example share."""
    return re.sub(r"[0-9][0-9,]*", "N", re.sub(r"'[^']*'", "Q", message))


CAUSES = {  # status -> a request that causes it: (path, JSON body or raw content, headers)
    400: ("/api/translate", {"model": "tiny_transformer", "text": "ein Hund " * 40}, {}),
    403: ("/api/translate", {"model": "tiny_transformer", "text": "ein Hund"}, {"Sec-Fetch-Site": "cross-site"}),
    404: ("/api/translate", {"model": "nope", "text": "ein Hund"}, {}),
    409: ("/api/translate", {"model": "broken_model", "text": "ein Hund"}, {}),
    413: ("/api/translate", b"x" * 2_000_001, {"Content-Type": "application/json"}),
    422: (
        "/api/attention",
        {"model": "tiny_memtransformer", "stack": "decoder.cross_attn", "layer": MAX_INDEX + 1},
        {},
    ),
}


@pytest.mark.parametrize("status", sorted(CAUSES))
def test_each_error_example_reads_as_the_server_answers(spec, client, status):
    """The documented example and a real answer with that status agree up to the words naming its condition."""
    path, body, headers = CAUSES[status]
    sent = {"content": body} if isinstance(body, bytes) else {"json": body}
    response = client.post(path, headers=headers, **sent)
    assert response.status_code == status, response.text
    (example,) = documented_error_examples(spec)[status]
    real = response.json()["detail"]
    end = shape(example).index(ERROR_CONDITIONS[status]) + len(ERROR_CONDITIONS[status])
    assert shape(real)[:end] == shape(example)[:end], (real, example)
