"""iolab: a testbed for I/O- and storage-aware scheduling on HPC systems.

The package ``iolab`` holds what every runtime shares: the input specs, the
trace file, the metrics and the command line.  The policies live in
``iolab.middleware.policies`` (pure Python), the time-stepped simulator in ``sim``,
the Ray control plane in ``middleware``, the MPI application in ``apps`` and the
orchestrator of real runs in ``emulator``.
"""

__version__ = "0.1.0"
