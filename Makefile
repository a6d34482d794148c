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
# else one line says which tests skip and how to enable them.  On $(TEST_WORKERS) pytest-xdist workers
# (--dist loadgroup, with the groups tests/conftest.py gives): the real runs (tests marked mpi, ray or slurm:
# real MPI jobs, a local Ray, steps on the one local Slurm cluster) that measure wall time against a model
# or use Slurm are one group, run one at a time on one worker, in file order; the other tests
# (in-process checks, the simulator, the command line in subprocesses: none starts MPI, Ray or a Slurm step)
# run on the other worker meanwhile, a file at a time, and so, one at a time, do the real runs that check
# outcomes only (exit codes, files and processes left, campaigns: REAL_RUNS_BESIDE in tests/conftest.py).
# A real run that holds a rate or a duration to the model's within a few per cent runs with nothing beside
# it (a file lock: TIMED_AGAINST_THE_MODEL in tests/conftest.py).
# They are safe side by side: each worker has its own tmp_path root, and the tests that look at processes
# or files (suspend, kill_tree, network namespaces) look only at their own process group or folder.
# TEST_WORKERS=0 runs everything in this one process.  CI adds PYTEST_ARGS=--durations=25 (.ci/run).
TEST_WORKERS ?= 2
test: $(VENV)/.installed pybatsim
	slurm/with-cluster.sh $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

# The suite's install-dependent part against a wheel built in a clean venv (CI runs this after `make
# test`, which has run every test from the editable install): checks that the package builds with the
# declared build requirements and that what a non-editable install lands in site-packages is complete and
# works.  What it runs is what depends on how iolab is installed, each kind once:
#   tests/test_packaging.py          every package folder, the examples and templates in the wheel, the
#                                    metadata, only iolab in site-packages, and a real run (MPI ranks
#                                    under Ray) whose ranks import the wheel's iolab, not a checkout's
#   tests/cli/test_json.py           the command line in subprocesses (python -m iolab)
#   tests/cli/test_startup.py        what a command imports at its start, in fresh interpreters (lazy imports)
#   tests/specs/test_inputs.py       the shipped examples read as package data, from another directory
#   tests/apps/test_jacobi_command.py  the MPI app's command and its calibration, as the runners start it
#   tests/batsim/test_pybatsim_round_trip.py  `iolab batsim` against pybatsim, a process of its own venv
#   tests/middleware/policies/test_shipping.py, tests/campaign/test_policy_axis.py  users' policies shipped to
#                                    Ray actors and run as Ray tasks of a campaign
#   tests/campaign/test_sweep.py     a campaign on Ray workers that import iolab from the wheel
#   tests/slurm/test_emulate_srun.py the sbatch template (package data) and the apps as Slurm steps
# Everything else imports iolab the same way from either install and ran in `make test`.
WHEEL_VENV ?= .venv-wheel
WHEEL_TESTS ?= test_packaging.py cli/test_json.py cli/test_startup.py specs/test_inputs.py \
	apps/test_jacobi_command.py batsim/test_pybatsim_round_trip.py middleware/policies/test_shipping.py \
	campaign/test_policy_axis.py campaign/test_sweep.py slurm/test_emulate_srun.py
test-wheel: pybatsim
	rm -rf build dist $(WHEEL_VENV)  # a stale build/ would put deleted modules into the wheel
	$(PYTHON) -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install -q --upgrade pip
	$(WHEEL_VENV)/bin/python -m pip wheel -q --no-deps -w dist .
	$(WHEEL_VENV)/bin/python -m pip install -q "$$(ls dist/iolab-*.whl)[test]"
	# from tests/: a process whose working directory is the repo's root would import the
	# source tree's iolab/ (which holds no sim/, apps/, ...) instead of the wheel's
	cd tests && IOLAB_TEST_WHEEL=1 ../slurm/with-cluster.sh ../$(WHEEL_VENV)/bin/pytest -c ../pyproject.toml --rootdir=.. \
		-m "not slow and not long" -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS) $(WHEEL_TESTS)

# The real traces the tests read (README.md, "Input data"): are they the files the tests were written for?
SHARED_DATA_DIR ?= $(or $(IOLAB_SHARED_DATA),../shared/data)
check-data:
	cd "$(SHARED_DATA_DIR)" && sha256sum -c "$(CURDIR)/tests/data/shared-data.sha256"

clean:
	rm -rf $(VENV) $(WHEEL_VENV) $(PYBATSIM_VENV) dist build results runs .pytest_cache
