"""The terminal view of a detection: sentences coloured by score, flags, and support."""

from __future__ import annotations

import re

from rich.console import Console
from rich.text import Text

from ..result import DetectionResult, SentenceResult

EXCERPT = 160
# Control characters (ESC starts a terminal escape sequence) and the bidirectional
# overrides and isolates that reorder what a reader sees: never sent to the terminal raw.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with each control character shown as an escape (ESC as ``\\x1b``)."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _style(sentence: SentenceResult) -> str:
    if sentence.status != "scored":
        return "dim italic"
    if sentence.flagged:
        return "bold red"
    if sentence.flagged is None:
        return "yellow" if (sentence.score or 0) > 0 else "default"
    return "green"


def _mark(sentence: SentenceResult) -> str:
    if sentence.status != "scored":
        return "? unscored  "
    return {True: "✗ UNSUPPORTED", False: "✓ supported ", None: "· not judged"}[sentence.flagged]


class _View(Console):
    def on_broken_pipe(self) -> None:
        """The reader closed the pipe: the root group exits 141 (rich's own exit is 1, a verdict's code)."""
        self.quiet = True
        raise BrokenPipeError


def terminal() -> Console:
    """The view's console: wrapped to a terminal's width; piped, each line whole (for grep and friends)."""
    console = _View()
    console.soft_wrap = not console.is_terminal
    return console


def render(result: DetectionResult, console: Console) -> None:
    render_header(result.scorer, result.mode, result.leave_one_out, result.score_rule, result.threshold, console)
    for s in result.sentences:
        render_sentence(s, result.cascade, console)
    render_summary(result, console)


def render_header(scorer: str, mode: str, leave_one_out: str | None, score_rule: str, threshold: float | None,
                  console: Console) -> None:
    """The line that says how the answer is judged."""
    flag = "uncalibrated: nothing flagged" if threshold is None else f"flag at score ≥ {threshold:.3f}"
    mode += " (masked leave-one-out)" if leave_one_out == "masked" else ""
    console.print(Text(f"scorer {scorer} · mode {mode} · score {score_rule} · {flag}", style="dim"))


def render_sentence(s: SentenceResult, cascade: dict | None, console: Console) -> None:
    """One sentence's verdict, score and support (or why it has none)."""
    line = Text()
    line.append(f"[{s.index}] {_mark(s)} ", style=_style(s))
    line.append("score " + ("   n/a " if s.score is None else f"{s.score:+7.3f}") + "  ", style="dim")
    line.append(printable(s.text), style=_style(s))
    console.print(line)
    if s.verifier_score is not None:  # a cascade's: its record (or description) names the verifier
        verifier = f" {cascade['verifier']}" if cascade else ""
        console.print(Text(f"      verifier{verifier}: "
                           f"P(unsupported) {s.verifier_score:.3f} decides the flag",
                           style="blue"))
    if s.explanation:
        console.print(Text(f"      {printable(s.explanation)}", style="red" if s.flagged else "dim"))
    if s.reason:
        console.print(Text(f"      {s.reason}", style="dim"))
    elif s.support is None:
        console.print(Text("      no support: removing no chunk lowers this sentence's likelihood", style="magenta"))
    else:
        excerpt = printable(" ".join(s.support.text.split()))
        excerpt = excerpt if len(excerpt) <= EXCERPT else excerpt[: EXCERPT - 1] + "…"
        where = f"passage {s.support.passage}" if s.support.passage is not None else f"chunk {s.support.chunk}"
        console.print(Text(f"      support: {where} (drop {s.support.drop:+.3f}): {excerpt}", style="cyan"))


def answer_score_name(result: DetectionResult) -> str:
    """What ``answer.score`` is: a fused cascade's mean of its two highest fused scores, the fused
    score's length-aware noisy-OR of its sentences, or the most suspicious sentence's score."""
    if any(s.fused is not None for s in result.sentences):
        return "mean of its two highest fused scores"
    return "length-aware noisy-OR of its sentences" if result.score_rule == "fused" else "most suspicious sentence"


def render_summary(result: DetectionResult, console: Console) -> None:
    """The answer's verdict, warnings and what was cut."""
    a = result.answer
    if a.flagged is None:
        verdict = "not judged"
    elif a.threshold is None:
        verdict = "has unsupported sentences" if a.flagged else "all sentences supported"
    else:  # the answer threshold decides, on the answer's score (docs/output.md)
        on = answer_score_name(result)
        reached = a.score is not None and a.score >= a.threshold
        compared = f"{on} {a.score:+.3f} {'≥' if reached else '<'} answer threshold {a.threshold:.3f}" \
            if a.score is not None else f"answer threshold {a.threshold:.3f}"
        # a fused answer is flagged by a flagged sentence too, whatever its noisy-OR
        verdict = f"flagged ({compared})" if a.flagged and reached else \
            f"flagged (a sentence is flagged; {compared})" if a.flagged else f"passes ({compared})"
    gap = "n/a" if a.gap is None else f"{a.gap:+.3f}"
    counts = f"{a.n_flagged} of {a.n_sentences} sentences flagged, {a.n_unscored} unscored"
    console.print(Text(f"answer: {verdict} · {counts} · mean gap {gap}", style="bold"))
    for warning in result.warnings:
        console.print(Text(f"warning: {warning}", style="bold yellow"))
    t = result.truncated
    if t.context:
        console.print(Text(f"note: {t.context_tokens_removed} context tokens were cut to fit the scorer's budget",
                           style="yellow"))
    if t.answer:
        console.print(Text(f"note: {t.answer_tokens_unscored} answer tokens past the cap were not scored",
                           style="yellow"))
