"""Pydantic AI: :class:`GroundsenseOutputValidator`, a grounding guardrail for agents
(``pip install 'groundsense[pydantic-ai]'``)::

    agent = Agent(model, tools=[retrieve])
    agent.output_validator(GroundsenseOutputValidator())

On the run's final text output it scores the answer against the evidence with the shared
detection call (:mod:`groundsense.integrations.common`). An answer that passes (every sentence
judged supported) is returned unchanged; any other raises ``ModelRetry`` with feedback naming
each sentence not judged supported, so that the model revises it. When the agent's output
retries are spent (1 by default; ``Agent(retries={"output": n})``) the run raises
``UnexpectedModelBehavior``: an unsupported answer never comes out of the run.

**Evidence.** By default, what this run's tools returned: the successful tool returns
(``ToolReturnPart``) among the run's messages (``ctx.messages`` from ``ctx.run_id``; earlier
runs' retrievals in the message history answered other prompts and are left out). A return may
be a string, a list of strings or documents, or one document, as
:func:`~groundsense.integrations.common.evidence_texts` reads them; a passage returned more than
once counts once (agents retrieve again after a retry, and a repeated passage would hide its own
leave-one-out drop). Where the tools returned one string (however often), it is a context, split
into K chunks as every entry point splits one. ``evidence=`` replaces this
with a function of the ``RunContext`` that returns the passages (e.g.
``lambda ctx: ctx.deps.passages``); use it too when the agent has tools whose returns are not
passages, or to include earlier runs' retrievals.

**Question.** The run's user prompt (its text parts).

**No evidence fails closed**, in the way that can be fixed:

- no passage with text among this run's tool returns raises ``ModelRetry`` telling the model to
  call its retrieval tool first: the model can fix that, and a retry costs one model call;
- no passage with text from ``evidence=`` raises :class:`~groundsense.errors.InputError`, which
  stops the run: the model cannot change what the application gives it, so retrying would spend
  model calls and end in a retries error that hides the cause.

An empty text output raises ``ModelRetry``; a non-text output raises ``InputError`` (the
validator checks text outputs only). Partial outputs, which a streamed run validates as the text grows, \
are returned unchanged: the final
output is the one checked. Scoring runs in a worker thread, so the event loop keeps running.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.messages import TextContent, ToolReturnPart, UserContent

from ..detection import Detection
from ..errors import InputError
from ..inputs.text import is_blank
from .common import DeprecatedDetectorAttribute, acheck, detection_argument, evidence_texts

__all__ = ["GroundsenseOutputValidator"]

RETRIEVE_FIRST = ("No passages were retrieved in this run, so nothing supports the answer: call the retrieval "
                  "tool first and answer only from the passages it returns.")
EMPTY = "The answer is empty: answer the question from the retrieved passages."
REVISE = ("The answer is not supported by the retrieved passages. Rewrite it so that every sentence is supported "
          "by them: correct or remove the sentences below.")


class GroundsenseOutputValidator:
    """An output validator that makes the agent retry until its answer is grounded in the evidence.

    ``evidence``: a function of the ``RunContext`` returning the passages; by default the
    returns of this run's tools (see the module's docstring).
    ``detection``: a calibrated :class:`~groundsense.detection.Detection` (a ``Detector``, a
    ``Cascade``); by default the embedded scorer, loaded once per process. ``detector``: its
    deprecated old name.
    """

    detector = DeprecatedDetectorAttribute()

    def __init__(self, *, evidence: Callable[[RunContext[Any]], Any] | None = None,
                 detection: Detection | None = None, detector: Detection | None = None) -> None:
        self.evidence = evidence
        self.detection = detection_argument(detection, detector, "GroundsenseOutputValidator()")

    async def __call__(self, ctx: RunContext[Any], output: Any) -> Any:
        if ctx.partial_output:
            return output
        if not isinstance(output, str):
            raise InputError(f"GroundsenseOutputValidator checks text outputs, not {type(output).__name__}")
        if is_blank(output):  # the model can fix this one
            raise ModelRetry(EMPTY)
        report = await acheck(output, self._evidence(ctx), _prompt_text(ctx.prompt), self.detection)
        if not report.passing:
            raise ModelRetry(f"{REVISE}\n{report.feedback}")
        return output

    def _evidence(self, ctx: RunContext[Any]) -> str | list[str]:
        """The evidence: one string (a context, split into K chunks), or the passages."""
        if self.evidence is None:
            evidence = _tool_evidence(ctx)
        else:
            sources = self.evidence(ctx)
            evidence = [] if sources is None else sources if isinstance(sources, str) else evidence_texts(sources)
        if all(is_blank(passage) for passage in ([evidence] if isinstance(evidence, str) else evidence)):
            if self.evidence is None:
                raise ModelRetry(RETRIEVE_FIRST)
            raise InputError("the evidence function returned no passage with text: nothing can support the answer")
        return evidence


def _tool_evidence(ctx: RunContext[Any]) -> str | list[str]:
    """What this run's tools returned: one string where every return is that string (a context),
    else the passages, a list return giving one per element; a passage returned again (after a
    retry, say) counts once."""
    returns = [part.content for message in ctx.messages if message.kind == "request" and message.run_id == ctx.run_id
               for part in message.parts if isinstance(part, ToolReturnPart) and part.outcome == "success"]
    first = returns[0] if returns else None
    if isinstance(first, str) and all(content == first for content in returns):
        return first
    items = [item for content in returns for item in (content if isinstance(content, (list, tuple)) else [content])]
    try:
        return list(dict.fromkeys(evidence_texts(items)))
    except InputError as exc:
        raise InputError(f"a tool of this run returned no passages ({exc}): where the agent has tools whose returns "
                         "are not passages, give GroundsenseOutputValidator(evidence=lambda ctx: ...)") from exc


def _prompt_text(prompt: str | Sequence[UserContent] | None) -> str:
    if prompt is None or isinstance(prompt, str):
        return prompt or ""
    return "\n".join(item if isinstance(item, str) else item.content
                     for item in prompt if isinstance(item, (str, TextContent)))
