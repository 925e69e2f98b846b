"""A family written under tests/ only (tests/toy_family: segments that carry
a state) is served by the app as it is: listed where its capabilities say,
its captures of every segment on the Explore page and in the API, and its
lesions applied. Nothing in app/, templates/ or the inference core knows it."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

import tests.toy_family  # noqa: F401 (registers the family)
from app.main import create_app
from app.settings import Settings
from inference.core.checkpoint import CheckpointRegistry, save_checkpoint
from inference.core.family import LoadedModel, build_model
from tests.app.conftest import HTMX, lesion_fields
from tests.app.test_routes import figure_z
from tests.toy_family.family import ToySegmentsFamily
from tests.toy_family.model import ToyRecord, ToySegmentsConfig

MODEL = "toy_segments_model"
TEXT = "zwei Männer spielen Fußball auf der Wiese"


@pytest.fixture(scope="module")
def toy_client(tmp_path_factory, tiny_tokenizer):
    root = tmp_path_factory.mktemp("toy_checkpoints")
    torch.manual_seed(0)
    model = build_model(ToySegmentsConfig(vocab_size=tiny_tokenizer.vocab_size)).eval()
    save_checkpoint(
        root / MODEL, model, tiny_tokenizer, meta={"training_data": "none (random weights)", "state_init": "random"}
    )
    settings = Settings(
        checkpoint_dir=root,
        device="cpu",
        max_text_chars=300,
        max_source_tokens=40,
        max_new_tokens=12,
        database=tmp_path_factory.mktemp("toy_db") / "memlens.sqlite3",
    )
    with TestClient(create_app(settings)) as client:
        yield client


def segments_of(client) -> int:
    """How many segments the toy reads TEXT in: its tokens and EOS, 4 per segment."""
    ids = client.app.state.gateway.model(MODEL).tokenizer.encode_sources([TEXT])[0]
    return -(-len(ids) // ToySegmentsConfig().segment_length)


def figure(html: str, name: str) -> dict:
    found = re.search(rf'id="figure-data-{name}">(.*?)</script>', html, re.S)
    assert found, f"no figure {name} in the fragment"
    return json.loads(found.group(1))


def run(client, **fields) -> str:
    form = {"model": MODEL, "text": TEXT, "stack": "block.attn", "layer": 0, "head": 0, **fields}
    response = client.post("/explore/run", data=form, headers=HTMX)
    assert response.status_code == 200, response.text
    return response.text


def test_the_home_page_links_the_toy_to_the_pages_its_capabilities_allow(toy_client):
    row = re.search(
        rf"<td class=\"name\">{MODEL}<br><small class=\"pages\">(.*?)</small>", toy_client.get("/").text
    ).group(1)
    assert f'href="/explore?model={MODEL}"' in row
    assert "/memory" not in row and "/ff" not in row  # no working memory, no FF memories declared


def test_the_explore_page_offers_the_controls_of_what_the_toy_can_do(toy_client):
    page = toy_client.get(f"/explore?model={MODEL}").text
    assert 'name="call"' in page and "Segment" in page  # it runs its layer once per segment
    assert 'name="memory_size.size" min="0" max="4" value="2"' in page  # state slots: 2 trained, lesions up to 4
    assert 'name="knockout_slots.slots"' not in page and 'name="decoding"' not in page  # no [mem] slots, no beam
    kinds = re.findall(r'<fieldset class="lesion" data-kind="([a-z_]+)">', page)
    assert kinds == [
        "memory_size",
        "toy_rotate_state",
        "scale",
    ]  # the shared kinds the toy takes, its own; scale folded
    assert '<option value="carry.enter">' in page  # its own hook points, for the scale lesion


def test_every_segment_reaches_the_explore_page(toy_client):
    segments = segments_of(toy_client)
    assert segments >= 3
    html = run(toy_client, call=1)
    calls = figure(html, "calls")
    titles = [a["text"] for a in calls["layout"]["annotations"]]
    assert titles == [f"segment {s}" for s in range(segments)]
    heatmap = figure(html, "heatmap")["data"][0]
    # segment 1: the two state slots, then its own 4 tokens (labels are "position token")
    tokenizer = toy_client.app.state.gateway.model(MODEL).tokenizer
    tokens = tokenizer.display_tokens(tokenizer.encode_sources([TEXT])[0][4:8])
    assert heatmap["y"] == ["0 [state0]", "1 [state1]"] + [f"{2 + i} {token}" for i, token in enumerate(tokens)]


def test_a_segment_out_of_range_is_refused_with_the_range(toy_client):
    response = toy_client.post(
        "/explore/run", data={"model": MODEL, "text": TEXT, "stack": "block.attn", "call": 99}, headers=HTMX
    )
    assert response.status_code == 400 and f"segment 99 is out of range (0 to {segments_of(toy_client) - 1})" in (
        response.text
    )


def test_lesions_apply_to_the_toy(toy_client):
    plain = figure(run(toy_client, call=2), "heatmap")["data"][0]
    reset = run(toy_client, call=2, **lesion_fields(scale={"hook": "carry.enter", "factor": 0}))  # state zeroed
    assert "the views show the lesioned run" in reset
    zeroed = figure(reset, "heatmap")["data"][0]
    assert zeroed["y"] == plain["y"] and zeroed["z"] != plain["z"]
    larger = figure(run(toy_client, call=2, **lesion_fields(memory_size={"size": 3})), "heatmap")["data"][0]
    assert larger["y"][:3] == ["0 [state0]", "1 [state1]", "2 [state2]"]


def test_the_api_gives_every_segment_by_index(toy_client):
    body = {"model": MODEL, "text": TEXT, "stack": "block.attn", "layer": 0, "at": {"segment": 1}}
    response = toy_client.post("/api/attention", json=body)
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["calls"] == [{"segment": s} for s in range(segments_of(toy_client))]
    assert data["key_tokens"][:2] == ["[state0]", "[state1]"] and data["at"] == {"segment": 1}
    lesioned = toy_client.post(
        "/api/attention", json={**body, "interventions": [{"kind": "scale", "hook": "carry.enter", "factor": 0}]}
    ).json()
    assert lesioned["weights"]["bdata"] != data["weights"]["bdata"]
    models = toy_client.get("/api/models").json()["models"]
    assert [m["capabilities"] for m in models if m["name"] == MODEL] == [["attention", "segments"]]


def test_the_segments_page_serves_the_toy_by_its_capabilities_alone(toy_client):
    row = re.search(
        rf"<td class=\"name\">{MODEL}<br><small class=\"pages\">(.*?)</small>", toy_client.get("/").text
    ).group(1)
    assert f'href="/segments?model={MODEL}"' in row
    page = toy_client.get(f"/segments?model={MODEL}")
    assert page.status_code == 200 and 'name="reset_memory.segment"' not in page.text  # no memory tokens
    response = toy_client.post("/segments/run", data={"model": MODEL, "text": TEXT, "segment": 1}, headers=HTMX)
    assert response.status_code == 200, response.text
    assert figure(response.text, "segment")["layout"]["title"]["text"].endswith("segment 1")
    assert 'id="figure-data-strip"' not in response.text and "decoded, so no per-position strip" in response.text


@pytest.mark.parametrize("raised", [RuntimeError, KeyError])
def test_a_bug_in_a_familys_run_is_a_500_with_an_error_id_and_its_traceback_logged(
    toy_client, monkeypatch, caplog, raised
):
    """Not the reader's fault, so not a 4xx: the page says something broke and gives an id; the log has the
    traceback under the same id."""

    def broken_trace(self, loaded, request):
        raise raised("the toy family's own bug")

    monkeypatch.setattr(ToySegmentsFamily, "trace", broken_trace)
    client = TestClient(toy_client.app, raise_server_exceptions=False)
    text = {RuntimeError: "zwei Männer spielen", KeyError: "Fußball auf der Wiese"}[raised]  # runs no test cached
    response = client.post("/segments/run", data={"model": MODEL, "text": text}, headers=HTMX)
    assert response.status_code == 500 and response.headers["HX-Retarget"] == "#errors", response.text
    error_id = re.search(r"something broke on the server \(error id ([0-9a-f]{12})\)", response.text).group(1)
    (record,) = [r for r in caplog.records if r.name == "memlens.errors"]
    assert error_id in record.getMessage() and "POST /segments/run" in record.getMessage()
    assert record.exc_info[0] is raised and "the toy family's own bug" in caplog.text
    api = client.post("/api/attention", json={"model": MODEL, "text": text, "stack": "block.attn", "layer": 0})
    assert api.status_code == 500 and "error id" in api.json()["detail"], api.text


def test_the_toy_lesion_kind_is_in_the_explore_form_with_its_bounds(toy_client):
    page = toy_client.get(f"/explore?model={MODEL}").text
    form = re.search(r'<fieldset class="lesion" data-kind="toy_rotate_state">(.*?)</fieldset>', page, re.S)
    assert form, "the toy's own lesion kind is not in the form"
    assert "Rotate the carried state" in form.group(1)
    assert re.search(r'name="toy_rotate_state.shift"[^>]*min="1"[^>]*max="7"', form.group(1))
    assert re.search(r'name="toy_rotate_state.from_segment"[^>]*value="0"[^>]*min="0"[^>]*max="31"', form.group(1))
    assert "1 to 7; slots to rotate by" in form.group(1)  # its bounds and description, in words


def test_the_toy_lesion_kind_runs_from_the_form_and_is_said_in_the_note(toy_client):
    plain = figure(run(toy_client, call=2), "heatmap")["data"][0]
    html = run(toy_client, call=2, lesion="toy_rotate_state", **{"toy_rotate_state.shift": 1})
    assert "carried state rotated by 1 slot from segment 0" in html
    rotated = figure(html, "heatmap")["data"][0]
    assert rotated["y"] == plain["y"] and rotated["z"] != plain["z"]
    later = figure(
        run(
            toy_client,
            call=2,
            lesion="toy_rotate_state",
            **{"toy_rotate_state.shift": 1, "toy_rotate_state.from_segment": 3},
        ),
        "heatmap",
    )["data"][0]
    assert later["z"] == plain["z"]  # segment 2 comes before the rotation starts


def test_the_toy_rotation_swaps_the_two_state_slots_of_the_map_it_starts_at(toy_client):
    """The toy has no positions: rotating its 2 state slots by 1 where segment 2 begins swaps rows 0 and 1 and
    columns 0 and 1 of segment 2's map, and leaves every other weight as it was (whole percent, +-1 for rounding)."""
    plain = figure_z(run(toy_client, call=2), "heatmap")
    fields = {"toy_rotate_state.shift": 1, "toy_rotate_state.from_segment": 2}
    rotated = figure_z(run(toy_client, call=2, lesion="toy_rotate_state", **fields), "heatmap")
    swapped = plain[[1, 0, *range(2, plain.shape[0])]][:, [1, 0, *range(2, plain.shape[1])]]
    assert not np.array_equal(swapped, plain)  # the swap is visible in this map
    assert np.abs(rotated.astype(int) - swapped.astype(int)).max() <= 1


def test_a_toy_lesion_out_of_its_bounds_is_refused_in_words(toy_client):
    for shift, said in (("9", "less than or equal to 7"), ("0", "greater than or equal to 1"), ("x", "valid integer")):
        response = toy_client.post(
            "/explore/run",
            data={
                "model": MODEL,
                "text": TEXT,
                "stack": "block.attn",
                "lesion": "toy_rotate_state",
                "toy_rotate_state.shift": shift,
            },
            headers=HTMX,
        )
        assert (
            response.status_code == 400
            and "Rotate the carried state: shift:" in response.text
            and said in response.text
        )
    unknown = toy_client.post("/explore/run", data={"model": MODEL, "text": TEXT, "lesion": "melt"}, headers=HTMX)
    assert unknown.status_code == 400 and "unknown lesion kind &#39;melt&#39;" in unknown.text


def test_the_api_takes_the_toy_lesion_kind_and_openapi_describes_it(toy_client):
    schemas = toy_client.get("/openapi.json").json()["components"]["schemas"]
    rotate = schemas["RotateState"]
    assert rotate["properties"]["shift"]["minimum"] == 1 and rotate["properties"]["shift"]["maximum"] == 7
    assert "slots rotated" in rotate["description"]
    body = {"model": MODEL, "text": TEXT, "stack": "block.attn", "layer": 0, "at": {"segment": 2}}
    plain = toy_client.post("/api/attention", json=body).json()
    lesioned = toy_client.post(
        "/api/attention", json={**body, "interventions": [{"kind": "toy_rotate_state", "shift": 1}]}
    )
    assert lesioned.status_code == 200, lesioned.text
    assert lesioned.json()["key_tokens"] == plain["key_tokens"]
    assert lesioned.json()["weights"] != plain["weights"]
    refused = toy_client.post(
        "/api/attention", json={**body, "interventions": [{"kind": "toy_rotate_state", "shift": 8}]}
    )
    assert refused.status_code == 422
    assert "interventions.0.toy_rotate_state.shift: Input should be less than or equal to 7" in refused.json()["detail"]


def test_the_toy_token_axis_role_reaches_the_api_and_the_map(toy_client):
    body = {"model": MODEL, "text": TEXT, "stack": "block.attn", "layer": 0, "at": {"segment": 1}}
    data = toy_client.post("/api/attention", json=body).json()
    assert data["query_axis_role"] == "segment" and data["key_axis_role"] == "segment"
    hover = figure(run(toy_client, call=1), "heatmap")["data"][0]["hovertemplate"]
    assert hover.startswith("query (the segment's positions) %{y}<br>key (the segment's positions) %{x}")


def test_a_trace_with_an_axis_its_family_does_not_declare_is_a_bug(tiny_tokenizer, monkeypatch):
    from inference.core.axes import AxisRole
    from inference.core.tracing import run_with_trace

    torch.manual_seed(0)
    model = build_model(ToySegmentsConfig(vocab_size=tiny_tokenizer.vocab_size)).eval()
    loaded = LoadedModel("toy", model, tiny_tokenizer)
    assert run_with_trace(loaded, TEXT).run.token_axes == {"seg": AxisRole.SEGMENT}
    monkeypatch.setattr(ToySegmentsFamily, "token_axes", {"block": AxisRole.SEGMENT})
    said = r"the toy_segments family's trace has token axes it does not declare: \['seg'\]"
    with pytest.raises(RuntimeError, match=said):
        run_with_trace(loaded, TEXT)


def test_the_toy_run_record_field_is_read_typed_and_shown(toy_client, tmp_path, tiny_tokenizer, monkeypatch):
    row = re.search(rf'<td class="name">{MODEL}<br>.*?</tr>', toy_client.get("/").text, re.S).group(0)
    assert '<small class="record" title="how the carried state&#39;s slots start">state init: random</small>' in row
    (listed,) = [m for m in toy_client.get("/api/models").json()["models"] if m["name"] == MODEL]
    assert listed["meta"] == {"version": 2, "training_data": "none (random weights)", "state_init": "random"}
    record = toy_client.app.state.gateway.model(MODEL).record
    assert isinstance(record.family_fields, ToyRecord) and record.family_fields.state_init == "random"

    model = build_model(ToySegmentsConfig(vocab_size=tiny_tokenizer.vocab_size))
    save_checkpoint(tmp_path / "melted", model, tiny_tokenizer, meta={"state_init": "random"})
    config = tmp_path / "melted" / "config.json"
    config.write_text(config.read_text().replace('"state_init": "random"', '"state_init": "melted"'))
    registry = CheckpointRegistry(tmp_path, device="cpu")
    assert (
        "config.json: meta does not read: state_init: Input should be 'random' or 'trained'"
        in (registry.broken()["melted"])
    )
    monkeypatch.setattr(ToySegmentsFamily, "record_fields", None)  # a family that records no fields of its own
    assert (
        "config.json: meta has fields no toy_segments record has: state_init"
        in (CheckpointRegistry(tmp_path, device="cpu").broken()["melted"])
    )
