import pytest

from groundsense.eval.ragtruth import load_ragtruth


@pytest.fixture(scope="session")
def ragtruth_all():
    """Every RAGTruth response (reads the whole file once, ~3 s)."""
    return load_ragtruth()
