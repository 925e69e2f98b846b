"""The JSON API through TestClient: /api/* answers against the checkpoint run outside the server, the 4xx
details of bad requests, and requests in parallel."""

import base64
import json

import numpy as np
import pytest

from inference.corpora.ff_study_files import ANALYSIS_FILE
from tests.app.test_routes import MODEL, TEXT


def test_api_models(client):
    body = client.get("/api/models").json()
    assert [m["name"] for m in body["models"]] == [
        "extended_neural_gpu_de_en",
        "neural_gpu_addition",
        "tiny_language_model",
        "tiny_membottleneck",
        "tiny_memtransformer",
        "tiny_transformer",
        "tiny_working_memory",
    ]
    assert body["models"][3]["config"]["memory_size"] == 3 and body["models"][3]["bleu"]["test_2016_flickr"] == 2.5
    capabilities = {m["name"]: set(m["capabilities"]) for m in body["models"]}
    assert {"translates", "memory_tokens"} <= capabilities["tiny_memtransformer"]
    assert "memory_tokens" not in capabilities["tiny_transformer"] and "translates" in capabilities["tiny_transformer"]
    assert {"attention", "ff_keys", "generates_text", "next_token"} == capabilities["tiny_language_model"]
    assert {"translates", "recurrent_steps", "source_attribution"} == capabilities["neural_gpu_addition"]
    assert body["broken"][0]["name"] == "broken_model"


def test_api_translate_with_interventions(client, checkpoint_dir):
    from inference.core.checkpoint import load_checkpoint
    from inference.core.interventions import Interventions, KnockoutSlots, MemorySize
    from inference.core.tracing import run_with_trace

    asked = [{"kind": "knockout_slots", "slots": [4]}, {"kind": "memory_size", "size": 5}]
    body = client.post("/api/translate", json={"model": MODEL, "text": TEXT, "interventions": asked}).json()
    assert body["memory_size"] == 5  # echoed normalised: the memory size first
    assert body["interventions"] == [{"kind": "memory_size", "size": 5}, {"kind": "knockout_slots", "slots": [4]}]
    assert body["roles"]["enc"][:5] == ["mem"] * 5 and body["roles"]["enc"][-1] == "special"
    assert body["tokens"]["enc"][:2] == ["[mem0]", "[mem1]"]
    expected = run_with_trace(  # the checkpoint run here, outside the server, under the same interventions
        load_checkpoint(checkpoint_dir / MODEL, "cpu"),
        TEXT,
        names=["logits"],
        interventions=Interventions.of(MemorySize(size=5), KnockoutSlots(slots=(4,))),
        max_new_tokens=12,
    )
    assert body["translation"] == expected.outputs[0]


def test_api_attention_ships_uint8_layer(client):
    body = client.post(
        "/api/attention", json={"model": MODEL, "text": TEXT, "stack": "decoder.cross_attn", "layer": 1}
    ).json()
    weights = body["weights"]
    assert weights["dtype"] == "u1" and weights["unit"] == "percent"
    heads, q, k = weights["shape"]
    assert (heads, q, k) == (2, len(body["query_tokens"]), len(body["key_tokens"]))
    array = np.frombuffer(base64.b64decode(weights["bdata"]), dtype=np.uint8).reshape(heads, q, k)
    assert array.max() <= 100 and abs(int(array.sum(-1).mean()) - 100) <= k  # rows sum to ~100% after rounding
    assert body["key_roles"][:3] == ["mem"] * 3
    assert body["at"] == {} and body["calls"] == [{}]  # the layer runs once: its only call


def test_api_blocks_sum_to_one(client):
    blocks = client.post("/api/blocks", json={"model": MODEL, "text": TEXT}).json()["blocks"]
    assert len(blocks) == 3 * 2 * 2  # stacks x layers x heads
    for head in blocks:
        assert abs(head["update"] + head["write"] + head["read"] + head["process"] - 1) < 1e-4


@pytest.mark.parametrize(
    "path, body, status, message",
    [
        ("/api/translate", {"model": "nope", "text": TEXT}, 404, "unknown model"),
        ("/api/translate", {"model": MODEL, "text": ""}, 400, "the text is empty"),
        (
            "/api/translate",
            {"model": MODEL, "text": TEXT, "interventions": [{"kind": "memory_size", "size": 99}]},
            400,
            "memory_size 99 is out of range: this model allows 0 to 9",
        ),
        (
            "/api/translate",
            {"model": MODEL, "text": TEXT, "interventions": [{"kind": "memory_size", "size": 3, "shrink": True}]},
            422,
            "Extra inputs",
        ),
        (
            "/api/translate",
            {"model": MODEL, "text": TEXT, "interventions": [{"kind": "shrink"}]},
            422,
            "Input tag 'shrink' found using 'kind' does not match any of the expected tags",
        ),
        (
            "/api/translate",
            {"model": MODEL, "text": TEXT, "interventions": {"memory_size": 3}},
            422,
            "interventions: Input should be a list",
        ),
        (
            "/api/translate",
            {"model": "tiny_transformer", "text": TEXT, "interventions": [{"kind": "memory_size", "size": 1}]},
            400,
            "memory_size 1 is out of range: this model has no memory",
        ),
        (
            "/api/translate",
            {"model": MODEL, "text": TEXT, "interventions": [{"kind": "mask_memory"}]},
            400,
            "mask_memory does not apply to this memory_transformer model; it takes memory_size, knockout_slots, "
            "block_memory_reads, scale",
        ),
        (
            "/api/translate",
            {
                "model": MODEL,
                "text": TEXT,
                "interventions": [{"kind": "scale", "hook": "encoder.layers.0.attn.z", "axis": "nope", "index": [0]}],
            },
            400,
            "encoder.layers.0.attn.z has no axis 'nope'; its axes are batch, head, query, d_head",
        ),
        ("/api/translate", {"model": "broken_model", "text": TEXT}, 409, "unavailable"),
        (
            "/api/attention",
            {"model": MODEL, "text": TEXT, "stack": "encoder.attn", "layer": 9},
            400,
            "layer 9 is out of range",
        ),
        ("/api/attention", {"model": MODEL, "text": TEXT, "stack": "nowhere", "layer": 0}, 400, "unknown stack"),
        (
            "/api/attention",
            {"model": MODEL, "text": TEXT, "stack": "encoder.attn", "layer": 0, "at": {"segment": 1}},
            400,
            "encoder.layers.0.attn.pattern has no call {'segment': 1}; its calls: [{}]",
        ),
        ("/api/attention", {"model": MODEL, "text": TEXT, "stack": "encoder.attn", "layer": -1}, 422, "layer"),
        ("/api/blocks", {"model": MODEL}, 422, "text"),
    ],
)
def test_api_bad_input_is_4xx_with_detail(client, path, body, status, message):
    response = client.post(path, json=body)
    assert response.status_code == status
    assert message in response.json()["detail"]


def test_api_rejects_non_json_body(client):
    response = client.post("/api/translate", content=b"\xff\xfe not json", headers={"Content-Type": "application/json"})
    assert 400 <= response.status_code < 500 and response.json()["detail"]


def test_openapi_lists_the_api(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/api/models", "/api/translate", "/api/attention", "/api/blocks", "/healthz"} <= set(paths)


def test_api_ff_study_answers_the_stored_analysis(client, checkpoint_dir):
    """/api/ff/{model}/study answers the study's ff_analysis.json as written: every key, every value."""
    stored = json.loads((checkpoint_dir / "tiny_language_model" / ANALYSIS_FILE).read_text())
    body = client.get("/api/ff/tiny_language_model/study").json()
    assert body == stored
    assert [layer["layer"] for layer in body["aggregation"]["layers"]] == ["layers.0.ff", "layers.1.ff"]


def test_api_attribution(client):
    body = client.post("/api/attribution", json={"model": MODEL, "text": TEXT, "position": 0}).json()
    assert len(body["integrated_gradients_memory"]) == 3 and len(body["saliency_source"]) == len(body["source_tokens"])
    response = client.post("/api/attribution", json={"model": MODEL, "text": TEXT, "position": 999})
    assert response.status_code == 400 and "out of range" in response.json()["detail"]


def test_api_compare(client):
    body = client.post(
        "/api/compare", json={"models": [MODEL, "tiny_membottleneck", "tiny_transformer"], "text": TEXT}
    ).json()
    assert [row["model"] for row in body["models"]] == [MODEL, "tiny_membottleneck", "tiny_transformer"]
    assert {b["stack"] for b in body["models"][1]["blocks"]} == {
        "encoder.mem.attn",
        "encoder.seq.attn",
        "decoder.self_attn",
        "decoder.cross_attn",
    }
    assert client.post("/api/compare", json={"models": ["nope", MODEL], "text": TEXT}).status_code == 404
    assert client.post("/api/compare", json={"models": [], "text": TEXT}).status_code == 422


def test_concurrent_requests_queue_and_agree(client):
    from concurrent.futures import ThreadPoolExecutor

    bodies = [
        {
            "model": MODEL,
            "text": f"{TEXT} {i}",
            "interventions": [{"kind": "memory_size", "size": i % 4}]
            + [{"kind": "block_memory_reads", "stacks": "both"}] * (i % 2),
        }
        for i in range(8)
    ]
    expected = [client.post("/api/translate", json=body).json() for body in bodies]
    client.app.state.gateway._recent.clear()  # make the parallel round compute again
    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(pool.map(lambda body: client.post("/api/translate", json=body), bodies))
    assert [r.status_code for r in responses] == [200] * 8
    assert [r.json() for r in responses] == expected


def test_translate_by_beam_search_says_how_it_decoded(client, checkpoint_dir):
    from inference.core.checkpoint import load_checkpoint
    from inference.core.decoding import Decoding
    from inference.core.tracing import run_with_trace

    beam = {"method": "beam", "beam_size": 3, "length_penalty": 1.0}
    response = client.post("/api/translate", json={"model": MODEL, "text": TEXT, "decoding": beam}).json()
    expected = run_with_trace(
        load_checkpoint(checkpoint_dir / MODEL, "cpu"),
        TEXT,
        names=["logits"],
        decoding=Decoding(**beam),
        max_new_tokens=12,
    )
    assert response["decoding"] == beam and response["translation"] == expected.outputs[0]
    assert client.post("/api/translate", json={"model": MODEL, "text": TEXT}).json()["decoding"]["method"] == "greedy"


def test_beam_search_on_a_model_that_samples_its_memory_is_a_400(client):
    response = client.post(
        "/api/translate", json={"model": "tiny_working_memory", "text": TEXT, "decoding": {"method": "beam"}}
    )
    assert response.status_code == 400 and "beam" in response.json()["detail"]
    bad = client.post(
        "/api/translate", json={"model": MODEL, "text": TEXT, "decoding": {"method": "beam", "beam_size": 50}}
    )
    assert bad.status_code == 422


def test_attention_and_blocks_answer_for_every_model_with_attention(client):
    """/api/attention and /api/blocks serve any model that attends (a working-memory decoder, the language model),
    not only the Explore page's; a model without attention (a Neural GPU) is refused naming the models that do."""
    wm = client.post(
        "/api/attention",
        json={"model": "tiny_working_memory", "text": TEXT, "stack": "decoder.self_attn", "layer": 0},
    )
    assert wm.status_code == 200 and wm.json()["stack"] == "decoder.self_attn"
    lm_blocks = client.post("/api/blocks", json={"model": "tiny_language_model", "text": "a man"})
    assert lm_blocks.status_code == 200 and lm_blocks.json()["blocks"]
    refused = client.post(
        "/api/attention", json={"model": "neural_gpu_addition", "text": "1+1", "stack": "x", "layer": 0}
    )
    assert refused.status_code == 400
    assert "neural_gpu_addition is not an attention model" in refused.json()["detail"]
