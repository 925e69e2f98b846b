"""Inputs that once broke the server, each answered with a 4xx and a short,
clear message: lone surrogates, Unicode digits, unbounded lists, NaN, text
with nothing visible, huge echoes, oversized bodies."""

from __future__ import annotations

import html
import json

import pytest

from tests.app.conftest import HTMX

MT, WM, LM = "tiny_memtransformer", "tiny_working_memory", "tiny_language_model"
TEXT = "ein Hund spielt im Park"

# Every JSON route that reads a text, with a valid body (the text goes in "text").
TEXT_ROUTES = {
    "/api/translate": {"model": MT},
    "/api/attention": {"model": MT, "stack": "encoder.attn", "layer": 0},
    "/api/attribution": {"model": MT, "position": 0},
    "/api/compare": {"models": [MT, "tiny_transformer"]},
    "/api/blocks": {"model": MT},
    "/api/memory": {"model": WM},
    "/api/ff/lens": {"model": LM},
    "/api/explore": {"model": MT},
}
SURROGATE_BODY = '{"model": "%s", "text": "ein \\ud800 Hund"}'
INVISIBLE_TEXTS = ["\u200b\u200b", "\u202e\u2066", "\x00", " \u200d\t", "\ufeff"]


def detail(response) -> str:
    return response.json()["detail"]


@pytest.mark.parametrize("route", TEXT_ROUTES)
def test_every_text_route_accepts_its_valid_body(client, route):
    assert client.post(route, json={**TEXT_ROUTES[route], "text": TEXT}).status_code == 200


@pytest.mark.parametrize("route", TEXT_ROUTES)
def test_a_lone_surrogate_is_a_422_on_every_text_route(client, route):
    body = json.dumps(TEXT_ROUTES[route])[:-1] + ', "text": "ein \\ud800 Hund"}'
    response = client.post(route, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422 and "unicode" in detail(response).lower()


@pytest.mark.parametrize("route", TEXT_ROUTES)
@pytest.mark.parametrize("text", INVISIBLE_TEXTS, ids=["zero-width", "bidi", "nul", "joiner", "bom"])
def test_text_with_nothing_visible_is_refused_on_every_text_route(client, route, text):
    response = client.post(route, json={**TEXT_ROUTES[route], "text": text})
    assert response.status_code in (400, 422)
    assert "visible" in detail(response) or "control character" in detail(response) or "empty" in detail(response)


@pytest.mark.parametrize("where", ["reference", "job"])
def test_surrogates_never_reach_the_job_store(client, where):
    if where == "reference":
        response = client.post(
            "/api/sweeps",
            content='{"model": "' + MT + '", "reference": "\\ud800"}',  # a lone surrogate, escaped as JSON allows
            headers={"content-type": "application/json"},
        )
    else:
        response = client.get("/api/jobs/%ED%A0%80")
    assert response.status_code == 422


@pytest.mark.parametrize("digits", ["²", "①", "٣", "३", "１"])
def test_unicode_digits_are_refused_by_the_forms_as_by_the_api(client, digits):
    keys = client.get("/ff/keys", params={"model": LM, "key": f"1, {digits}"}, headers=HTMX)
    assert keys.status_code == 400 and "ASCII digits" in html.unescape(keys.text)
    edits = client.post(
        "/ff/run", data={"model": LM, "text": "a dog runs", "edits": f"layers.0.ff:{digits} x0"}, headers=HTMX
    )
    assert edits.status_code == 400 and "cannot read" in html.unescape(edits.text)
    scale = client.post(
        "/ff/run", data={"model": LM, "text": "a dog runs", "edits": f"layers.0.ff:1 x{digits}"}, headers=HTMX
    )
    assert scale.status_code == 400 and "ASCII digits" in html.unescape(scale.text)
    heads = client.post(
        "/explore/run", data={"model": MT, "text": TEXT, "ablate": f"encoder.layers.0.attn:{digits}"}, headers=HTMX
    )
    assert heads.status_code == 400 and "ASCII digits" in html.unescape(heads.text)
    api = client.post("/api/ff/keys", json={"model": LM, "keys": [digits]})
    assert api.status_code == 422


def test_unbounded_lists_are_refused_with_the_limit(client):
    keys = client.post("/api/ff/keys", json={"model": LM, "keys": list(range(5000))})
    assert keys.status_code == 422 and "at most 200" in detail(keys)
    heads = [{"kind": "scale", "hook": "encoder.layers.0.attn.z", "axis": "head", "index": [h]} for h in range(20_000)]
    ablate = client.post("/api/translate", json={"model": MT, "text": TEXT, "interventions": heads})
    assert ablate.status_code == 422 and "at most 1024 items" in detail(ablate)
    scaled = client.post(
        "/api/ff/lens",
        json={
            "model": LM,
            "text": "a dog",
            "interventions": [
                {
                    "kind": "scale",
                    "hook": "layers.0.ff.keys",
                    "axis": "ff_key",
                    "index": list(range(20_000)),
                    "factor": 2,
                }
            ],
        },
    )
    assert scaled.status_code == 422 and "at most 8192 items" in detail(scaled)
    typed = client.get("/ff/keys", params={"model": LM, "key": " ".join(["1"] * 500)}, headers=HTMX)
    assert typed.status_code == 400 and "at most 200" in html.unescape(typed.text)


def test_duplicates_are_asked_once(client):
    knockout = {"kind": "knockout_slots", "slots": [1]}
    once = client.post("/api/translate", json={"model": MT, "text": TEXT, "interventions": [knockout]}).json()
    recent = len(client.app.state.gateway._recent)
    many = client.post(
        "/api/translate",
        json={"model": MT, "text": TEXT, "interventions": [{**knockout, "slots": [1] * 900}, knockout, knockout]},
    ).json()
    assert many["interventions"] == [knockout] and many["translation"] == once["translation"]
    assert len(client.app.state.gateway._recent) == recent  # the same question: answered by the run of `once`


def test_a_body_over_the_limit_is_413_before_it_is_parsed(client, settings):
    big = {"model": LM, "keys": list(range(1_200_000))}
    response = client.post("/api/ff/keys", json=big)
    assert response.status_code == 413 and f"{settings.max_request_bytes:,} bytes" in detail(response)


@pytest.mark.parametrize("scale", ["NaN", "Infinity", "-Infinity", "1e309"])
def test_nan_and_infinite_scales_are_refused(client, scale):
    edit = '{"kind": "scale", "hook": "layers.0.ff.keys", "axis": "ff_key", "index": [1], "factor": ' + scale + "}"
    body = f'{{"model": "{LM}", "text": "a dog", "interventions": [{edit}]}}'
    response = client.post("/api/ff/lens", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422 and "interventions.0.scale.factor" in detail(response)
    form = client.post(
        "/ff/run", data={"model": LM, "text": "a dog", "edits": f"layers.0.ff:1 x{scale.lower()}"}, headers=HTMX
    )
    assert form.status_code == 400


def test_errors_repeat_a_short_excerpt_of_the_input(client):
    huge_name = "m" * 100_000
    unknown = client.post("/api/translate", json={"model": huge_name, "text": TEXT})
    assert unknown.status_code == 422 and len(unknown.content) < 2000
    extra = client.post("/api/translate", json={"model": MT, "text": TEXT, **{f"extra_{i}": i for i in range(50_000)}})
    assert extra.status_code == 422 and len(extra.content) < 2000 and "more problems" in detail(extra)
    page = client.get("/explore", params={"model": "x" * 5000})
    assert page.status_code == 422 and len(page.content) < 5000


def test_uploaded_lines_with_nothing_visible_are_refused(client):
    files = {"file": ("corpus.txt", "ein Hund\n\u200b\u200b\n".encode(), "text/plain")}
    response = client.post("/api/uploads", data={"model": MT}, files=files)
    assert response.status_code == 400 and "line 2" in detail(response) and "visible" in detail(response)


def test_a_page_error_is_a_page_for_a_browser_and_a_fragment_for_htmx(client):
    page = client.get("/ff", params={"model": "no_such_model"})
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert 'id="page-error"' in page.text and "unknown model" in html.unescape(page.text)
    fragment = client.post("/explore/run", data={"model": "no_such_model", "text": TEXT}, headers=HTMX)
    assert fragment.status_code == 404 and fragment.headers["HX-Retarget"] == "#errors" and "<html" not in fragment.text


def test_a_broken_checkpoint_is_listed_at_start_and_answered_with_a_page(client):
    broken = {entry["name"]: entry["reason"] for entry in client.get("/api/models").json()["broken"]}
    assert "broken_tokenizer" in broken and "tokenizer.json cannot be loaded" in broken["broken_tokenizer"]
    page = client.get("/explore", params={"model": "broken_tokenizer"})
    assert (
        page.status_code == 409 and "unavailable" in html.unescape(page.text) and not page.text.lstrip().startswith("{")
    )


def test_an_oversized_form_post_gets_a_readable_413_with_the_security_headers(client, settings):
    too_big = "x" * (settings.max_request_bytes + 1)
    fragment = client.post("/explore/run", data={"model": MT, "text": too_big}, headers=HTMX)
    assert fragment.status_code == 413 and fragment.headers["HX-Retarget"] == "#errors" and "bytes" in fragment.text
    api = client.post("/api/translate", content=too_big, headers={"content-type": "application/json"})
    assert api.status_code == 413 and "over" in detail(api)
    assert (
        "default-src 'self'" in api.headers["content-security-policy"]
        and api.headers["x-content-type-options"] == "nosniff"
    )


def test_an_upload_file_name_is_bounded_and_valid(client):
    long_name = client.post(
        "/api/uploads", data={"model": MT}, files={"file": ("x" * 3000 + ".txt", b"ein Hund\n", "text/plain")}
    )
    assert long_name.status_code == 400 and "over 200 characters" in detail(long_name) and len(long_name.content) < 1000


def test_a_layer_the_ff_page_does_not_have_is_a_400_page(client):
    response = client.get("/ff", params={"model": LM, "layer": 99})
    assert response.status_code == 400 and "out of range" in html.unescape(response.text)


@pytest.mark.parametrize("route", sorted(TEXT_ROUTES))
@pytest.mark.parametrize(
    ("content", "content_type"),
    [(b"", "application/json"), (b"{oops", "application/json"), (b"[1, 2]", "application/json"),
     (b'{"model": 5}', "application/vnd.api+json"), (b"model=tiny_memtransformer", "text/plain")],
)  # fmt: skip
def test_a_body_that_is_no_json_object_is_a_422(client, route, content, content_type):
    """The model is read from the body before the body is validated: an empty, broken or foreign body is the
    body's own 422, never a 500 or a model run."""
    response = client.post(route, content=content, headers={"Content-Type": content_type})
    assert response.status_code == 422, response.text
    assert response.json()["detail"]


def test_a_refused_page_keeps_the_input_in_its_links(client):
    page = client.get("/memory", params={"model": "tiny_transformer", "text": "ein Hund"})
    assert page.status_code == 400
    assert 'href="/explore?model=tiny_transformer&amp;text=ein+Hund"' in page.text  # where the model is shown
    assert 'href="/memory?model=tiny_working_memory&amp;text=ein+Hund"' in page.text  # the page's own models
