# The two quick-start commands (see README.md): `make run` and `make test`.
# Both create .venv on first use and install iolab into it.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: run test install clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

run: $(VENV)/.installed
	$(VENV)/bin/iolab emulate

test: $(VENV)/.installed
	$(PY) -m pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) results runs .pytest_cache
