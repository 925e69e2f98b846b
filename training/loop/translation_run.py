"""Whole commands: a training run from its config to a finished checkpoint
folder, recomputing a checkpoint's lesion table, and storing a checkpoint's
weights in float16 with its metrics re-measured on them."""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict
from pathlib import Path

import torch
from torch import nn

from inference.core.capabilities import Capability, FamilyConfig, config_of
from inference.core.checkpoint import (
    STUDY_KEYS,
    CheckpointError,
    folder_files,
    load_checkpoint,
    read_json_object,
    save_folder,
    write_metrics,
)
from inference.core.family import LoadedModel, build_model, capabilities_of, family_of, family_of_config
from inference.core.model_record import ModelRecord
from inference.core.places import REPO_ROOT, resolve_data_dir
from inference.core.tokenizer import TextTokenizer
from training.data.corpora import CORPORA, Corpus
from training.data.lm_corpora import WIKITEXT_FILES
from training.data.translation import Pair, tokenize_pairs
from training.data.vocabulary import DEFAULT_VOCAB_SIZE, load_or_train_vocabulary
from training.evaluation.outputs import OUTPUTS_FILE, measure_outputs, write_outputs
from training.evaluation.translation import lesion_table, perplexity, score_splits
from training.loop.config import ConfigError, TrainConfig
from training.loop.distributed import join_ranks
from training.loop.epochs import TrainingData, train
from training.loop.lm_run import remeasure as remeasure_language_model
from training.loop.lm_run import run_language_model_training
from training.loop.run_dir import Progress, RunDir


def run_training(
    config: TrainConfig,
    data_dir: str | Path | None = None,
    out_dir: str | Path | None = None,
    run_dir: str | Path | None = None,
    device: str = "auto",
    max_steps: int | None = None,
    pause: bool = False,
) -> Path:
    """Train (or resume) the run of `config`, evaluate it and write its checkpoint folder; returns that folder.
    pause: a run stopped by max_steps keeps only its resumable state, and the run folder is returned instead."""
    if config.train.threads is not None:
        torch.set_num_threads(config.train.threads)
    if config.is_language_model:
        return run_language_model_training(config, data_dir, out_dir, run_dir, device, max_steps, pause)
    ranks, chosen = join_ranks(device)  # one process, or a rank of a torchrun run
    corpus = CORPORA[config.data.dataset]
    splits = first_pairs(corpus.read(resolve_data_dir(data_dir)), config.data.max_pairs, config.data.max_eval_pairs)

    def prepare() -> tuple[RunDir, tuple[nn.Module, TextTokenizer, int]]:
        run = RunDir(run_dir or REPO_ROOT / "runs" / config.name, config)
        torch.manual_seed(config.train.seed)  # the initial weights; a resumed run restores its RNG state
        return run, initial_model(config, splits["train"], run)

    run, (model, tokenizer, schedule_offset) = ranks.main_first(prepare)
    model.to(chosen)
    max_len = config.data.max_len
    data = TrainingData(
        tokenize_pairs(tokenizer, splits["train"], max_len),
        tokenize_pairs(tokenizer, splits["val"], max_len),
        splits["val"],
    )
    if ranks.main:
        run.log(
            f"vocabulary of {tokenizer.vocab_size}; "
            f"{len(data.train)} of {len(splits['train'])} training pairs within max_len {max_len}"
        )
    progress = train(
        model,
        tokenizer,
        config.train,
        data,
        run,
        max_steps,
        schedule_offset,
        config.family_options,
        config.first_candidate_epoch,
        ranks,
    )
    folder = Path(out_dir or REPO_ROOT / "checkpoints" / config.name)
    if pause and not config.train.finished(progress.epoch, progress.step):
        return run.path
    if not ranks.main:  # rank 0 evaluates and writes the checkpoint
        return folder
    selected = select_best_on_validation(model, run, progress)

    run.log(f"evaluating on val and {', '.join(corpus.test_splits)}")
    metrics = final_metrics(model, tokenizer, corpus, splits, progress, chosen, schedule_offset, selected)
    meta = checkpoint_record(config, config_of(model), len(splits["train"]), selected)
    folder = save_folder(folder, model, tokenizer, meta, metrics)
    run.log(f"BLEU {metrics['bleu']}, chrF {metrics['chrf']}; checkpoint written to {folder}")
    return folder


def select_best_on_validation(model: nn.Module, run: RunDir, progress: Progress) -> tuple[int, int] | None:
    """Put the weights of the epoch with the highest validation BLEU into `model`: (that epoch, its step),
    or None where no validation BLEU was measured, or the run began before best.pt was kept (the last weights stay)."""
    if progress.best_val_epoch() is None or not run.best_path.exists():
        return None
    epoch, step = run.load_best(model)
    run.log(f"the checkpoint keeps epoch {epoch} of {progress.epoch}: the highest validation BLEU")
    return epoch, step


def first_pairs(splits: dict[str, list[Pair]], max_train: int | None, max_eval: int | None) -> dict[str, list[Pair]]:
    """The first max_train training pairs and the first max_eval pairs of every other split (None: all)."""
    return {split: pairs[: max_train if split == "train" else max_eval] for split, pairs in splits.items()}


def evaluation_splits(loaded: LoadedModel, data_dir: str | Path | None) -> tuple[Corpus, dict[str, list[Pair]]]:
    """A checkpoint's corpus and the held-out splits as its training run evaluated them (record.max_eval_pairs)."""
    corpus = CORPORA[loaded.record.corpus or "multi30k"]  # records without a corpus are all Multi30k
    return corpus, first_pairs(corpus.read(resolve_data_dir(data_dir)), None, loaded.record.max_eval_pairs)


def initial_model(config: TrainConfig, train_pairs: list[Pair], run: RunDir) -> tuple[nn.Module, TextTokenizer, int]:
    """(model, tokenizer, schedule offset) before training: a new model on
    the shared vocabulary, or the init_from checkpoint (its memory grown, or
    turned into a working-memory model, if asked), continuing that
    checkpoint's learning-rate schedule."""
    if config.init_from_folder is None:
        tokenizer = load_or_train_vocabulary(
            run.tokenizer_path, train_pairs, config.data.vocab_size or DEFAULT_VOCAB_SIZE
        )
        return build_model(config.model_config(tokenizer)), tokenizer, 0
    source = load_checkpoint(config.init_from_folder, device="cpu")
    schedule_steps = (source.metrics.train or {}).get("schedule_steps")
    if schedule_steps is None:
        raise CheckpointError(
            f"{config.init_from_folder}/metrics.json lacks train.schedule_steps, "
            "the learning-rate schedule position to continue from"
        )
    if config.model is not None:  # a model section beside init_from: a model of its family takes the weights
        fields = config.model
    elif config.grow_memory_to is not None:
        fields = {**asdict(source.config), "memory_size": config.grow_memory_to}
    else:
        return source.model, source.tokenizer, schedule_steps
    return warm_start(source.model, fields, config.train.seed), source.tokenizer, schedule_steps


def warm_start(source: nn.Module, config_fields: dict, seed: int = 0) -> nn.Module:
    """A model of the family `config_fields` names, starting from `source`'s trained weights (Family.warm_start)."""
    try:
        return family_of(config_fields["family"]).warm_start(source, config_fields, seed)
    except ValueError as error:
        raise ConfigError(str(error)) from None


def final_metrics(
    model: nn.Module,
    tokenizer: TextTokenizer,
    corpus: Corpus,
    splits: dict[str, list[Pair]],
    progress: Progress,
    device: torch.device,
    schedule_offset: int,
    selected: tuple[int, int] | None,
) -> dict:
    """metrics.json of a finished run; selected: the (epoch, step) whose weights the model holds."""
    metrics = evaluation_metrics(model, tokenizer, corpus, splits)
    metrics["train"] = {
        **progress.train_record(device, schedule_offset, selected),
        "val_bleu": {"epoch": progress.val_bleu_epochs, "bleu": progress.val_bleu},
    }
    if "lesion" in metrics:
        metrics["lesion"] = metrics.pop("lesion")  # after "train", where metrics.json has always had it
    return metrics


def evaluation_metrics(
    model: nn.Module, tokenizer: TextTokenizer, corpus: Corpus, splits: dict[str, list[Pair]]
) -> dict:
    """The measured part of a translation model's metrics.json (all but
    "train"): BLEU and chrF on val and the corpus's test splits, teacher-forced
    perplexity where the decoder reads the target alone (not working memory),
    and for a model with memory the lesion table on the headline split."""
    scored = {split: splits[split] for split in ("val", *corpus.test_splits)}
    metrics = score_splits(model, tokenizer, scored)
    config = config_of(model)
    if Capability.WORKING_MEMORY not in capabilities_of(config):  # its stream interleaves chosen memory tokens
        metrics["perplexity"] = {split: perplexity(model, tokenizer, pairs) for split, pairs in scored.items()}
    if config.memory_size:
        metrics["lesion"] = lesion_table(model, tokenizer, splits[corpus.headline])
        metrics["lesion"]["split"] = corpus.headline
    return metrics


def checkpoint_record(
    config: TrainConfig, model_config: FamilyConfig, train_pairs: int, selected: tuple[int, int] | None = None
) -> ModelRecord:
    """The record of a run's checkpoint (its card); selected: the (epoch, step) whose weights it holds, if any."""
    c = model_config
    corpus = CORPORA[config.data.dataset]
    origin = f", fine-tuned from {config.init_from}" if config.init_from else ""
    evaluated = (
        f"; evaluated on the first {config.data.max_eval_pairs:,} pairs of each held-out split"
        if config.data.max_eval_pairs
        else ""
    )
    plain = config.training_note  # what the family's own section changed, e.g. " (2 of them without memory)"
    sizes = family_of_config(c).describe(c)
    kept = (
        f"; the weights of epoch {selected[0]}, the best on validation BLEU"
        if selected and selected[0] != config.train.epochs
        else ""
    )
    description = (
        f"{sizes}; "
        f"{config.train.epochs} epoch{'s' if config.train.epochs != 1 else ''}{plain} "
        f"on {corpus.description}{origin}{kept}{evaluated}"
    )
    return ModelRecord(
        memory_size=c.memory_size,
        corpus=corpus.name,
        source_language=corpus.source_language,
        training_data=f"{corpus.description}, train ({train_pairs:,} pairs)",
        description=description,
        seed=config.train.seed,
        max_eval_pairs=config.data.max_eval_pairs or None,  # store-half and lesion re-measure on the same pairs
    )


def recompute_lesion(folder: str | Path, data_dir: str | Path | None = None, device: str = "auto") -> dict:
    """Rerun the lesion sweep of a checkpoint on its corpus's headline test
    split and store it in its metrics.json; returns the new table."""
    folder = Path(folder)
    loaded = load_checkpoint(folder, device)
    if loaded.config.memory_size == 0:
        raise CheckpointError(f"{folder} is a model without memory: there is no memory size to lesion")
    corpus, splits = evaluation_splits(loaded, data_dir)
    table = lesion_table(loaded.model, loaded.tokenizer, splits[corpus.headline])
    table["split"] = corpus.headline
    write_metrics(folder, {**read_json_object(folder / "metrics.json"), "lesion": table})  # its other keys as on disk
    return table


def store_outputs(folder: str | Path, data_dir: str | Path | None = None, device: str = "auto", log=print) -> Path:
    """Translate a translation checkpoint's headline test split as trained and under each lesion the tables
    compare, and store the outputs beside its weights (training.evaluation.outputs)."""
    folder = Path(folder)
    loaded = load_checkpoint(folder, device)
    if Capability.TRANSLATES not in capabilities_of(loaded.config):
        raise CheckpointError(f"{folder} does not translate: there are no translations to store")
    corpus, splits = evaluation_splits(loaded, data_dir)
    return write_outputs(folder, measure_outputs(loaded, corpus.headline, splits[corpus.headline], log))


def store_half(folder: str | Path, data_dir: str | Path | None = None, device: str = "auto") -> tuple[dict, dict]:
    """Store a checkpoint's weights in float16 and re-measure every number of
    its metrics.json but the "train" record on the stored weights, with the
    code that measured them at training time; returns (old, new) metrics.

    Everything is staged in a hidden sibling folder (the registry skips dot
    folders) and moved in once measured, so an interrupted run leaves the
    checkpoint as it was. Rerunning on a float16 checkpoint leaves its
    weights as they are.

    Stored test outputs (training.evaluation.outputs) are translated again on the stored
    weights. A folder holding other files (memory_analysis.json, mined FF
    triggers: studies of the current weights that this does not redo) is refused."""
    folder = Path(folder)
    loaded = load_checkpoint(folder, "cpu")
    kept = (*folder_files(loaded.config.family), OUTPUTS_FILE)
    others = sorted(path.name for path in folder.iterdir() if path.name not in kept) if folder.is_dir() else []
    if others:
        raise CheckpointError(
            f"{folder} holds {', '.join(others)}, made from its current weights "
            "and not re-measured by store-half; nothing was changed"
        )
    on_disk = read_json_object(folder / "metrics.json")  # rewritten with its keys in their order
    studies = [key for key in STUDY_KEYS if key in on_disk]
    if studies:
        raise CheckpointError(
            f"{folder}/metrics.json holds {', '.join(studies)}, a study of its current weights that store-half does "
            "not redo: remove it, store half, then run the study again; nothing was changed"
        )
    staging = folder.parent / f".{folder.name}.float16"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        meta = loaded.record.model_copy(update={"format": None})  # a reader's, not the folder's
        save_folder(staging, loaded.model, loaded.tokenizer, meta, on_disk, weights_dtype="float16")
        measured = remeasure(load_checkpoint(staging, device), data_dir)  # the stored weights, read back as float32
        unmeasured = missing_numbers({k: v for k, v in on_disk.items() if k not in ("version", "train")}, measured)
        if unmeasured:
            raise CheckpointError(
                f"{folder}/metrics.json holds numbers the training code does not measure, "
                f"e.g. {unmeasured[0]}; nothing was changed"
            )
        metrics = {**on_disk, **measured}
        write_metrics(staging, metrics)
        if (folder / OUTPUTS_FILE).exists():
            store_outputs(staging, data_dir, device, log=lambda line: None)  # the stored weights' outputs
        for name in [name for name in kept if (staging / name).exists()]:
            shutil.copymode(folder / name, staging / name)  # the conversion changes contents, not permissions
            os.replace(staging / name, folder / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return on_disk, metrics


def remeasure(loaded: LoadedModel, data_dir: str | Path | None = None) -> dict:
    """The measured part of metrics.json (all but "train"), as the training run measures it."""
    if Capability.NEXT_TOKEN in capabilities_of(loaded.config):
        counts = loaded.metrics.perplexity_counts  # the scoring window and the texts the run measured
        if counts is None:
            raise CheckpointError(f"{loaded.name} has no perplexity record: only a language-model run can remeasure it")
        wikitext = [split for split in counts["splits"] if split in WIKITEXT_FILES]
        return remeasure_language_model(
            loaded.model, loaded.tokenizer, data_dir, loaded.device, counts["context"], wikitext
        )
    corpus, splits = evaluation_splits(loaded, data_dir)
    return evaluation_metrics(loaded.model, loaded.tokenizer, corpus, splits)


def missing_numbers(old: dict | list, new: dict | list, path: str = "") -> list[str]:
    """Paths of `old` (nested dicts and lists) that `new` lacks: numbers that
    re-measuring would leave stale."""
    if isinstance(old, dict):
        if not isinstance(new, dict):
            return [path]
        missing: list[str] = []
        for key, value in old.items():
            where = f"{path}.{key}" if path else key
            missing += missing_numbers(value, new[key], where) if key in new else [where]
        return missing
    if isinstance(old, list):
        return [] if isinstance(new, list) and len(new) == len(old) else [path]
    return []
