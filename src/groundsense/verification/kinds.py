"""Verifiers by spec string: ``KIND:MODEL``, e.g. ``judge:qwen2.5-coder-1.5b-instruct``.

A kind's module (and what it needs: torch, transformers) is imported only when a verifier
of that kind is asked for. Other distributions add kinds through the ``groundsense.verifiers``
entry point (:data:`GROUP`): its name is the kind, its object a :class:`ModelVerifier` subclass
whose ``kind`` is that name (docs/verifiers.md, "A verifier of your own")."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING

from ..config import DetectorConfig
from ..errors import InputError
from .model import ModelVerifier

if TYPE_CHECKING:
    from ..scorer import Scorer

KINDS = {  # kind -> (module of this package, class)
    "judge": ("judge", "JudgeVerifier"),
    "nli": ("seqclf", "NLIVerifier"),
    "minicheck": ("seqclf", "MiniCheckVerifier"),
    "alignscore": ("seqclf", "AlignScoreVerifier"),
    "contextcite": ("contextcite", "ContextCiteVerifier"),
    "openai": ("openai_judge", "OpenAIVerifier"),
}
ON_SCORER = ("judge", "contextcite")  # kinds that run on a scorer, so may take the detector's loaded one
SPEC_HELP = (
    "judge:<scorer>, contextcite:<scorer> (a built-in scorer, local directory or Hugging Face id), "
    "nli:<id or path>, minicheck:<id or path>, alignscore:<id or path>, "
    "openai:<model> (a judge behind an OpenAI-compatible server: --verifier-url URL or $GROUNDSENSE_VERIFIER_URL)"
)
GROUP = "groundsense.verifiers"  # the entry point through which other distributions add verifier kinds


def installed_kinds() -> dict[str, EntryPoint]:
    """The verifier kinds installed distributions add (:data:`GROUP` entry points), by kind; a
    built-in kind of :data:`KINDS` keeps its name."""
    return {point.name: point for point in entry_points(group=GROUP) if point.name not in KINDS}


def verifier_class(kind: str) -> type[ModelVerifier]:
    """The class of a verifier kind, built in (:data:`KINDS`) or installed (:func:`installed_kinds`),
    its module imported now; an unknown kind, or an entry point that does not give a
    :class:`ModelVerifier` subclass of that kind, is an :class:`InputError` that says so."""
    if kind in KINDS:
        module, name = KINDS[kind]
        built_in: type[ModelVerifier] = getattr(import_module(f".{module}", __package__), name)
        return built_in
    installed = installed_kinds()
    if kind not in installed:
        raise InputError(f"unknown verifier kind {kind!r}: use {spec_help(installed)}")
    return _installed_class(kind, installed[kind])


def _installed_class(kind: str, point: EntryPoint) -> type[ModelVerifier]:
    """The class an installed kind's entry point gives, checked: a :class:`ModelVerifier`
    subclass whose ``kind`` is the entry point's name."""
    where = f"the {GROUP} entry point {kind!r} ({point.value})"
    try:
        cls = point.load()
    except Exception as exc:  # the plugin's own import error, whatever it is
        raise InputError(f"{where} fails to import ({type(exc).__name__}: {exc}): reinstall the package that "
                         "provides it") from exc
    if not (isinstance(cls, type) and issubclass(cls, ModelVerifier)):
        raise InputError(f"{where} is not a groundsense.verification.ModelVerifier subclass")
    if getattr(cls, "kind", None) != kind:
        raise InputError(f"{where} is a verifier of kind {getattr(cls, 'kind', None)!r}: its class's kind must be "
                         "the entry point's name, which is what --verifier names and a cascade reports")
    return cls


def spec_help(installed: Mapping[str, EntryPoint]) -> str:
    """The specs a user may give: the built-in kinds', then the installed ones'."""
    return ", ".join([SPEC_HELP, *(f"{kind}:<model> (from {point.value})" for kind, point in installed.items())])


def parse_options(kind: type[ModelVerifier], options: Mapping[str, str]) -> dict:
    """``NAME=VALUE`` strings as the verifier's typed keyword arguments."""
    parsed = {}
    for name, value in options.items():
        if name not in kind.options:
            raise InputError(f"{kind.kind} has no option {name!r}; its options: {', '.join(kind.options) or 'none'}")
        try:
            parsed[name] = convert(kind.options[name], value)
        except ValueError as exc:
            expected = "true or false" if kind.options[name] is bool else kind.options[name].__name__
            raise InputError(f"option {name}={value!r}: expected {expected}") from exc
    return parsed


def convert(option_type: type, value: str) -> object:
    """``value`` as ``option_type``; a ``bool`` option reads true/false, 1/0, yes/no (``bool("false")``
    would be True)."""
    if option_type is not bool:
        return option_type(value)
    words = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
    word = str(value).strip().lower()
    if word not in words:
        raise ValueError(value)
    return words[word]


def parse_spec(spec: str) -> tuple[type[ModelVerifier], str]:
    """The verifier class and the model of a ``KIND:MODEL`` spec; the installed kinds are looked
    up only for a kind that is not built in."""
    kind, _, model = spec.partition(":")
    if model and kind in KINDS:
        return verifier_class(kind), model
    installed = installed_kinds()
    if not model or kind not in installed:
        raise InputError(f"unknown verifier {spec!r}: use {spec_help(installed)}")
    try:
        return _installed_class(kind, installed[kind]), model
    except InputError as exc:
        raise InputError(f"verifier {spec!r}: {exc}") from exc


def make_verifier(spec: str, options: Mapping[str, str] | None = None, device: str | None = None,
                  precision: str = "auto") -> ModelVerifier:
    """The verifier a spec names, with ``options`` (strings, as from the command line); a kind
    that runs on a scorer (:data:`ON_SCORER`) loads it at ``precision``."""
    cls, model = parse_spec(spec)
    return build_verifier(cls, model, device, precision, parse_options(cls, options or {}))


def build_verifier(cls: type[ModelVerifier], model: Scorer | str, device: str | None, precision: str,
                   options: Mapping[str, object]) -> ModelVerifier:
    """``cls`` on ``model`` (a name, or a loaded scorer for the :data:`ON_SCORER` kinds) with its
    typed ``options``; ``precision`` goes to the kinds that load a scorer, the others load their own
    model as they always do."""
    on_scorer = {"precision": precision} if cls.kind in ON_SCORER else {}
    return cls(model, device=device, **on_scorer, **options)


def check_verifier(config: DetectorConfig) -> tuple[type[ModelVerifier], str, dict] | None:
    """The class, model and typed keyword arguments (its ``verifier_url`` as ``url``) of the verifier ``config``
    names, or None when it names none; an unknown kind, or a URL given to a kind that calls no
    server, is refused before any model loads (:func:`~groundsense.verification.factory.prepare_detection`
    calls it first)."""
    if config.verifier is None:
        return None
    cls, model = parse_spec(config.verifier)
    options = {} if config.verifier_url is None else {"url": config.verifier_url}
    if options and "url" not in cls.options:
        raise InputError(f"verifier_url (--verifier-url) is for a verifier that calls a server; {cls.kind}: runs "
                         "here, so leave the URL out")
    return cls, model, parse_options(cls, options)
