"""What a detection reads: the answer's text and sentences (``text``), the evidence and its
chunks (``evidence``), the scorer's prompt around them (``prompt``), the checks on a request
(``validate``) and request files (``files``)."""
