"""The shipped GPT-2 with memory added (checkpoints/gpt2_copy_memory10, trained on the copy task in 3 segments) on
the Segments page and /api/segments: the hits the server reports are the model's own, recomputed here segment by
segment, plainly and with the memory reset at segment 1; the GPT-2 folder and the
memory models are listed on the home page."""

from __future__ import annotations

import json

import torch

from inference.core.checkpoint import load_checkpoint
from inference.core.places import REPO_ROOT

COPY = REPO_ROOT / "checkpoints" / "gpt2_copy_memory10"
EXAMPLE = json.loads((COPY / "config.json").read_text())["meta"]["example"]


@torch.no_grad()
def hits_by_hand(reset_at: int | None) -> list[bool]:
    """Whether the model's next token is right after each target position (those after <bos>), the segments run
    one by one here, outside the app, through MemoryAugmentedLM.segment (which the unit tests check against the
    Hugging Face model), the memory entering segment `reset_at` the initial one."""
    loaded = load_checkpoint(COPY, "cpu")
    model, ids = loaded.model, torch.tensor([loaded.tokenizer.encode(EXAMPLE)])
    length, m = model.config.segment_length, model.config.memory_size
    memory, logits = model.initial_memory(1, m), []
    for s, start in enumerate(range(0, ids.shape[1], length)):
        if s == reset_at:
            memory = model.initial_memory(1, m)
        out, memory = model.segment(memory, ids[:, start : start + length])
        logits.append(out[:, m : out.shape[1] - m])
    predicted = torch.cat(logits, dim=1).argmax(-1)[0].tolist()
    row = ids[0].tolist()
    first = row.index(loaded.tokenizer.bos_id) + 1
    return [predicted[t - 1] == row[t] for t in range(first, len(row))]


def test_the_copy_models_hits_are_its_own_plainly_and_with_the_memory_reset(shipped_client):
    response = shipped_client.post(
        "/api/segments",
        json={"model": "gpt2_copy_memory10", "text": EXAMPLE, "segment": 1,
              "interventions": [{"kind": "reset_memory", "segment": 1}]},
    )  # fmt: skip
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["starts"] == [0, 25, 50]  # 73 tokens in segments of 25
    plain = [hit for hit in body["plain_hits"] if hit is not None]
    lesioned = [hit for hit in body["lesioned_hits"] if hit is not None]
    assert plain == hits_by_hand(None)
    assert lesioned == hits_by_hand(1)
    assert sum(plain) == len(plain) == 48  # the copy, twice over, right: the memory carried the sequence
    assert sum(lesioned) < len(lesioned) / 2  # the memory reset at segment 1 loses it


def test_the_home_page_lists_the_gpt2_and_the_memory_added_to_it(shipped_client):
    home = shipped_client.get("/").text
    for name in ("gpt2_enwiki", "gpt2_enwiki_memory10", "gpt2_copy_memory10"):
        assert f"{name}" in home
    health = shipped_client.get("/healthz").json()
    assert health["broken"] == 0
    listed = {model["name"]: model for model in shipped_client.get("/api/models").json()["models"]}
    assert listed["gpt2_enwiki"]["config"]["family"] == "hugging_face"
    for name in ("gpt2_enwiki_memory10", "gpt2_copy_memory10"):
        assert {"segments", "memory_tokens"} <= set(listed[name]["capabilities"])
        assert listed[name]["config"]["base"]["model_type"] == "gpt2"
