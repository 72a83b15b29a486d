# The two commands: `make demo` and `make test`. Both create the environment on a fresh machine.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.fastdata-installed

.PHONY: setup demo test lint clean

setup: $(STAMP)

$(STAMP): pyproject.toml scripts/setup_env.sh
	bash scripts/setup_env.sh $(VENV)
	touch $(STAMP)

demo: setup
	$(PY) scripts/demo.py

lint: setup
	$(VENV)/bin/ruff check .

test: setup lint
	$(PY) -m pytest -q

clean:
	rm -rf demo-out bench-out .pytest_cache
