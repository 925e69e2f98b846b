"""The API's contract: one error shape, every status a route can return
documented, a response model on every JSON route, and schema examples that
the server accepts."""

from __future__ import annotations

import pytest

from app.settings import REPO_ROOT
from inference.core.checkpoint import load_checkpoint
from inference.core.hooks import hook_points

ERROR_REF = "#/components/schemas/ErrorResponse"


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


def test_the_schema_examples_are_accepted(spec, client):
    """The request examples name the shipped models; here every example is sent
    with a tiny model of the same kind in its place."""
    tiny = {
        "memtransformer_10": "tiny_memtransformer",
        "transformer": "tiny_transformer",
        "working_memory_de_en": "tiny_working_memory",
        "language_model": "tiny_language_model",
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
            response = client.post(path, json=body)
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
