import pytest

from groundsense_eval.data.ragtruth import load_ragtruth


@pytest.fixture(scope="session")
def ragtruth_test():
    """The RAGTruth test split (2,700 responses; segmenting all 17,790 with pysbd takes ~70 s)."""
    return load_ragtruth(splits={"test"})
