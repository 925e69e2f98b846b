"""The pages and their htmx fragments through TestClient, with the bad inputs a user can send (the JSON API:
test_api_routes.py)."""

import base64
import html
import json
import re

import numpy as np
import pytest

from tests.app.conftest import HTMX, compared_page, lesion_fields

MODEL = "tiny_memtransformer"
TEXT = "ein Hund spielt im Park"


def test_healthz(client):
    client.app.state.gateway.registry.entries  # noqa: B018 (waits for the scan, which runs in the background)
    assert client.get("/healthz").json() == {
        "status": "ok",
        "models": 7,
        "broken": 2,
        "device": "cpu",
        "warm_up": "off",
    }  # broken_model, broken_tokenizer


def test_home_lists_models_and_broken_reasons(client):
    page = client.get("/")
    assert page.status_code == 200
    for name in ("tiny_transformer", "tiny_memtransformer", "tiny_membottleneck"):
        assert name in page.text
    assert "broken_model" in page.text and "config.json is not valid JSON" in page.text
    assert "2.50" in page.text and "tiny test corpus" in page.text


def test_vendor_scripts_are_served_locally(client):
    for name in ("htmx.min.js", "plotly.min.js"):
        response = client.get(f"/vendor/{name}")
        assert response.status_code == 200 and len(response.content) > 10_000
    assert client.get("/vendor/../../etc/passwd").status_code == 404
    assert client.get("/vendor/jquery.js").status_code == 404
    page = client.get("/").text
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page


def test_pages_send_figures_without_the_template_that_every_page_loads_once(client):
    """An Explore run's figures leave Plotly's default template out; /vendor/figure-template.js carries it, the
    template a graph object figure would have carried (its first colour #636efa, its plot background #E5ECF6)."""
    script = client.get("/vendor/figure-template.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    prefix = "const FIGURE_TEMPLATE = "
    assert script.text.startswith(prefix) and script.text.endswith(";\n")
    template = json.loads(script.text[len(prefix) : -2])
    assert template["layout"]["colorway"][0] == "#636efa" and template["layout"]["plot_bgcolor"] == "#E5ECF6"
    page = client.get("/").text
    assert page.index('src="/vendor/figure-template.js"') < page.index('src="/static/figures.js"')
    answer = client.post("/explore/run", data={"model": MODEL, "text": TEXT}, headers=HTMX).text
    figures = re.findall(r'<script type="application/json" id="[^"]+">(.*?)</script>', answer, re.S)
    assert figures
    for figure in figures:
        layout = json.loads(figure)["layout"]
        assert "template" not in layout and "xaxis" in layout


def test_explore_page_offers_model_controls(client):
    page = client.get("/explore", params={"model": MODEL}).text
    assert 'name="memory_size.size" min="0" max="9" value="3"' in page
    assert page.count('name="knockout_slots.slots"') == 9
    kinds = re.findall(r'<fieldset class="lesion" data-kind="([a-z_]+)">', page)
    assert kinds == ["memory_size", "knockout_slots", "block_memory_reads", "scale"]  # what the family declares
    assert re.search(
        r'<summary>More lesions: scale a hook point</summary>\s*<fieldset class="lesion" data-kind="scale">', page
    )
    for stack in ("encoder.attn", "decoder.self_attn", "decoder.cross_attn"):
        assert f'<option value="{stack}">' in page
    bottleneck = client.get("/explore", params={"model": "tiny_membottleneck"}).text
    assert '<option value="encoder.mem.attn">' in bottleneck and '<option value="encoder.seq.attn">' in bottleneck


def test_every_lesion_kind_as_the_page_renders_it_reads_back_once_its_required_fields_are_set(client):
    """The values a kind's fields start with in the page (a list default written out, an empty optional field) are
    ones the form reads back: ticking a kind with only its required fields set runs it."""
    page = client.get("/explore", params={"model": MODEL}).text
    required = {  # kind -> (its required fields, the lesion in words: the defaults as rendered reached the run)
        "memory_size": ({}, None),  # its slider starts at the trained size: no lesion
        "knockout_slots": ({"knockout_slots.slots": ["1"]}, "memory slot 1 knocked out"),
        "block_memory_reads": (
            {"block_memory_reads.stacks": "decoder"},
            "reads from memory blocked in the decoder's cross-attention",
        ),
        "scale": ({"scale.hook": "encoder.layers.0.attn.pattern"}, "encoder.layers.0.attn.pattern zeroed"),
    }
    for kind, (chosen, words) in required.items():
        fieldset = re.search(rf'<fieldset class="lesion" data-kind="{kind}">(.*?)</fieldset>', page, re.S).group(1)
        shown = dict(
            re.findall(
                r'<input class="live" type="(?:number|text|range)" name="([^"]+)" [^>]*?value="([^"]*)"', fieldset
            )
        )
        response = run(client, lesion=kind, **shown, **chosen)
        assert response.status_code == 200, (kind, shown, response.text[-300:])
        said = re.search(r'class="lesion-note">(.*?); the views show', response.text)
        if words is None:
            assert said is None, kind
        else:  # the rendered defaults as read: factor 0 (zeroed), no axis (the whole tensor)
            assert said is not None and html.unescape(said.group(1)).startswith(f"{words}: "), (kind, said)


def test_an_address_opens_explore_with_its_lesions_set(client):
    page = client.get(
        "/explore", params={"model": MODEL, "lesion": ["knockout_slots", "memory_size"], "knockout_slots.slots": "2",
                            "memory_size.size": "5"},
    ).text  # fmt: skip
    assert '<input class="live" type="checkbox" name="lesion" value="knockout_slots" checked' in page
    assert re.findall(r'name="knockout_slots.slots" value="(\d+)" checked', page) == ["2"]
    assert 'name="memory_size.size" min="0" max="9" value="5"' in page
    bad = client.get("/explore", params={"model": MODEL, "lesion": "scale", "scale.hook": "decoder.layers.9.ff.keys"})
    assert bad.status_code == 400 and "is not a hook point of this model" in html.unescape(bad.text)


def test_explore_of_unknown_model_is_404(client):
    response = client.get("/explore", params={"model": "nope"})
    assert response.status_code == 404 and response.headers["content-type"].startswith("text/html")
    assert "unknown model 'nope'" in html.unescape(response.text)


def run(client, **fields):
    data = {"model": MODEL, "text": TEXT, "stack": "encoder.attn", "layer": 1, "head": 0, **fields}
    return client.post("/explore/run", data=data, headers=HTMX)


def test_explore_run_renders_translation_and_figures(client):
    response = run(client)
    assert response.status_code == 200
    assert 'id="translation-plain"' in response.text and 'id="translation-lesioned"' not in response.text
    for name in ("heatmap", "grid", "blocks"):
        assert f'id="figure-data-{name}"' in response.text


def test_explore_run_with_lesion_shows_both_translations(client):
    response = run(client, **lesion_fields(memory_size={"size": 0}, block_memory_reads={"stacks": "decoder"}))
    assert response.status_code == 200
    assert 'id="translation-lesioned"' in response.text
    note = html.unescape(re.search(r'class="lesion-note">(.*?); the views show', response.text)[1])
    lesioned = re.search(r'id="translation-lesioned">(.*?)</span></p>', response.text, re.S)[1]
    added = sum(len(words.split()) for words in re.findall(r'class="diff-added">(.*?)</span>', lesioned))
    removed = sum(len(words.split()) for words in re.findall(r'class="diff-removed">(.*?)</span>', lesioned))
    changed = max(added, removed)  # words in place of the plain translation's, counted from the marked diff
    assert note == "no memory (size 0); reads from memory blocked in the decoder's cross-attention: " + (
        f"{changed} word{'s' if changed != 1 else ''} changed, marked" if changed else "no word changed"
    )


def figure_z(fragment: str, name: str) -> np.ndarray:
    data = re.search(rf'id="figure-data-{name}">(.*?)</script>', fragment, re.DOTALL).group(1)
    z = json.loads(data)["data"][0]["z"]  # Plotly's binary array: base64 of the dtype's bytes
    shape = [int(n) for n in str(z["shape"]).split(",")]
    return np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"])).reshape(shape)


def test_explore_scales_a_hook_point_and_shows_the_scaled_run(client):
    plain = run(client, stack="encoder.attn", layer=0)
    scale = lesion_fields(scale={"hook": "encoder.layers.0.attn.pattern", "factor": 0})
    scaled = run(client, stack="encoder.attn", layer=0, **scale)
    assert plain.status_code == scaled.status_code == 200 and 'id="translation-lesioned"' in scaled.text
    assert (
        figure_z(plain.text, "heatmap").max() > 0 and figure_z(scaled.text, "heatmap").max() == 0
    )  # the views follow it
    expected = client.post(
        "/api/translate",
        json={
            "model": MODEL,
            "text": TEXT,
            "interventions": [{"kind": "scale", "hook": "encoder.layers.0.attn.pattern", "factor": 0}],
        },
    ).json()
    lesioned = re.search(r'id="translation-lesioned">(.*?)</span></p>', scaled.text, re.DOTALL).group(1)
    words = re.findall(r'<span class="diff-(?:same|added)">(.*?)</span>', lesioned)
    assert " ".join(html.unescape(w) for w in words).split() == expected["translation"].split()


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"text": "   "}, "the text is empty"),
        ({"text": "x" * 301}, "301 characters; the limit is 300"),
        ({"text": " ".join(["Hund"] * 60)}, "tokens; the limit is 40"),
        (lesion_fields(memory_size={"size": 10}), "Memory size: size 10 is out of range for this model (0 to 9)"),
        (lesion_fields(memory_size={"size": -1}), "Memory size: size: Input should be greater than or equal to 0"),
        (lesion_fields(memory_size={"size": ""}), "Memory size: size: Field required"),
        (lesion_fields(memory_size={"size": 2}, knockout_slots={"slots": [2]}), "memory slot 2 is out of range"),
        (lesion_fields(knockout_slots={"slots": [9]}), "Knock out memory slots: slots 9 is out of range for this mod"),
        (
            lesion_fields(block_memory_reads={"stacks": "sideways"}),
            "Block reads from memory: stacks: Input should be 'encoder', 'decoder' or 'both'",
        ),
        ({"lesion": "mask_memory"}, "mask_memory does not apply to this model; it takes memory_size, knockout_slots"),
        ({"lesion": "sideways"}, "unknown lesion kind 'sideways'; the kinds are memory_size, knockout_slots"),
        ({"ablate": "decoder.layers.0.self_attn:7"}, "head [7] out of range for decoder.layers.0.self_attn.z (0 to 1)"),
        ({"ablate": "decoder.layers.0.self_attn"}, "cannot read head"),
        ({"ablate": "decoder.layers.0.self-attn:0"}, "cannot read head 'decoder.layers.0.self-attn:0'"),
        ({"ablate": "decoder.layers.5.self_attn:0"}, "unknown hook point 'decoder.layers.5.self_attn.z'"),
        (
            lesion_fields(scale={"hook": "decoder.layers.9.ff.keys"}),
            "Scale a hook point: 'decoder.layers.9.ff.keys' is not a hook point of this model",
        ),
        (lesion_fields(scale={"hook": "decoder layers"}), "Scale a hook point: hook: String should match pattern"),
        (
            lesion_fields(scale={"hook": "logits", "factor": "nan"}),
            "Scale a hook point: factor: Input should be a finite number",
        ),
        ({"stack": "encoder.mem.attn"}, "unknown stack"),
        ({"layer": 2}, "layer 2 is out of range"),
        ({"head": 2}, "head 2 is out of range"),
        ({"call": 1}, "call 1 is out of range (0 to 0)"),  # every layer of this model runs once
        ({"model": "nope"}, "unknown model"),
    ],
)
def test_explore_run_bad_input_gets_error_fragment(client, fields, message):
    response = run(client, **fields)
    assert 400 <= response.status_code < 500
    assert response.headers["HX-Retarget"] == "#errors"
    assert 'class="error"' in response.text and message in html.unescape(response.text)


def test_tokens_are_escaped_in_the_page(client):
    response = run(client, text="<img src=x onerror=alert(1)>")
    assert response.status_code == 200
    assert "<img" not in response.text
    assert "&lt;img src=x onerror=alert(1)&gt;" in response.text


def test_explore_attribution_fragment(client):
    response = client.post(
        "/explore/attribution",
        data={"model": MODEL, "text": TEXT, "position": 0, **lesion_fields(memory_size={"size": 5})},
        headers=HTMX,
    )
    assert response.status_code == 200 and 'id="figure-data-attribution"' in response.text
    assert "[mem4]" in response.text


def test_compare_shows_each_model_s_row_as_its_own_request_then_the_figure(client):
    assert 'name="models"' in client.get("/compare").text
    table = client.post("/compare/run", data={"models": [MODEL, "tiny_transformer"], "text": TEXT}, headers=HTMX)
    assert table.status_code == 200 and table.text.count("running…") == 2  # rows waiting for their own requests
    assert table.text.count('hx-post="/compare/row"') == 2 and table.text.count('hx-post="/compare/figure"') == 1
    page = compared_page(client, {"models": [MODEL, "tiny_transformer"], "text": TEXT})
    for model in (MODEL, "tiny_transformer"):
        translation = client.post("/api/translate", json={"model": model, "text": TEXT}).json()["translation"]
        row = f'<tr><td>{model}</td><td class="compare-translation">{html.escape(translation, quote=False)}</td></tr>'
        assert row in page
    assert "running…" not in page and 'id="figure-data-compare"' in page
    one = client.post("/compare/run", data={"models": [MODEL], "text": TEXT}, headers=HTMX)
    assert one.status_code == 400 and "at least two different models" in one.text
    long_text = "Hund " * 60
    tokens = len(client.app.state.gateway.model(MODEL).tokenizer.encode(long_text.strip()))
    too_long = client.post("/compare/run", data={"models": [MODEL, "tiny_transformer"], "text": long_text},
                           headers=HTMX)  # fmt: skip
    assert too_long.status_code == 400 and f"{MODEL}: the text has {tokens} tokens; the limit is 40" in too_long.text


def test_explore_decodes_by_beam_search_when_asked(client):
    greedy = client.post("/explore/run", data={"model": MODEL, "text": TEXT, "stack": "encoder.attn"}, headers=HTMX)
    beam = client.post(
        "/explore/run",
        data={
            "model": MODEL,
            "text": TEXT,
            "stack": "encoder.attn",
            "decoding": "beam",
            "beam_size": 3,
            "length_penalty": 1.0,
        },
        headers=HTMX,
    )
    assert greedy.status_code == beam.status_code == 200
    assert "decoded by greedy" in greedy.text and "decoded by beam 3, length penalty 1" in beam.text
    expected = client.post(
        "/api/translate",
        json={"model": MODEL, "text": TEXT, "decoding": {"method": "beam", "beam_size": 3, "length_penalty": 1.0}},
    )
    assert html.escape(expected.json()["translation"], quote=False) in beam.text
    compare = client.post(
        "/compare/run", data={"models": [MODEL, "tiny_transformer"], "text": TEXT, "decoding": "beam"}, headers=HTMX
    )
    assert compare.status_code == 200 and "decoded by beam 4, length penalty 0.6" in compare.text
    for bad in (
        {"decoding": "sample"},
        {"decoding": "beam", "beam_size": 40},
        {"decoding": "beam", "length_penalty": "nan"},
    ):
        assert client.post("/explore/run", data={"model": MODEL, "text": TEXT, **bad}, headers=HTMX).status_code == 422


def test_explore_labels_memory_operations_per_head_where_memory_is_written(client):
    encoder = figures_of(run(client).text)
    grid = encoder["operations"]["data"][0]
    assert grid["y"] == ["L0", "L1"] and grid["x"] == ["h0", "h1"]  # the tiny Memory Transformer: 2 layers x 2 heads
    assert "memory operation per head" in encoder["operations"]["layout"]["title"]["text"]
    decoder_self = figures_of(run(client, stack="decoder.self_attn").text)  # no memory queries or keys there
    assert "operations" not in decoder_self
    plain = figures_of(run(client, model="tiny_transformer").text)  # no memory at all
    assert "operations" not in plain


def figures_of(fragment: str) -> dict[str, dict]:
    found = re.findall(r'<script type="application/json" id="figure-data-(\w+)">(.*?)</script>', fragment, re.S)
    return {name: json.loads(data) for name, data in found}
