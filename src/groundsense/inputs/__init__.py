"""What a detection reads: the answer's text and sentences (``text``), the evidence and its
chunks (``evidence``), the scorer's prompt around them (``prompt``), the checks on a request
(``validate``) and request files (``files``). The public names are this package's ``__all__``;
its modules are private."""

from typing import TYPE_CHECKING

from ..lazy import exported

if TYPE_CHECKING:
    from .evidence import Evidence, Tokenizer, build_evidence
    from .files import load_example
    from .text import Chunk, Span, segment_sentences
    from .validate import CheckedRow, check_row

__all__ = ["Span", "segment_sentences", "Chunk", "Evidence", "Tokenizer", "build_evidence", "load_example",
           "CheckedRow", "check_row"]

if not TYPE_CHECKING:  # at run time each name is imported when first used (a type checker sees the imports above)
    __getattr__ = exported(__name__, {
        "text": ["Span", "segment_sentences", "Chunk"], "evidence": ["Evidence", "Tokenizer", "build_evidence"],
        "files": ["load_example"], "validate": ["CheckedRow", "check_row"],
    })
