"""iolab: a testbed for I/O- and storage-aware scheduling on HPC systems.

The package is laid out in layers; an import goes down, never up (tests/test_layers.py):

* bottom: what every runtime shares — the input specs (``iolab.specs``), quantities with
  units (``iolab.units``), traces (``iolab.trace``), metrics (``iolab.metrics``), the
  I/O plan, atomic files, errors, invariants and signals;
* runtimes: the pure policies (``iolab.middleware.policies``), the simulator
  (``iolab.sim``), the MPI application (``iolab.apps``), the Ray control plane
  (``iolab.middleware``) and the orchestrator of real runs (``iolab.emulator``);
* front: the command line (``iolab.cli``), the papers' studies (``iolab.studies``),
  campaigns (``iolab.campaign``) and figures (``iolab.plots``).
"""

__version__ = "0.1.0"
