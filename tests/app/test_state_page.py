"""The State page and /api/state over the shipped Neural GPU checkpoints:
only recurrent-step models are offered, the carry probes are added
correctly, each lesion changes the output and the change is marked, the
player gets every step's state, and bad input gets a clear 4xx."""

from __future__ import annotations

import json
import re

import pytest

from inference.core.capabilities import Capability
from inference.core.places import REPO_ROOT

CARRY = "11111110+10000000"  # least significant bit first: 127 + 1


@pytest.fixture
def client(shipped_client):
    return shipped_client


def run(client, model="neural_gpu_addition", text=CARRY, **fields):
    return client.post("/state/run", data={"model": model, "text": text, **fields})


def edit_state(**fields) -> dict:
    """The form fields of a state edit, as the State page's form (built from the kind) sends them."""
    return {"lesion": "edit_state", **{f"edit_state.{name}": value for name, value in fields.items()}}


def lsb_first_sum(text: str) -> str:
    a, b = text.split("+")
    total = int(a[::-1], 2) + int(b[::-1], 2)
    return format(total, f"0{len(a) + 1}b")[::-1]


def figures(html: str) -> dict[str, dict]:
    found = re.findall(r'<script type="application/json" id="figure-data-(\w+)">(.*?)</script>', html, re.S)
    return {name: json.loads(data) for name, data in found}


def test_only_models_with_recurrent_steps_are_offered_with_the_carry_probes(client):
    page = client.get("/state?model=neural_gpu_addition")
    assert page.status_code == 200
    offered = re.findall(r'<option value="(\w+)"', page.text.split('name="model"')[1].split("</select>")[0])
    models = client.get("/api/models").json()["models"]
    recurrent = sorted(m["name"] for m in models if Capability.RECURRENT_STEPS in m["capabilities"])
    configs = [
        json.loads(path.read_text()) | {"folder": path.parent.name}
        for path in (REPO_ROOT / "checkpoints").glob("*/config.json")
    ]
    active_memory = sorted(c["folder"] for c in configs if c.get("model", {}).get("family") == "active_memory")
    assert offered == recurrent == active_memory and "neural_gpu_addition" in offered
    assert f'data-text="{CARRY}"' in page.text and "carry through 7 bits" in page.text
    elsewhere = client.get("/state?model=transformer")  # a model of another page: refused, with where it is shown
    assert elsewhere.status_code == 400
    assert 'transformer is shown on <a href="/explore?model=transformer">the explore page</a>' in elsewhere.text


@pytest.mark.parametrize("text", [CARRY, "11110000+10000000", "10110111+11010001"])
def test_the_addition_model_adds_the_carry_probes(client, text):
    response = run(client, text=text)
    assert response.status_code == 200, response.text
    assert re.search(r'id="output-plain">([01]+)<', response.text)[1] == lsb_first_sum(text)


def test_the_run_gives_every_step_to_the_player_and_marks_the_shown_one(client):
    html = run(client).text
    frames = json.loads(re.search(r'id="state-frames">(.*?)</script>', html, re.S)[1])
    steps = len(frames["labels"])
    assert steps == 18 and frames["labels"][0] == "encoder step 0"  # one step per position of the state
    assert [len(frames["state"][0]), len(frames["state"][0][0][0])] == [4, 18]  # 4 map groups x 18 positions
    assert f'max="{steps - 1}" value="{steps - 1}"' in html
    shown = figures(html)
    assert set(shown) == {"state", "change", "update", "reset"}  # no tape: the Neural GPU reads no outputs
    assert [len(t["z"]) for t in shown["state"]["data"]] == [len(frames["state"][0][0])] * 4
    mark = shown["change"]["layout"]["shapes"][0]
    assert mark["name"] == "step-line" and (mark["y0"], mark["y1"]) == (steps - 1.5, steps - 0.5)


def test_the_extended_model_shows_its_tape(client):
    response = run(client, model="extended_neural_gpu_de_en", text="Ein Hund läuft über die Wiese.")
    shown = figures(response.text)
    assert "tape" in shown
    tape = shown["tape"]["data"][0]["z"]
    labels = shown["tape"]["data"][0]["y"]
    decoder = [i for i, label in enumerate(labels) if label.startswith("decoder")]
    assert decoder and not any(any(row) for row in tape[: decoder[0]])  # the encoder writes no tape
    assert [sum(v > 0 for v in tape[i]) for i in decoder] == list(range(len(decoder)))  # one more token a step


@pytest.mark.parametrize(
    "lesion",
    [
        edit_state(mode="zero", start=3, stop=6, from_step=10),
        edit_state(mode="freeze", start=0, stop=8, from_step=2),
        {"lesion": "encoder_steps", "encoder_steps.steps": 4},
        {"lesion": "clamp_gate", "clamp_gate.gate": "update", "clamp_gate.value": 1, "clamp_gate.from_step": 0},
        {"lesion": "clamp_gate", "clamp_gate.gate": "reset", "clamp_gate.value": 0, "clamp_gate.from_step": 3},
    ],
)
def test_each_lesion_changes_the_output_and_marks_the_change(client, lesion):
    response = run(client, **lesion)
    assert response.status_code == 200, response.text
    assert re.search(r'id="output-plain">([01]+)<', response.text)[1] == lsb_first_sum(CARRY)
    lesioned = re.search(r'id="output-lesioned">(.*?)</span></p>', response.text, re.S)[1]
    assert "diff-added" in lesioned or "diff-removed" in lesioned, lesioned
    assert re.fullmatch(r"[01]+", re.sub(r"<[^>]+>", "", lesioned))  # the plain output's format: bits, unspaced
    note = re.search(r'class="lesion-note">(.*?); the views show the lesioned run', response.text)[1]
    counted = re.search(r"(\d+) characters? changed, marked$", note)  # bits, not "words"
    shown = re.sub(r"<[^>]+>", "", lesioned)
    assert counted is not None and 1 <= int(counted[1]) <= max(len(shown), len(lsb_first_sum(CARRY))), note


def test_bad_input_gets_a_clear_4xx(client):
    cases = [
        ({"text": "1101+2"}, "the model's vocabulary has no token for '2'"),
        ({"text": ""}, "the text is empty"),
        ({"text": "1" * 30 + "+" + "1" * 30}, "the state views take at most 48 tokens; this input has 61"),
        (edit_state(mode="zero", from_step=40), "step 40 is beyond this run: its steps are 0 to 17"),
        (edit_state(mode="zero", start=30), "the region must lie within the state's 18 positions"),
        (edit_state(mode="zero", start=5, stop=5), "the region 5 to 5 is empty"),
        ({"lesion": "encoder_steps", "encoder_steps.steps": 19}, "19 encoder steps: this input runs 18"),
        ({"lesion": "encoder_steps"}, "Stop the encoder early: steps: Field required"),
        ({"lesion": "clamp_gate", "clamp_gate.gate": "update", "clamp_gate.value": 2}, "Clamp a gate: value: Input"),
        ({"lesion": "clamp_gate", "clamp_gate.gate": "open"}, "Clamp a gate: gate: Input should be 'update' or"),
        ({"model": "transformer", "text": "Ein Hund."}, "transformer is not a recurrent-step model"),
    ]
    for fields, message in cases:
        response = run(client, **fields)
        assert 400 <= response.status_code < 500 and message in response.text.replace("&#39;", "'"), (
            fields,
            response.text[-400:],
        )


def test_the_api_returns_every_step_and_the_lesioned_output(client):
    body = {
        "model": "neural_gpu_addition",
        "text": CARRY,
        "interventions": [{"kind": "edit_state", "mode": "zero", "from_step": 10, "start": 3, "stop": 6}],
    }
    answer = client.post("/api/state", json=body)
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert found["plain_output"] == lsb_first_sum(CARRY) != found["output"]
    steps = len(found["steps"])
    assert found["stacks"] == ["encoder"] * steps and found["tape"] is None
    assert [len(found["state"]), len(found["change"]), len(found["change"][0])] == [steps, steps, 18]
    assert all(v == 0 for row in found["change"][11:] for v in row[3:6])  # zeroed from step 10: no change after
    bad = client.post("/api/state", json={**body, "interventions": [{"kind": "encoder_steps", "steps": 99}]})
    assert bad.status_code == 400 and "99 encoder steps" in bad.json()["detail"]
    assert client.post("/api/state", json={"model": "transformer", "text": "Ein Hund."}).status_code == 400


def test_the_served_reverse_model_reverses_twice_its_training_length(client):
    """neural_gpu_reverse trained on lengths up to 20 (with the reference's training aids); on the State page it
    reverses 40 bits whole, the longest input the page's views take but 8."""
    bits = "1101001110001011110000101101110010100111"  # 40 bits
    response = run(client, model="neural_gpu_reverse", text=bits)
    assert response.status_code == 200, response.text
    assert re.search(r'id="output-plain">([01]+)<', response.text)[1] == bits[::-1]
