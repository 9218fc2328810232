"""Errors a caller can act on. The CLI turns each into a message and exit code 2."""

__all__ = [
    "GroundsenseError", "InputError", "ScorerUnavailable", "VerifierUnavailable", "VerifierError", "EngineUnavailable",
    "Cancelled",
]


class GroundsenseError(Exception):
    """Base class: the message says what went wrong and what to do."""


class InputError(GroundsenseError, ValueError):
    """The question, evidence or answer cannot be scored as given."""


class ScorerUnavailable(GroundsenseError):
    """The scorer is unknown or its weights are not installed."""


class VerifierUnavailable(GroundsenseError):
    """A verifier's model cannot be loaded, or does not fit the verifier."""


class VerifierError(GroundsenseError):
    """A verifier could not score: its server was unreachable, refused the request,
    timed out or replied with something unreadable. Never a score."""


class EngineUnavailable(GroundsenseError):
    """The Ray engine's runtime did not start here, or its cluster could not be joined."""


class Cancelled(Exception):
    """The caller stopped waiting (a service request past its timeout); the work was dropped."""
