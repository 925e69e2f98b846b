"""TrainConfig: one training run, read from a JSON file (training/configs/).

    {
      "name": "memtransformer_10",                 # default run and checkpoint folder name
      "model": {...},                              # the family config's fields (not the tokenizer's)
      "data": {"dataset": "multi30k", "vocab_size": 8000,
               "max_len": 100},                    # quick runs: + "max_pairs", "max_eval_pairs"
                                                   # (translation) or "max_articles" (language model)
      "train": {"epochs": 20, "batch_size": 64, "warmup_steps": 4000, "label_smoothing": 0.1,
                "clip_norm": 1.0, "seed": 1, "eval_every_epochs": 1, "save_every_steps": 500},   # + "threads"
      "init_from": "checkpoints/memtransformer_5",  # optional: start from a trained checkpoint
      "grow_memory_to": 10,                         # optional, with init_from: extend its memory
      "working_memory": {"plain_epochs": 2, "type_threshold": 0.25, "type_loss_weight": 0.5}
    }

Defaults are the paper's small configuration. Every key is checked: an
unknown or misspelt key is an error, not a silently ignored setting.

A run with `init_from` takes its architecture and its tokenizer from that
checkpoint (the weights only make sense with both), so it has no "model"
section and no data.vocab_size. Two exceptions: a working-memory model may
start from a plain Transformer checkpoint (Algorithm 1's warm-up epochs,
already trained); its "model" section then holds only the working-memory
fields (family "working_memory", memory_size, top_p) and the sizes come
from the checkpoint. And memory may be added to a trained Hugging Face
language model: "model" names family "pretrained_memory" and the memory's
fields (memory_size, segment_length, bptt_depth, carry_memory).

A family may have a section of its own, keyed by its name (Family.training_options; training names no family):
the "working_memory" section (working-memory models only) sets Algorithm 1:
plain_epochs epochs as a plain Transformer first (no memory written), then
training with model-chosen memory; type_threshold and type_loss_weight are
the type head's self-supervised labels (inference.families.working_memory.generation.type_labels).

A language model (a model family with the next_token capability: the
language model, the segment-recurrent decoders) trains on data.dataset
"enwiki", and only there; for it data.max_len is the length of a training
block (tokens per row) and train.batch_size counts blocks
(docs/language_model.md).
"""

from __future__ import annotations

import json
from dataclasses import asdict, field, fields
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError
from pydantic.dataclasses import dataclass
from pydantic_core import ErrorDetails

from inference.core.capabilities import Capability, FamilyConfig
from inference.core.family import AnyFamily, capabilities_of, families, family_names, family_of
from inference.core.family import config_from_dict as model_config_from_dict
from inference.core.places import REPO_ROOT
from inference.core.tokenizer import TextTokenizer
from training.data.lm_corpora import ENWIKI

STRICT = ConfigDict(extra="forbid")

# The tokenizer decides these; a config that set them could contradict it.
TOKENIZER_FIELDS = ("vocab_size", "pad_id", "bos_id", "eos_id")
MODEL_FIELDS = tuple(
    dict.fromkeys(f.name for family in families() for f in fields(family.config_type) if f.name not in TOKENIZER_FIELDS)
)


class ConfigError(ValueError):
    """A training config that cannot be used; the message says which key."""


@dataclass(config=STRICT)
class DataConfig:
    dataset: Literal["multi30k", "ru_en", "enwiki"] = (
        "multi30k"  # training.data.corpora.CORPORA; "enwiki": training.data.lm_corpora
    )
    # shared BPE vocabulary; None: data.vocabulary.DEFAULT_VOCAB_SIZE
    vocab_size: int | None = Field(default=None, ge=8)
    max_len: int = Field(
        default=100, ge=1
    )  # pairs with more tokens on either side are left out of training; language model: block length
    max_articles: int | None = Field(
        default=None, ge=1
    )  # language model only: train on the first N training articles (quick runs); None: all
    tokenizer_from: str | None = None  # language model only: a checkpoint folder whose tokenizer.json to read with
    # (the same tokens as that model; a relative path is relative to the repository root); None: train a BPE vocabulary
    wikitext: list[Literal["wikitext2_valid", "wikitext2_test", "wikitext103_valid", "wikitext103_test"]] | None = (
        None  # language model only: the WikiText splits perplexity is measured on (enwiki val always); None: all four
    )
    max_pairs: int | None = Field(
        default=None, ge=1
    )  # translation only: train on the first N training pairs (quick runs); None: all
    max_eval_pairs: int | None = Field(
        default=None, ge=1
    )  # translation only: validate, test and lesion on the first N pairs of each split (quick runs); None: all


@dataclass(config=STRICT)
class LoopConfig:
    epochs: int = Field(default=20, ge=1)
    # the run ends after this many steps where its budget is not whole epochs (a language model's tokens); None:
    # after the epochs. `train --max-steps` stops it sooner, to resume later.
    max_steps: int | None = Field(default=None, ge=1)
    batch_size: int = Field(default=64, ge=1)  # sentence pairs per batch
    warmup_steps: int = Field(default=4000, ge=1)  # Noam schedule
    label_smoothing: float = Field(default=0.1, ge=0, lt=1)
    clip_norm: float = Field(default=1.0, gt=0)  # max global gradient norm
    seed: int = 1
    # validation BLEU (greedy decoding) this often; val loss every epoch
    eval_every_epochs: int = Field(default=1, ge=1)
    save_every_steps: int = Field(default=500, ge=1)  # resumable state also at every epoch end
    threads: int | None = Field(
        default=None, ge=1
    )  # CPU threads torch may use (torch.set_num_threads); None: its default, one per core.
    # A tiny model is fastest on 1: splitting its small matrix products costs more than it saves,
    # and far more on a busy machine.

    def finished(self, epochs_done: int, steps_done: int) -> bool:
        """Whether a run that has done this much is over: its epochs, or its max_steps."""
        return epochs_done >= self.epochs or (self.max_steps is not None and steps_done >= self.max_steps)

    def step_limit(self, stop_at: int | None) -> int | None:
        """The step the run stops at in this session: its max_steps, or `stop_at` (--max-steps) where sooner."""
        limits = [limit for limit in (self.max_steps, stop_at) if limit is not None]
        return min(limits) if limits else None


@dataclass(config=STRICT)
class TrainConfig:
    name: str
    data: DataConfig
    train: LoopConfig
    model: dict[str, Any] | None = None
    init_from: str | None = None  # checkpoint folder; a relative path is relative to the repository root
    grow_memory_to: int | None = Field(default=None, ge=1)
    # the model family's own section (Family.training_options), read by config_from_dict from the key named as the
    # family; not a key of its own
    family_options: Any = field(default=None, init=False)

    @property
    def family(self) -> AnyFamily | None:
        """The family the model section names; None without one (a run that continues from init_from) or where
        it names none registered (the model section's check says so)."""
        name = (self.model or {}).get("family")
        return family_of(name) if isinstance(name, str) and name in family_names() else None

    @property
    def first_candidate_epoch(self) -> int:
        """Epochs before it are not candidates for the checkpoint (the family's, e.g. a working memory's plain
        epochs)."""
        family = self.family
        return family.first_candidate_epoch(self.family_options) if family and self.family_options else 0

    @property
    def training_note(self) -> str:
        """What the family's section changed about the schedule, for the checkpoint card."""
        family = self.family
        return family.training_note(self.family_options) if family and self.family_options else ""

    @property
    def is_language_model(self) -> bool:
        """Trains on next-token prediction over a text corpus (its model has the next_token capability)."""
        return self.data.dataset == ENWIKI

    def model_config(self, tokenizer: TextTokenizer) -> FamilyConfig:
        """The architecture of a new model (runs without init_from)."""
        if self.model is None:
            raise ConfigError("a run without init_from needs a 'model' section")
        return model_config_from_dict(
            {
                **self.model,
                "vocab_size": tokenizer.vocab_size,
                "pad_id": tokenizer.pad_id,
                "bos_id": tokenizer.bos_id,
                "eos_id": tokenizer.eos_id,
            }
        )

    @property
    def init_from_folder(self) -> Path | None:
        return None if self.init_from is None else REPO_ROOT / self.init_from

    def to_dict(self) -> dict:
        """The config as its JSON file says it: the family's section under the family's name."""
        values = {key: value for key, value in asdict(self).items() if key != "family_options"}
        family = self.family
        if family is not None and self.family_options is not None:
            values[family.name] = asdict(self.family_options)
        return values


def family_sections() -> dict[str, type]:
    """The families' own sections of a training config, by key (the family's name)."""
    return {family.name: family.training_options for family in families() if family.training_options is not None}


def sections() -> dict[str, type]:
    """The config's sections that are dataclasses of their own, by key: an unknown key inside one lists its keys."""
    return {"data": DataConfig, "train": LoopConfig, **family_sections()}


def load_config(path: str | Path) -> TrainConfig:
    path = Path(path)
    try:
        values = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file {path} not found") from None
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path} is not valid JSON: {error}") from None
    try:
        return config_from_dict(values)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from None


def config_from_dict(values: Any) -> TrainConfig:
    if not isinstance(values, dict):
        raise ConfigError("a training config must be a JSON object")
    own = {key: values[key] for key in family_sections() if key in values}
    try:
        config = TrainConfig(**{key: value for key, value in values.items() if key not in own})
        config.family_options = _family_options(config, own)
    except ValidationError as error:
        raise ConfigError("; ".join(_describe(problem) for problem in error.errors())) from None
    _check_model_source(config)
    return config


def _family_options(config: TrainConfig, own: dict[str, Any]) -> Any:
    """The model family's own section, read by its type; a section of another family, or a family's section
    missing, is a ConfigError."""
    family = config.family
    stray = [key for key in own if family is None or key != family.name]
    if stray:
        raise ConfigError(f"the {stray[0]!r} section needs a model of family {stray[0]!r}")
    if family is None or family.training_options is None:
        return None
    options, section = family.training_options, own.get(family.name)
    if section is None:
        keys = ", ".join(f.name for f in fields(options))
        raise ConfigError(f"a {family.title} model needs the {family.name!r} section ({keys})")
    if not isinstance(section, dict):
        raise ConfigError(f"the {family.name!r} section must be a JSON object")
    try:
        return options(**section)
    except ValidationError as error:
        raise ConfigError("; ".join(_describe(problem, family.name) for problem in error.errors())) from None


def _describe(problem: ErrorDetails, section_key: str | None = None) -> str:
    """One problem in words; `section_key`: the section a family's options were read from."""
    loc = (section_key, *problem["loc"]) if section_key else problem["loc"]
    where = ".".join(str(part) for part in loc)
    if problem["type"] == "unexpected_keyword_argument":
        section = sections()[str(loc[0])] if len(loc) > 1 else TrainConfig
        allowed = [f.name for f in fields(section) if f.init]
        return f"unknown key {where!r} (allowed here: {', '.join(allowed)})"
    return f"{where or 'config'}: {problem['msg']}"


def _check_model_source(config: TrainConfig) -> None:
    """Exactly one source for the architecture: a "model" section, or init_from."""
    language_only = (config.data.max_articles, config.data.wikitext, config.data.tokenizer_from)
    if any(value is not None for value in language_only) and not config.is_language_model:
        raise ConfigError("data.max_articles, data.wikitext and data.tokenizer_from apply to a language model's corpus")
    if config.data.tokenizer_from is not None and (config.data.vocab_size is not None or config.init_from is not None):
        raise ConfigError(
            "data.tokenizer_from sets the vocabulary: remove data.vocab_size (and init_from brings its own)"
        )
    if config.is_language_model and (config.data.max_pairs is not None or config.data.max_eval_pairs is not None):
        raise ConfigError(
            "data.max_pairs and data.max_eval_pairs apply to a parallel corpus; a language model has data.max_articles"
        )
    family = config.family
    if config.init_from is not None:
        if config.is_language_model and not (family and family.needs_trained_start):
            built_on = [f.name for f in families() if f.needs_trained_start]
            raise ConfigError(
                "a language model starts from init_from only to have memory added: its model section names family "
                f"{' or '.join(map(repr, built_on))}"
            )
        if family is not None and family.warm_start_fields:
            extra = sorted(set(config.model or {}) - set(family.warm_start_fields))
            if extra:
                raise ConfigError(
                    f"a {family.title} model started from a trained model takes its sizes from it: "
                    f"remove model.{', model.'.join(extra)}"
                )
            if config.grow_memory_to is not None:
                raise ConfigError(f"grow_memory_to grows a trained model's memory slots, not a new {family.title}")
        elif config.model is not None:
            raise ConfigError(
                "a run with init_from takes its architecture from that checkpoint: remove the 'model' section"
            )
        if config.data.vocab_size is not None:
            raise ConfigError("a run with init_from keeps that checkpoint's tokenizer: remove data.vocab_size")
        return
    if config.grow_memory_to is not None:
        raise ConfigError("grow_memory_to needs init_from: the checkpoint whose memory to grow")
    if family is not None and family.needs_trained_start:
        raise ConfigError(f"a {family.title} model is built on a trained model: set init_from to its folder")
    if config.model is None:
        raise ConfigError("missing 'model' section (or init_from)")
    for key in config.model:
        if key in TOKENIZER_FIELDS:
            hint = " (set data.vocab_size instead)" if key == "vocab_size" else ""
            raise ConfigError(f"'model.{key}' comes from the tokenizer{hint}")
        if key not in MODEL_FIELDS:
            raise ConfigError(f"unknown key 'model.{key}' (allowed here: {', '.join(MODEL_FIELDS)})")
    try:
        model = model_config_from_dict(config.model)  # family, sizes and memory size checks
    except (TypeError, ValueError) as error:
        raise ConfigError(f"model: {error}") from None
    if (Capability.NEXT_TOKEN in capabilities_of(model)) != config.is_language_model:
        raise ConfigError(
            f"a model that predicts next tokens trains on data.dataset {ENWIKI!r}, "
            f"and a translation model on a parallel corpus (model family {model.family!r})"
        )
    if config.data.max_len > model.max_positions:
        raise ConfigError(f"data.max_len {config.data.max_len} exceeds model.max_positions {model.max_positions}")
