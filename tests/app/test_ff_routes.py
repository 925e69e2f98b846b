"""The FF memories page and /api/ff on tiny checkpoints with stored studies:
the language model and a translation model's decoder."""

from __future__ import annotations

import html as html_module
import re

import pytest

from app.routers.ff import LENS_KEYS, LENS_TOKENS
from app.services.demo import demo_sentences
from inference.analyses.ff_mining import TriggerStore
from inference.core.places import REPO_ROOT
from inference.corpora.ff_study_files import TRIGGERS_FILE, read_triggers
from tests.app.conftest import HTMX

LM, TRANSLATOR = "tiny_language_model", "tiny_memtransformer"


def text_of(html: str) -> str:
    return html_module.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


def test_the_page_offers_every_model_and_draws_the_study(client):
    page = client.get("/ff", params={"model": LM})
    assert page.status_code == 200
    for name in (LM, TRANSLATOR, "tiny_transformer", "tiny_working_memory"):
        assert f'<option value="{name}"' in page.text
    for figure in ("ff-agreement", "ff-cases", "ff-memories"):
        assert f'id="figure-{figure}"' in page.text
    assert "Mined on tiny English" in page.text


def test_a_model_without_a_study_says_how_to_compute_it(client):
    page = client.get("/ff", params={"model": "tiny_transformer"})
    assert (
        'id="no-study"' in page.text
        and "python -m training ff-memories &lt;its models folder&gt;/tiny_transformer" in page.text
    )
    assert '<option value="index">index</option>' in page.text and '<option value="agreement">' not in page.text
    response = client.get("/api/ff/tiny_transformer/study")
    assert response.status_code == 404 and "ff-memories" in response.json()["detail"]


@pytest.mark.parametrize("model", [LM, TRANSLATOR])
def test_key_browser_pages_by_agreement_and_shows_triggers(client, model):
    fragment = client.get("/ff/keys", params={"model": model, "layer": 1, "order": "agreement"})
    assert fragment.status_code == 200
    assert "keys by agreement" in fragment.text
    assert "<mark>" in fragment.text  # trigger token marked
    body = client.post("/api/ff/keys", json={"model": model, "layer": 1, "order": "agreement", "limit": 200}).json()
    ranks = [card["next_token_rank"] for card in body["keys"]]
    assert ranks == sorted(ranks) and all(card["triggers"] for card in body["keys"])
    assert len(body["keys"]) == body["total"] <= 32  # tiny models have d_ff 32


def test_keys_can_be_picked_by_number(client):
    body = client.post("/api/ff/keys", json={"model": LM, "layer": 0, "keys": [7, 3]}).json()
    assert [card["key"] for card in body["keys"]] == [7, 3]
    assert len(body["keys"][0]["value_tokens"]) == 8
    fragment = client.get("/ff/keys", params={"model": LM, "layer": 0, "key": "7, 3"})
    assert "key 7" in fragment.text and "key 3" in fragment.text


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"layer": 5}, "layer 5 is out of range (0 to 1)"),
        ({"key": "seven"}, "cannot read key"),
        ({"key": "99"}, "keys [99] are out of range"),
    ],
)
def test_bad_key_requests_are_400_with_a_message(client, params, message):
    response = client.get("/ff/keys", params={"model": LM, **params}, headers=HTMX)
    assert response.status_code == 400
    assert message in text_of(response.text)


def test_an_order_the_key_browser_does_not_have_is_refused_where_it_enters(client):
    response = client.get("/ff/keys", params={"model": LM, "order": "random"}, headers=HTMX)
    assert response.status_code == 422 and "agreement" in text_of(response.text)


def test_one_input_shows_the_continuation_and_the_lens(client):
    fragment = client.post("/ff/run", data={"model": LM, "text": "a man reads a book", "layer": 1})
    assert fragment.status_code == 200
    assert "continuation" in fragment.text and 'id="lens-table"' in fragment.text
    assert "prediction-changes" not in fragment.text


def test_the_lens_of_one_layer_is_that_layer_of_the_whole_lens(client):
    """The page reads only the layer on view, and so may the API: the same cells as in the lens of every layer;
    a layer the model does not have is refused."""
    text = "a man reads a book"
    asked = {"model": LM, "text": text, "top_keys": LENS_KEYS, "top_tokens": LENS_TOKENS}
    every = client.post("/api/ff/lens", json=asked).json()
    one = client.post("/api/ff/lens", json={**asked, "layer": 1}).json()
    assert one["layers"] == [every["layers"][1]] and one["tokens"] == every["tokens"]
    page = client.post("/ff/run", data={"model": LM, "text": text, "layer": 1}).text
    assert "Logit lens, layers.1.ff" in page
    shown = re.findall(r'data-layer="1" data-key="(\d+)"', page)
    assert shown == [str(key) for cell in every["layers"][1]["positions"] for key, _, _ in cell["keys"]]
    refused = client.post("/api/ff/lens", json={"model": LM, "text": text, "layer": 2})
    assert refused.status_code == 400 and "layer 2 is out of range (0 to 1)" in refused.json()["detail"]


def test_a_key_edit_reruns_and_shows_what_changed(client, tiny_tokenizer):
    keys = ",".join(str(k) for k in range(32))
    fragment = client.post(
        "/ff/run", data={"model": LM, "text": "a man reads a book", "layer": 1, "edits": f"layers.1.ff:{keys} x0"}
    )
    assert "with key edits" in fragment.text and 'id="prediction-changes"' in fragment.text

    edit = {"kind": "scale", "hook": "layers.1.ff.keys", "axis": "ff_key", "index": list(range(32)), "factor": 0.0}
    body = client.post("/api/ff/lens", json={"model": LM, "text": "a man reads a book", "interventions": [edit]}).json()
    assert body["interventions"] == [edit]
    assert [layer["layer"] for layer in body["layers"]] == ["layers.0.ff", "layers.1.ff"]
    assert all(
        cell["keys"] == [] and cell["ff"] == body["layers"][1]["positions"][0]["ff"]
        for cell in body["layers"][1]["positions"]
    )  # nothing fires: y is the bias alone
    prompt = 1 + len(
        tiny_tokenizer.encode("a man reads a book")
    )  # EOS + the text: every prompt position is shared by both runs
    changes = body["prediction_changes"]
    assert prompt <= len(changes) <= len(body["tokens"]) and [c["position"] for c in changes] == list(
        range(len(changes))
    )
    assert [c["token"] for c in changes[:prompt]] == body["tokens"][:prompt]
    assert "plain_output" in body


def test_a_translation_model_is_read_on_its_own_translation(client):
    body = client.post(
        "/api/ff/lens", json={"model": TRANSLATOR, "text": "ein Hund läuft", "top_keys": 2, "top_tokens": 2}
    ).json()
    assert body["tokens"][0] == "<bos>"
    assert [layer["layer"] for layer in body["layers"]] == ["decoder.layers.0.ff", "decoder.layers.1.ff"]
    assert all(len(cell["residual"]) == 2 for layer in body["layers"] for cell in layer["positions"])


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        ("layers.1.ff", "cannot read 'layers.1.ff'"),
        ("layers.1.ff:3 xbig", "cannot read"),
        ("layers.9.ff:3", "unknown feed-forward module 'layers.9.ff'; this model has layers.0.ff, layers.1.ff"),
        ("layers.1.ff:300", "ff_key [300] out of range for layers.1.ff.keys (0 to 31)"),
    ],
)
def test_bad_key_edits_are_400_with_a_message(client, edits, message):
    response = client.post("/ff/run", data={"model": LM, "text": "a man", "edits": edits}, headers=HTMX)
    assert response.status_code == 400
    assert message in text_of(response.text)


def test_the_language_model_is_refused_where_a_translator_is_needed(client):
    response = client.post("/api/translate", json={"model": LM, "text": "a man"})
    assert response.status_code == 400 and response.json()["detail"].startswith(
        "tiny_language_model is not a translation model: its views are on the FF memories (/ff) and explore "
        "(/explore) pages; "
        "translation models: extended_neural_gpu_de_en, neural_gpu_addition, tiny_membottleneck, "
        "tiny_memtransformer, tiny_transformer, tiny_working_memory"
    )
    explore = client.get("/explore", params={"model": LM})  # its attention is on Explore; its own page is FF
    assert explore.status_code == 200 and '<option value="attn">attn</option>' in explore.text
    assert f'value="{LM}"' not in client.get("/upload").text
    assert f'value="{LM}"' not in client.get("/compare").text


def test_home_links_every_model_to_its_ff_memories(client):
    home = client.get("/").text
    assert f'href="/ff?model={LM}"' in home and f'href="/ff?model={TRANSLATOR}"' in home
    assert "word perplexity WikiText-103 test" in home and "900.0" in home


def test_a_working_memory_decoder_is_read_on_its_stream(client):
    body = client.post(
        "/api/ff/lens", json={"model": "tiny_working_memory", "text": "ein Hund", "top_keys": 2, "top_tokens": 2}
    ).json()
    assert [layer["layer"] for layer in body["layers"]] == ["decoder.layers.0.ff", "decoder.layers.1.ff"]
    assert len(body["layers"][0]["positions"]) == len(body["tokens"]) and body["tokens"][0] == "<bos>"
    page = client.get("/ff", params={"model": "tiny_working_memory"})
    assert page.status_code == 200 and 'id="no-study"' in page.text


def test_an_edit_that_changes_nothing_shares_every_position(client):
    body = client.post(
        "/api/ff/lens",
        json={
            "model": LM,
            "text": "a man reads a book",
            "interventions": [
                {"kind": "scale", "hook": "layers.0.ff.keys", "axis": "ff_key", "index": [1, 2], "factor": 1.0}
            ],
        },
    ).json()
    assert body["output"] == body["plain_output"]
    changes = body["prediction_changes"]
    assert len(changes) == len(body["tokens"])
    assert all(
        c["before"] == c["after"] and abs(c["before_probability"] - c["before_token_after"]) < 1e-6 for c in changes
    )


def test_the_page_runs_key_edits_on_its_example_when_no_text_is_entered(client):
    page = client.get("/ff", params={"model": LM}).text
    example = demo_sentences()[0].reference  # the English example every page opens a language model on
    assert f'data-example="{example}"' in page and f'placeholder="{example}"' in page
    assert '<input type="hidden" name="origin" value=""' in page
    cards = client.get("/ff/keys", params={"model": LM, "layer": 1, "key": "3"}).text
    assert '<p class="key-status" id="key-status-layers-1-ff-3"' in cards  # where a zero / boost is answered


def test_a_key_card_edit_is_answered_in_its_card(client):
    text, edits = "a man reads a book", "layers.1.ff:" + ",".join(str(k) for k in range(32)) + " x0"
    fragment = client.post(
        "/ff/run", data={"model": LM, "text": text, "layer": 1, "edits": edits, "origin": "key-status-layers-1-ff-3"}
    ).text
    answer = re.search(
        r'<p class="key-status answered" id="key-status-layers-1-ff-3" hx-swap-oob="true".*?</p>', fragment, re.S
    )
    assert answer, "the card's status line is answered out of band"
    edit = {"kind": "scale", "hook": "layers.1.ff.keys", "axis": "ff_key", "index": list(range(32)), "factor": 0}
    body = client.post("/api/ff/lens", json={"model": LM, "text": text, "interventions": [edit]}).json()
    changes = body["prediction_changes"]
    changed = sum(c["before"] != c["after"] for c in changes)
    said = text_of(answer.group(0))
    assert f"on “{text}”" in said and "layers.1.ff:0,1,2" in said and "x0" in said
    if changed:
        assert f"{changed} of {len(changes)} next-token predictions change" in said
    else:
        drop = max(c["before_probability"] - c["before_token_after"] for c in changes)
        assert f"no next-token prediction changes (p of the original prediction falls by at most {drop:.3f})" in said
    assert ("stays the same" in said) == (body["output"] == body["plain_output"])
    assert 'href="#ff-results"' in answer.group(0)

    plain = client.post("/ff/run", data={"model": LM, "text": text, "layer": 1, "edits": edits, "origin": ""})
    assert plain.status_code == 200 and "hx-swap-oob" not in plain.text  # the Run button's: under the form only


def test_a_status_line_must_be_a_key_cards(client):
    response = client.post(
        "/ff/run", data={"model": LM, "text": "a man", "origin": 'x" onclick="alert(1)'}, headers=HTMX
    )
    assert response.status_code == 422


def test_identical_trigger_contexts_share_a_line_on_the_shipped_model(shipped_client):
    """Key 12 of layer 3 peaks on "<eos> Awards" (an "Awards and nominations" heading) in many of its
    top 50 sentences: one line says how many, instead of ten identical lines."""
    store = TriggerStore(read_triggers(REPO_ROOT / "checkpoints" / "language_model" / TRIGGERS_FILE))
    stored = store.triggers("layers.3.ff", 12)
    awards = [t for t in stored if t.context == ["<eos>", "Awards"]]
    assert len(awards) >= 10
    fragment = shipped_client.get("/ff/keys", params={"model": "language_model", "layer": 3, "key": "12"}).text
    lines = [text_of(line).strip() for line in re.findall(r"<li>.*?</li>", fragment, re.S)]
    assert len(lines) == 10 and len(set(lines)) == 10
    (line,) = [line for line in lines if line.startswith("eos Awards →")]  # <eos>: a chip naming it
    assert line.endswith(f"×{len(awards)}")
    assert f"and ({sum(t.next_token == 'and' for t in awards)})" in line
    assert "last 8 tokens of its prefix as stored" in text_of(fragment)


def test_unprintable_and_unnamed_tokens_on_the_shipped_model(shipped_client):
    keys = shipped_client.get("/ff/keys", params={"model": "language_model", "layer": 2, "key": "714"}).text
    assert "<i>##\\xa0</i>" in keys  # a trigger's next token, NO-BREAK SPACE: was a bare "##"
    keys = shipped_client.get("/ff/keys", params={"model": "language_model", "layer": 1, "key": "178"}).text
    # HANGUL SYLLABLE JUNG: a box ("##▯") where no font has it, named in its title everywhere
    assert re.search(r'<span class="token" title="p [0-9.]+ · U\+C911 HANGUL SYLLABLE JUNG">##중</span>', keys)


def test_the_study_command_names_the_folder_the_server_was_given(tmp_path, monkeypatch):
    from app.services.ff_study import study_command

    (tmp_path / "models" / "smollm2_135m_instruct").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert study_command(tmp_path / "models" / "smollm2_135m_instruct") == (
        "python -m training ff-memories models/smollm2_135m_instruct"
    )
    elsewhere = tmp_path.parent / "elsewhere" / "my_lm"
    assert study_command(elsewhere) == "python -m training ff-memories <its models folder>/my_lm"


@pytest.mark.parametrize("layer", [0, 5])
def test_the_first_key_card_on_the_opening_page_changes_a_prediction_when_zeroed(shipped_client, layer):
    """The key browser opens in the effect order on the model's example (no text entered): the first card of a
    layer is the key whose value this run leans on most, and its "zero" (what the card's button runs) changes a
    next-token prediction of the example, where the agreement order's first card changed none."""
    page = shipped_client.get("/ff", params={"model": "language_model"}).text
    example = html_module.unescape(re.search(r'data-example="([^"]*)"', page).group(1))
    assert re.search(r'<select name="order"[^>]*><option value="effect">', page)  # the order the page opens in
    keys = shipped_client.get("/ff/keys", params={"model": "language_model", "layer": layer}).text
    assert "keys by effect on the text" in text_of(keys)
    first = re.search(r'<article class="key-card" data-key="([^"]+)">', keys).group(1)
    status = re.search(r'<p class="key-status" id="([^"]+)"', keys).group(1)  # the first card's answer line
    shares = [float(share) for share in re.findall(r"effect (-?[0-9.]+)× margin", keys)]
    assert shares == sorted(shares, reverse=True) and shares[0] >= 1.0
    zeroed = {"model": "language_model", "text": example, "edits": f"{first} x0", "origin": status}
    ran = shipped_client.post("/ff/run", data=zeroed)
    changed = re.search(r"(\d+) of (\d+) next-token predictions change", text_of(ran.text))
    assert changed and int(changed.group(1)) >= 1, text_of(ran.text)


def test_the_effect_order_needs_a_text_in_the_api(client):
    response = client.post("/api/ff/keys", json={"model": LM, "layer": 0, "order": "effect"})
    assert response.status_code == 400 and "give the text" in response.json()["detail"]
    body = client.post("/api/ff/keys", json={"model": LM, "layer": 0, "order": "effect", "text": "a man reads"}).json()
    effects = [card["effect"] for card in body["keys"]]
    assert body["order"] == "effect" and effects == sorted(effects, reverse=True) and len(effects) == 20
