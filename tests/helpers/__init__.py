"""Code the tests share, imported as ``helpers.NAME`` (``pythonpath = ["tests"]`` in
pyproject.toml), so a test file collects alone, in any order and under any import mode. A test
module imports no other test module; ``tests/test_layers.py`` checks it."""
