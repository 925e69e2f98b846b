"""Checkpoint folders and the registry that serves them.

A checkpoint is a folder:

    config.json        {"format_version": 2, "model": {...config...}, "meta": {...the run's record...}}
    model.safetensors  weights (shared weights stored once; float32, or float16
                       where meta says "weights_dtype": "float16")
    tokenizer.json     Hugging Face tokenizers format
    metrics.json       what the run measured: BLEU, perplexity, lesion curves, task accuracy, studies
                       (inference.core.model_results: typed, checked where written and read)

Loading validates every file and never unpickles. The registry scans a root
folder, checks each entry cheaply (JSON parses, files exist, tensor names and
shapes in the safetensors header match the config, the tokenizer loads and
fits the vocabulary), loads models lazily, and
lists a broken entry with its reason instead of raising.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypeVar

import torch
from safetensors import safe_open
from safetensors.torch import load_model, save_model

from inference.core.byte_cache import ByteBudgetCache, tensor_bytes
from inference.core.capabilities import FamilyConfig, config_of
from inference.core.family import (
    LoadedModel,
    build_model,
    config_from_dict,
    current_config_values,
    family_of_config,
    family_of_model,
    kind_of,
)
from inference.core.family_folders import load_families
from inference.core.folders import FolderReader, folder_reader_for, folder_writer_for
from inference.core.model_record import ModelRecord, RecordError, read_record
from inference.core.model_results import NO_RESULTS, ModelResults, ResultsError, current_values, read_results
from inference.core.places import select_device
from inference.core.tokenizer import TextTokenizer

FORMAT_VERSION = 2  # 1 named a family's variant in the model's `family` (inference.core.family.current_config_values)
READ_FORMAT_VERSIONS = (1, 2)
FILES = ("config.json", "model.safetensors", "tokenizer.json", "metrics.json")
OUTSIDE_META = "memlens.json"  # a folder of another format trained here: its meta (how it was trained)
# How model.safetensors may store the weights. float16 halves the file (the
# repository's checkpoints/ has a size budget); loading always gives float32
# parameters, since load_state_dict copies into the model's own tensors.
Result = TypeVar("Result")
WEIGHTS_DTYPES = {"float32": torch.float32, "float16": torch.float16}
# Keys of metrics.json that hold studies of the current weights, measured offline after training
# (training.studies.carried_state, training.studies.memory_probe): a retrain or store-half does not redo them.
CARRIED_STATE_KEY, MEMORY_PROBE_KEY = "carried_state", "memory_probe"
STUDY_KEYS = (CARRIED_STATE_KEY, MEMORY_PROBE_KEY)


class CheckpointError(Exception):
    """A checkpoint folder that cannot be used; the message says why."""


def save_checkpoint(
    folder: str | Path,
    model: torch.nn.Module,
    tokenizer: TextTokenizer,
    meta: ModelRecord | dict | None = None,
    metrics: dict | None = None,
    weights_dtype: str = "float32",
) -> Path:
    """Write the checkpoint folder; `meta` is its run's record (a dict is read as one, so a key no record has
    fails here). weights_dtype "float16" stores rounded weights (the model itself is left as it is) and says so
    in the record; metrics should then be measured on the rounded weights (`python -m training store-half`)."""
    record = stored_record(model, meta, weights_dtype)
    read_results(metrics or {})  # nothing is written where the results would not read
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config = {"format_version": FORMAT_VERSION, "model": asdict(config_of(model)), "meta": record.as_json()}
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    save_model(
        model if weights_dtype == "float32" else cast_copy(model, WEIGHTS_DTYPES[weights_dtype]),
        str(folder / "model.safetensors"),
    )
    tokenizer.save(folder / "tokenizer.json")
    write_metrics(folder, metrics or {})
    return folder


def stored_record(model: torch.nn.Module, meta: ModelRecord | dict | None, weights_dtype: str) -> ModelRecord:
    """The record a folder of `model` stores: `meta` read as its family's record, saying float16 weights."""
    if weights_dtype not in WEIGHTS_DTYPES:
        raise ValueError(f"weights_dtype must be one of {', '.join(WEIGHTS_DTYPES)}, got {weights_dtype!r}")
    record = read_record(meta or {}, family_of_model(model))
    # float32 is the default, left unsaid so existing config.json files stay as they are
    return record.model_copy(update={"weights_dtype": "float16" if weights_dtype == "float16" else None})


def save_folder(
    folder: str | Path,
    model: torch.nn.Module,
    tokenizer: TextTokenizer,
    meta: ModelRecord | dict | None = None,
    metrics: dict | None = None,
    weights_dtype: str = "float32",
) -> Path:
    """Write a trained model's folder in its family's format: a MemLens checkpoint (save_checkpoint), or the format
    of a reader that writes that family's models (a Hugging Face folder)."""
    load_families()  # the families register their readers when imported
    writer = folder_writer_for(config_of(model).family)
    if writer is None:
        return save_checkpoint(folder, model, tokenizer, meta, metrics, weights_dtype)
    record = stored_record(model, meta, weights_dtype)
    read_results(metrics or {})  # nothing is written where the results would not read
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    writer.save(folder, model, tokenizer, record.as_json(), metrics or {}, weights_dtype)
    return folder


def folder_files(family: str) -> tuple[str, ...]:
    """The files save_folder writes for a model of `family`."""
    load_families()
    writer = folder_writer_for(family)
    return FILES if writer is None else writer.files


def cast_copy(model: torch.nn.Module, dtype: torch.dtype) -> torch.nn.Module:
    """A CPU copy of `model` in `dtype`; deepcopy keeps tied weights tied, so
    save_model still stores them once. Refuses weights the dtype cannot hold
    (they would turn into inf)."""
    limit = torch.finfo(dtype).max
    for name, parameter in model.named_parameters():
        if (
            parameter.numel() and parameter.detach().abs().max() > limit
        ):  # a model without memory has an empty memory parameter
            raise ValueError(f"{name} has values beyond {dtype}'s range (±{limit:g}); store it as float32")
    return copy.deepcopy(model).to("cpu", dtype)


def store_study(folder: str | Path, key: str, record: dict) -> None:
    """Store a study of the folder's current weights (a key of STUDY_KEYS) in its metrics.json, the file's other
    keys kept as they are on disk."""
    if key not in STUDY_KEYS:
        raise ValueError(f"{key!r} is not a study key ({', '.join(STUDY_KEYS)})")
    path = Path(folder) / "metrics.json"
    write_metrics(folder, {**(read_json_object(path) if path.exists() else {}), key: record})


def write_metrics(folder: str | Path, metrics: dict) -> None:
    """Write a folder's metrics.json, in the current version, its keys in the order given, once they read as
    results: a key misspelt or of the wrong shape fails here (ResultsError), not where a page reads it."""
    values = current_values(metrics)
    read_results(values)
    (Path(folder) / "metrics.json").write_text(json.dumps(values, indent=2) + "\n")


def read_json_object(path: Path) -> dict:
    try:
        value = json.loads(path.read_text())
    except FileNotFoundError:
        raise CheckpointError(f"{path.name} is missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"{path.name} is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise CheckpointError(f"{path.name} must hold a JSON object")
    return value


def read_config(folder: Path) -> tuple[FamilyConfig, ModelRecord, FolderReader | None]:
    """(model config, the record of its run, the reader of a folder in another format) from config.json, read once
    and validated: a MemLens checkpoint's own (reader None), or what a registered FolderReader makes of another
    format's (its record names the format)."""
    raw = read_json_object(folder / "config.json")
    if "format_version" not in raw:
        load_families()  # the families register their readers when imported
        reader = folder_reader_for(raw)
        if reader is None:
            raise CheckpointError(
                "config.json has no format_version: neither a MemLens checkpoint nor a folder any family reads"
            )
        config = outside(reader, lambda: reader.config(folder, raw))
        meta = {**reader.meta(config), **optional_json(folder, OUTSIDE_META), "format": reader.format}
        return config, checked_record(meta, config, OUTSIDE_META), reader
    version = raw["format_version"]
    if version not in READ_FORMAT_VERSIONS:
        raise CheckpointError(
            f"config.json has format_version {version!r}; this MemLens reads "
            f"{' and '.join(map(str, READ_FORMAT_VERSIONS))}"
        )
    try:
        config = config_from_dict(current_config_values(raw.get("model") or {}, version))
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"config.json has an invalid model config: {error}") from None
    return config, checked_record(raw.get("meta") or {}, config, "config.json"), None


def checked_record(meta: dict, config: FamilyConfig, file: str) -> ModelRecord:
    """The record of a folder's run, or a CheckpointError saying, in the file it is in, what does not read."""
    try:
        return read_record(meta, family_of_config(config))
    except RecordError as error:
        raise CheckpointError(f"{file}: {error}") from None


def outside(reader: FolderReader, step: Callable[[], Result]) -> Result:
    """A reader's step, its ValueError (what the folder lacks, in words) a CheckpointError naming the format."""
    try:
        return step()
    except ValueError as error:
        raise CheckpointError(f"a {reader.format} folder MemLens cannot open: {error}") from None


def read_metrics(folder: Path, optional: bool = False) -> ModelResults:
    """The folder's metrics.json as results (`optional`: a folder of another format may lack it); CheckpointError
    naming a field that does not read."""
    path = folder / "metrics.json"
    if optional and not path.exists():
        return NO_RESULTS
    try:
        return read_results(read_json_object(path))
    except ResultsError as error:
        raise CheckpointError(str(error)) from None


def optional_json(folder: Path, name: str) -> dict:
    """A JSON object a folder of another format may lack (OUTSIDE_META)."""
    return read_json_object(folder / name) if (folder / name).exists() else {}


def parameter_shapes(model: torch.nn.Module) -> dict[tuple[str, ...], tuple[int, ...]]:
    """The shape of every parameter under all its names: a tied weight (a Hugging Face model's embedding and LM
    head) has several, and the file stores it under one of them."""
    names: dict[int, list[str]] = {}
    shapes: dict[int, tuple[int, ...]] = {}
    for name, parameter in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(parameter), []).append(name)
        shapes[id(parameter)] = tuple(parameter.shape)
    return {tuple(aliases): shapes[key] for key, aliases in names.items()}


def check_weights(folder: Path, expected: dict[tuple[str, ...], tuple[int, ...]]) -> None:
    """Compare the safetensors header with the parameter shapes of the model
    the config builds, without reading the weights."""
    path = folder / "model.safetensors"
    if not path.exists():
        raise CheckpointError("model.safetensors is missing")
    try:
        with safe_open(str(path), framework="pt") as stored:
            found = {name: tuple(stored.get_slice(name).get_shape()) for name in stored.keys()}
    except Exception as error:  # safetensors raises its own error types for corrupt headers
        raise CheckpointError(f"model.safetensors cannot be read: {error}") from None
    stored = {aliases: next((name for name in aliases if name in found), None) for aliases in expected}
    missing = sorted(aliases[0] for aliases, name in stored.items() if name is None)
    if missing:
        raise CheckpointError(f"model.safetensors lacks {len(missing)} tensors, e.g. {missing[0]}")
    for aliases, shape in expected.items():
        name = stored[aliases]
        assert name is not None
        if found[name] != shape:
            raise CheckpointError(
                f"shape mismatch for {name}: file has {list(found[name])}, config implies {list(shape)}"
            )


def load_tokenizer(folder: Path, config: FamilyConfig) -> TextTokenizer:
    path = folder / "tokenizer.json"
    if not path.exists():
        raise CheckpointError("tokenizer.json is missing")
    try:
        tokenizer = TextTokenizer.load(path, (config.pad_id, config.bos_id, config.eos_id))
    except Exception as error:  # tokenizers raises a bare Exception on malformed files
        raise CheckpointError(f"tokenizer.json cannot be loaded: {error}") from None
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(
            f"tokenizer has {tokenizer.vocab_size} tokens but the model config says {config.vocab_size}"
        )
    return tokenizer


def load_checkpoint(folder: str | Path, device: torch.device | str | None = None) -> LoadedModel:
    """Load and validate a checkpoint folder; raises CheckpointError."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"{folder} is not a folder")
    device = select_device(str(device)) if device is not None else select_device()
    config, record, reader = read_config(folder)
    if reader is not None:
        model, tokenizer = outside(reader, lambda: reader.load(folder, config, device))
        return LoadedModel(folder.name, model.eval(), tokenizer, record, read_metrics(folder, optional=True))
    model = build_model(config)
    check_weights(folder, parameter_shapes(model))
    tokenizer = load_tokenizer(folder, config)
    metrics = read_metrics(folder)
    # Names, shapes and size were checked above; float16 weights become
    # float32 here, as load_state_dict casts into the float32 model.
    load_model(model, str(folder / "model.safetensors"), strict=True)
    model.to(device).eval()
    return LoadedModel(folder.name, model, tokenizer, record, metrics)


@dataclass
class RegistryEntry:
    name: str
    path: Path
    config: FamilyConfig | None = None
    record: ModelRecord = field(default_factory=ModelRecord)
    metrics: ModelResults = NO_RESULTS
    error: str | None = None  # why the entry cannot be used

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def kind(self) -> str:
        """Its family, and its variant where the family has several; "" for a broken entry."""
        return kind_of(self.config) if self.config is not None else ""


# Scans and loads run one at a time in a process, whichever registry runs them: the first of them imports a family's
# libraries (transformers for Hugging Face folders), and two threads importing transformers at once can see a
# half-imported module ("cannot import name AutoModelForCausalLM"), as two apps in one process scanning in the
# background did.
SCANS_AND_LOADS = threading.RLock()
LOADED_MODEL_BYTES = 4 * 2**30  # every shipped checkpoint loaded takes about 0.6 GB


def model_bytes(loaded: LoadedModel) -> int:
    return tensor_bytes(*loaded.model.parameters(), *loaded.model.buffers())


def is_results_collection(folder: Path) -> bool:
    """A folder of run folders at any depth (checkpoints/tasks/<run>/, checkpoints/seeds/<model>/seed_<n>/: their
    configs and metrics, the weights kept local), not a checkpoint itself."""
    return not (folder / "config.json").exists() and any(path.is_file() for path in folder.rglob("config.json"))


def model_folders(root: Path) -> list[Path]:
    """The model folders directly under `root`, by name: hidden folders and results collections left out; none
    where `root` is no folder."""
    if not root.is_dir():
        return []
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    return [folder for folder in folders if not is_results_collection(folder)]


class CheckpointRegistry:
    """All checkpoint folders under a root and any more roots (the server operator's models folders); models load
    on first use and stay loaded within a byte budget (the least recently used is dropped first). A name is a
    folder's name: the same name in two roots is listed once, and the later folder as broken, saying where.

    The scan checks every folder (a second or more with transformers to import for Hugging Face folders). With
    `scan_in_background` it runs on its own thread and the registry answers at once: `scanning` says whether it
    is still running, and whatever reads `entries` meanwhile waits for it."""

    def __init__(
        self,
        root: str | Path,
        device: torch.device | str | None = None,
        loaded_bytes: int = LOADED_MODEL_BYTES,
        more_roots: Sequence[str | Path] = (),
        scan_in_background: bool = False,
    ):
        self.root = Path(root)
        self.roots = [self.root, *(Path(more) for more in more_roots)]
        self.device = select_device(str(device)) if device is not None else select_device()
        self._loaded: ByteBudgetCache[LoadedModel] = ByteBudgetCache(
            loaded_bytes, model_bytes
        )  # the least recently used go first
        self._lock = threading.Lock()
        self._entries: dict[str, RegistryEntry] = {}
        self._scanned = threading.Event()
        self._scan_failure: BaseException | None = None
        if scan_in_background:
            threading.Thread(target=self._scan_on_thread, name="checkpoint-scan", daemon=True).start()
        else:
            self.scan()

    @property
    def entries(self) -> dict[str, RegistryEntry]:
        """Every folder found, by name; waits for a scan in the background to end. RuntimeError where it failed
        (a bug: a folder's own faults are its entry's error)."""
        self._scanned.wait()
        if self._scan_failure is not None:
            raise RuntimeError(f"the checkpoint scan failed: {self._scan_failure!r}") from self._scan_failure
        return self._entries

    @property
    def scanning(self) -> bool:
        return not self._scanned.is_set()

    def wait_for_scan(self) -> None:
        """Return once a scan in the background has ended, failed or not (a process that exits while the scan
        imports a library may abort)."""
        self._scanned.wait()

    def _scan_on_thread(self) -> None:
        try:
            self.scan()
        except BaseException as failure:  # kept for whoever reads the entries; the event must be set either way
            self._scan_failure = failure
            self._scanned.set()

    def scan(self) -> None:
        with SCANS_AND_LOADS:
            self._scan()

    def _scan(self) -> None:
        entries: dict[str, RegistryEntry] = {}
        for root in self.roots:
            for folder in model_folders(root):
                first = entries.get(folder.name)
                if first is None:
                    entries[folder.name] = self._check(folder)
                    continue
                twin = f"{folder.name}-in-{root.name}"  # listed, so the operator sees why it is not served
                entries[twin] = RegistryEntry(
                    twin, folder, error=f"{first.path} has the same name {folder.name!r}: rename one of the folders"
                )
        self._entries = entries
        self._scanned.set()

    @staticmethod
    def _check(folder: Path) -> RegistryEntry:
        entry = RegistryEntry(folder.name, folder)
        try:
            config, entry.record, reader = read_config(folder)
            entry.config = config
            if reader is not None:
                outside(reader, lambda: reader.check(folder, config))
                entry.metrics = read_metrics(folder, optional=True)
                return entry
            with torch.device("meta"):  # shapes without memory
                shapes = parameter_shapes(build_model(entry.config))
            check_weights(folder, shapes)
            entry.metrics = read_metrics(folder)
            load_tokenizer(folder, entry.config)  # a few ms: a broken tokenizer is found at start-up, not on first use
        except CheckpointError as error:
            entry.error = str(error)
        return entry

    def loaded(self) -> list[str]:
        """The models loaded now, the least recently used first."""
        return [str(name) for name in self._loaded.keys()]

    def available(self) -> list[str]:
        return [name for name, entry in self.entries.items() if entry.ok]

    def broken(self) -> dict[str, str]:
        return {name: entry.error for name, entry in self.entries.items() if entry.error is not None}

    def get(self, name: str) -> LoadedModel:
        """The loaded model; KeyError if unknown, CheckpointError if broken."""
        entry = self.entries.get(name)
        if entry is None:
            raise KeyError(name)
        if not entry.ok:
            raise CheckpointError(f"checkpoint {name!r} is unavailable: {entry.error}")
        with self._lock:
            loaded = self._loaded.get(name)
            if loaded is None:
                try:
                    with SCANS_AND_LOADS:
                        loaded = load_checkpoint(entry.path, self.device)
                except CheckpointError as error:
                    entry.error = str(error)
                    raise
                self._loaded.put(name, loaded)
            return loaded
