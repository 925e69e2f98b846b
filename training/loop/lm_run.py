"""A language-model run (docs/language_model.md): enwiki -> BPE vocabulary
-> token streams (cached in the run directory) -> training -> perplexity on
the enwiki validation split and WikiText-2/-103 valid/test -> checkpoint
folder. Resumes like every run: rerun the same command."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import torch
from torch import nn

from inference.core.capabilities import Capability, FamilyConfig, config_of
from inference.core.checkpoint import load_checkpoint, save_folder
from inference.core.family import build_model, capabilities_of, family_of, family_of_config
from inference.core.model_record import ModelRecord
from inference.core.places import REPO_ROOT, resolve_data_dir
from inference.core.tokenizer import TextTokenizer, train_bpe
from training.data.lm_corpora import ENWIKI, ENWIKI_DESCRIPTION, WIKITEXT_FILES, Document, read_enwiki, read_wikitext
from training.data.lm_streams import (
    LanguageModelData,
    TokenStream,
    evaluation_stream,
    load_or_tokenize,
    tokenize_documents,
)
from training.data.vocabulary import DEFAULT_VOCAB_SIZE, load_or_train
from training.evaluation.perplexity import EvalText, perplexity_metrics
from training.loop.config import ConfigError, TrainConfig
from training.loop.distributed import join_ranks
from training.loop.epochs import train
from training.loop.run_dir import RunDir

TRAIN_STREAM, VAL_STREAM = "train_tokens.safetensors", "val_tokens.safetensors"  # caches in the run directory

# What the Segments page opens a segment-recurrent language model on: plain English long enough for several
# segments (133 tokens of the served 8,000-token enwiki vocabulary: two segments of 50 and most of a third).
SEGMENTS_EXAMPLE = (
    "The river rises in the hills north of the town and flows south for about forty kilometres before it joins "
    "the sea. In the nineteenth century the town grew around a mill that used the river to power its machines, and "
    "a railway line was built along the valley in 1862. The mill closed in 1954, but its main building survives and "
    "is now a museum. The town has a population of about twelve thousand people, and most of them work in the nearby "
    "city. The river is also known for its trout, which draw anglers from across the region every spring."
)


def run_language_model_training(
    config: TrainConfig,
    data_dir: str | Path | None = None,
    out_dir: str | Path | None = None,
    run_dir: str | Path | None = None,
    device: str = "auto",
    max_steps: int | None = None,
    pause: bool = False,
) -> Path:
    """training.loop.translation_run.run_training for a language-model config."""
    ranks, chosen = join_ranks(device)  # one process, or a rank of a torchrun run
    data_dir = resolve_data_dir(data_dir)
    documents = read_enwiki(data_dir)
    train_documents = documents["train"][: config.data.max_articles]  # None: all

    def prepare() -> tuple[RunDir, nn.Module, TextTokenizer, LanguageModelData]:
        run = RunDir(run_dir or REPO_ROOT / "runs" / config.name, config)
        torch.manual_seed(config.train.seed)  # the initial weights; a resumed run restores its RNG state
        vocab_size = config.data.vocab_size or DEFAULT_VOCAB_SIZE
        if config.init_from_folder is None:
            tokenizer = load_or_train(
                run.tokenizer_path,
                lambda: (
                    load_checkpoint(REPO_ROOT / config.data.tokenizer_from, "cpu").tokenizer  # with its special ids
                    if config.data.tokenizer_from
                    else train_bpe((s for document in train_documents for s in document), vocab_size)
                ),
            )
            model = build_model(config.model_config(tokenizer)).to(chosen)
        else:
            model, tokenizer = started_model(config, chosen)
        data = LanguageModelData(
            load_or_tokenize(run.path / TRAIN_STREAM, tokenizer, train_documents),
            load_or_tokenize(run.path / VAL_STREAM, tokenizer, documents["val"]),
            config.data.max_len,
        )
        return run, model, tokenizer, data

    run, model, tokenizer, data = ranks.main_first(prepare)
    if ranks.main:
        run.log(
            f"vocabulary of {tokenizer.vocab_size}; enwiki train {len(train_documents):,} articles, "
            f"{data.train.sentences:,} sentences, {len(data.train.tokens):,} tokens; "
            f"val {len(documents['val']):,} articles, {data.val.sentences:,} sentences, {len(data.val.tokens):,} tokens"
        )
    progress = train(model, tokenizer, config.train, data, run, max_steps, ranks=ranks)
    folder = Path(out_dir or REPO_ROOT / "checkpoints" / config.name)
    if pause and not config.train.finished(progress.epoch, progress.step):
        return run.path
    if not ranks.main:  # rank 0 evaluates and writes the checkpoint
        return folder

    wikitext = list(WIKITEXT_FILES) if config.data.wikitext is None else config.data.wikitext
    run.log(f"evaluating perplexity on enwiki val and {', '.join(wikitext)}, windows of {config.data.max_len} tokens")
    texts = evaluation_texts(tokenizer, data.val, documents["val"], data_dir, wikitext)
    measured = evaluation_metrics(model, tokenizer, texts, chosen, config.data.max_len)
    metrics = {**measured, "train": {**progress.train_record(chosen, 0, None), "config": config.name}}
    meta = checkpoint_record(config, config_of(model), len(train_documents), data, progress.step)
    folder = save_folder(folder, model, tokenizer, meta, metrics)
    run.log(
        f"perplexity {metrics['perplexity']}, word-level {metrics['word_perplexity']}; checkpoint written to {folder}"
    )
    return folder


def started_model(config: TrainConfig, device: torch.device) -> tuple[nn.Module, TextTokenizer]:
    """A model of the "model" section's family started from the init_from checkpoint (memory added to a pretrained
    language model: the config's checks allow no other), with that checkpoint's tokenizer."""
    assert config.init_from_folder is not None and config.model is not None
    start = load_checkpoint(config.init_from_folder, device)
    try:
        model = family_of(config.model["family"]).warm_start(start.model, config.model, config.train.seed)
    except ValueError as error:
        raise ConfigError(f"model: {error}") from None
    return model.to(device), start.tokenizer


def evaluation_texts(
    tokenizer: TextTokenizer, val: TokenStream, val_documents: list[Document], data_dir: Path, wikitext: Iterable[str]
) -> dict[str, EvalText]:
    """enwiki_val (`val`: the stream of `val_documents`) and the `wikitext`
    splits, as streams with their word counts."""
    texts = {
        "enwiki_val": EvalText(
            evaluation_stream(val, tokenizer.eos_id),
            sum(len(s.split()) for document in val_documents for s in document),
        )
    }
    for split in wikitext:
        text = read_wikitext(data_dir, split)
        texts[split] = EvalText(
            evaluation_stream(tokenize_documents(tokenizer, text.articles), tokenizer.eos_id), text.words
        )
    return texts


def evaluation_metrics(
    model: nn.Module, tokenizer: TextTokenizer, texts: dict[str, EvalText], device: torch.device | str, context: int
) -> dict:
    """The measured part of a language model's metrics.json (all but "train");
    `context`: the scoring window, the training block length."""
    return perplexity_metrics(model, tokenizer, texts, device, context)


def remeasure(
    model: nn.Module,
    tokenizer: TextTokenizer,
    data_dir: str | Path | None,
    device: torch.device | str,
    context: int,
    wikitext: Iterable[str],
) -> dict:
    """evaluation_metrics of a trained model on the texts its run measured
    (`wikitext`, `context`), rebuilt from the data folder as the run built
    them (the run caches the same stream)."""
    data_dir = resolve_data_dir(data_dir)
    val_documents = read_enwiki(data_dir)["val"]
    return evaluation_metrics(
        model,
        tokenizer,
        evaluation_texts(tokenizer, tokenize_documents(tokenizer, val_documents), val_documents, data_dir, wikitext),
        device,
        context,
    )


def checkpoint_record(
    config: TrainConfig, model_config: FamilyConfig, train_articles: int, data: LanguageModelData, steps: int
) -> ModelRecord:
    """`steps`: the optimiser steps trained, which a --max-steps run stops short of the configured epochs."""
    c = model_config
    tokens = steps * config.train.batch_size * data.block_len
    trained = (
        f"{steps:,} steps of {config.train.batch_size} blocks "
        f"({tokens:,} tokens, {tokens / len(data.train.tokens):.2f} epochs)"
    )
    started = f" from {config.init_from}" if config.init_from else ""
    segments = Capability.SEGMENTS in capabilities_of(c)
    # the text the Segments page opens on, and the name it gives the model
    segment_meta = {"example": SEGMENTS_EXAMPLE} if segments else {}
    return ModelRecord(
        memory_size=c.memory_size,
        corpus=ENWIKI,
        training_data=(
            f"{ENWIKI_DESCRIPTION}, train ({train_articles:,} articles, {data.train.sentences:,} sentences, "
            f"{len(data.train.tokens):,} tokens)"
        ),
        description=(
            f"{family_of_config(c).describe(c)}; {trained} on enwiki{started}, blocks of {data.block_len} tokens"
        ),
        **segment_meta,
    )
