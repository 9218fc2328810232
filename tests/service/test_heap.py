"""The server's heap setting (service/heap.py): glibc's thresholds fixed, unless the operator set them."""

import platform

import pytest

from groundsense.service.heap import keep_heap_returnable


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_the_thresholds_are_fixed_on_glibc():
    assert keep_heap_returnable() is True


@pytest.mark.parametrize("variable", ["MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"])
def test_what_the_operator_set_wins(monkeypatch, variable):
    monkeypatch.setenv(variable, "131072")
    assert keep_heap_returnable() is False
