# The two commands: `make demo` and `make test`. Both create the environment on a fresh machine.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.fastdata-installed

.PHONY: setup demo test test-oldest lint fuzz mutants gpu-check clean

setup: $(STAMP)

$(STAMP): pyproject.toml scripts/setup_env.sh
	bash scripts/setup_env.sh $(VENV)
	touch $(STAMP)

demo: setup
	$(PY) scripts/demo.py

lint: setup
	$(VENV)/bin/ruff check .

# the suite in TEST_WORKERS processes (pytest-xdist), each test file whole in one of them (docs/testing.md)
TEST_WORKERS ?= 2

test: setup lint
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

# the suite on the oldest releases pyproject.toml admits (scripts/oldest.txt): are its lower bounds true?
OLDEST := .venv-oldest/.fastdata-installed
$(OLDEST): pyproject.toml scripts/oldest.txt scripts/setup_oldest_env.sh
	bash scripts/setup_oldest_env.sh .venv-oldest
	touch $(OLDEST)

test-oldest: $(OLDEST)
	.venv-oldest/bin/python -m pytest -q

# many more mutated inputs than `make test` runs, from a random seed (printed, to replay a finding)
fuzz: setup
	$(PY) tests/mutation_fuzz.py --cases 5000 --seed random

# mutation testing of the modules that decide correctness (docs/testing.md); mutmut is installed on first use
mutants: setup
	$(VENV)/bin/pip install -q mutmut==3.8.1
	$(PY) scripts/mutants.py

# everything that needs CUDA (tests marked gpu, images/s on the GPU); without CUDA: the CPU plumbing, then exit 0
gpu-check: setup
	$(PY) scripts/gpu_check.py

clean:
	rm -rf demo-out bench-out .pytest_cache fuzz-findings mutants
