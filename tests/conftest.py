import pytest

from groundsense.detector import Detector
from groundsense.scorer import Scorer


@pytest.fixture(scope="session")
def scorer() -> Scorer:
    """The real embedded default scorer (SmolLM2-135M-Instruct), loaded once."""
    return Scorer()


@pytest.fixture(scope="session")
def detector(scorer) -> Detector:
    return Detector(scorer, k=5)
