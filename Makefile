# The two quick-start commands (see README.md): `make run` and `make test`.
# Both create .venv on first use and install iolab into it.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: run test test-wheel install clean check-data pybatsim

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed pybatsim

# pybatsim 3.2.1 from PyPI, the Batsim client tests/batsim run iolab against: it pins pyzmq<23, which has no wheel
# for Python 3.11 and does not build, so it goes into a venv of its own, without its pins and with the ones that
# work (docs/batsim.md).  Where it cannot be installed (no network) the tests that need it skip, saying so.
PYBATSIM_VENV ?= .venv-pybatsim
$(PYBATSIM_VENV)/.installed:
	@$(PYTHON) -m venv $(PYBATSIM_VENV) && \
	$(PYBATSIM_VENV)/bin/python -m pip install -q --no-deps pybatsim==3.2.1 && \
	$(PYBATSIM_VENV)/bin/python -m pip install -q "pyzmq>=25" docopt "procset<2" "sortedcontainers<3" && \
	touch $@ || { rm -rf $(PYBATSIM_VENV); echo "pybatsim: could not be installed; the tests that run it will skip"; }

pybatsim: $(PYBATSIM_VENV)/.installed

run: $(VENV)/.installed
	$(VENV)/bin/iolab emulate

# What CI runs: with the local Slurm up when this machine can run one (root, apt),
# else one line says which tests skip and how to enable them.
test: $(VENV)/.installed pybatsim
	slurm/with-cluster.sh $(PY) -m pytest $(PYTEST_ARGS)

# The suite against a wheel built in a clean venv (CI runs this after `make test`):
# checks that the package builds with the declared build requirements and that
# what a non-editable install lands in site-packages is complete. It leaves out the
# tests marked `long` (real runs of about 8 s or more; `make test` runs them): the shorter
# real runs already start MPI jobs, Ray actors, Slurm steps and the CLI from the wheel,
# and running the long ones twice cost CI ~5 minutes of its 30. It also leaves out
# tests/policies, tests/references, tests/fuzz, tests/sim, tests/batch and tests/gym: mostly in-process
# checks of pure code and of the simulator (and of the scripts in benchmarks/, which are not
# installed) that import iolab the same way from either install; the command line, the real
# runs and the studies are run from the wheel by the other folders, and
# tests/test_packaging.py checks that every package folder and the shipped examples and
# templates are in the wheel.
WHEEL_VENV ?= .venv-wheel
test-wheel: pybatsim
	rm -rf build dist $(WHEEL_VENV)  # a stale build/ would put deleted modules into the wheel
	$(PYTHON) -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install -q --upgrade pip
	$(WHEEL_VENV)/bin/python -m pip wheel -q --no-deps -w dist .
	$(WHEEL_VENV)/bin/python -m pip install -q "$$(ls dist/iolab-*.whl)[test]"
	# from tests/: a process whose working directory is the repo's root would import the
	# source tree's iolab/ (which holds no sim/, apps/, ...) instead of the wheel's
	cd tests && IOLAB_TEST_WHEEL=1 ../slurm/with-cluster.sh ../$(WHEEL_VENV)/bin/pytest -c ../pyproject.toml --rootdir=.. -m "not slow and not long" --ignore=policies --ignore=references --ignore=fuzz --ignore=sim --ignore=batch --ignore=gym $(PYTEST_ARGS) .

# The real traces the tests read (README.md, "Input data"): are they the files the tests were written for?
SHARED_DATA_DIR ?= $(or $(IOLAB_SHARED_DATA),../shared/data)
check-data:
	cd "$(SHARED_DATA_DIR)" && sha256sum -c "$(CURDIR)/tests/data/shared-data.sha256"

clean:
	rm -rf $(VENV) $(WHEEL_VENV) $(PYBATSIM_VENV) dist build results runs .pytest_cache
