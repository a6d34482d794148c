"""A 2-D 5-point Jacobi solver for the Laplace equation, block-decomposed over MPI ranks.

The global problem is an ``n x n`` grid of unknowns surrounded by a ring of
fixed boundary values: the top edge holds ``TOP`` (1.0), the three other edges
0.  One sweep replaces every unknown by the mean of its four neighbours::

    new[i, j] = 0.25 * (u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1])

The ranks form a ``dims[0] x dims[1]`` Cartesian grid (``MPI.Compute_dims``);
each owns a contiguous block of rows and columns and keeps it in a local array
with one ghost cell on each side.  Before every sweep the ghost cells facing a
neighbour are refreshed by a halo exchange (non-blocking sends and receives on
contiguous numpy buffers); ghost cells on the global boundary hold the fixed
boundary values and are never overwritten.

The operations are done in the same order as the serial formula above, so a
distributed run gives bit-for-bit the serial result.

Every helper takes the communicator as an argument; waits go through a
``waiter`` callable (default ``MPI.Request.Waitall``) so that the caller can
watch for failures of other ranks while it waits (see :mod:`iolab.apps.failure`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from mpi4py import MPI

TOP = 1.0

Waiter = Callable[[Sequence[MPI.Request]], None]


def split(n: int, parts: int, index: int) -> tuple[int, int]:
    """Rows ``[start, stop)`` of block ``index`` when ``n`` rows go to ``parts`` blocks.

    The first ``n % parts`` blocks get one row more.
    """
    base, extra = divmod(n, parts)
    start = index * base + min(index, extra)
    return start, start + base + (1 if index < extra else 0)


def decomposition(n: int, size: int) -> list[int]:
    """The ``dims`` of the rank grid for ``size`` ranks; ``ValueError`` if a block would be empty."""
    dims = MPI.Compute_dims(size, 2)
    if n < max(dims):
        raise ValueError(
            f"--grid {n} is too small for {size} ranks laid out as {dims[0]}x{dims[1]}: "
            f"every rank needs at least one row and one column (use --grid >= {max(dims)})"
        )
    return list(dims)


def serial_initial(n: int) -> np.ndarray:
    """The full ``(n+2) x (n+2)`` array with boundary values and a zero interior."""
    u = np.zeros((n + 2, n + 2))
    u[0, :] = TOP
    return u


@dataclass
class Block:
    """This rank's share of the grid and its neighbours in the rank grid."""

    n: int
    dims: tuple[int, int]
    coords: tuple[int, int]
    rows: tuple[int, int]  # global interior rows [start, stop)
    cols: tuple[int, int]
    up: int
    down: int
    left: int
    right: int

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows[1] - self.rows[0], self.cols[1] - self.cols[0])


class Jacobi:
    """The local state of one rank: two ``(rows+2) x (cols+2)`` arrays swapped every sweep."""

    def __init__(self, comm: MPI.Comm, n: int, waiter: Waiter | None = None):
        dims = decomposition(n, comm.Get_size())
        self.cart = comm.Create_cart(dims, periods=[False, False], reorder=False)
        coords = tuple(self.cart.Get_coords(self.cart.Get_rank()))
        up, down = self.cart.Shift(0, 1)
        left, right = self.cart.Shift(1, 1)
        self.block = Block(
            n=n,
            dims=(dims[0], dims[1]),
            coords=(coords[0], coords[1]),
            rows=split(n, dims[0], coords[0]),
            cols=split(n, dims[1], coords[1]),
            up=up,
            down=down,
            left=left,
            right=right,
        )
        self.wait: Waiter = waiter or MPI.Request.Waitall
        nr, nc = self.block.shape
        self.u = np.zeros((nr + 2, nc + 2))
        if up == MPI.PROC_NULL:
            self.u[0, :] = TOP
        self.new = self.u.copy()
        self.sweeps = 0
        # contiguous buffers for the two ghost columns
        self._send_l = np.empty(nr)
        self._send_r = np.empty(nr)
        self._recv_l = np.empty(nr)
        self._recv_r = np.empty(nr)

    # -- state -----------------------------------------------------------------
    @property
    def interior(self) -> np.ndarray:
        """This rank's unknowns (a view, ``rows x cols``)."""
        return self.u[1:-1, 1:-1]

    def load(self, interior: np.ndarray, sweeps: int) -> None:
        """Restore this rank's unknowns (from a checkpoint) and the sweep count."""
        if interior.shape != self.block.shape:
            raise ValueError(f"checkpoint block has shape {interior.shape}, this rank owns {self.block.shape}")
        self.u[1:-1, 1:-1] = interior
        self.new[1:-1, 1:-1] = interior
        self.sweeps = int(sweeps)

    # -- communication -----------------------------------------------------------
    def exchange_halo(self) -> None:
        """Refresh the ghost cells that face a neighbouring rank."""
        b, u, cart = self.block, self.u, self.cart
        reqs = []
        # rows are contiguous slices of a C-ordered array: send and receive in place
        if b.up != MPI.PROC_NULL:
            reqs.append(cart.Irecv(u[0, 1:-1], source=b.up, tag=1))
            reqs.append(cart.Isend(u[1, 1:-1], dest=b.up, tag=0))
        if b.down != MPI.PROC_NULL:
            reqs.append(cart.Irecv(u[-1, 1:-1], source=b.down, tag=0))
            reqs.append(cart.Isend(u[-2, 1:-1], dest=b.down, tag=1))
        if b.left != MPI.PROC_NULL:
            self._send_l[:] = u[1:-1, 1]
            reqs.append(cart.Irecv(self._recv_l, source=b.left, tag=3))
            reqs.append(cart.Isend(self._send_l, dest=b.left, tag=2))
        if b.right != MPI.PROC_NULL:
            self._send_r[:] = u[1:-1, -2]
            reqs.append(cart.Irecv(self._recv_r, source=b.right, tag=2))
            reqs.append(cart.Isend(self._send_r, dest=b.right, tag=3))
        if reqs:
            self.wait(reqs)
        if b.left != MPI.PROC_NULL:
            u[1:-1, 0] = self._recv_l
        if b.right != MPI.PROC_NULL:
            u[1:-1, -1] = self._recv_r

    # -- computation ---------------------------------------------------------------
    def sweep(self, count: int = 1) -> None:
        """Do ``count`` Jacobi sweeps (each one a halo exchange and an update)."""
        for _ in range(count):
            self.exchange_halo()
            u, new = self.u, self.new
            out = new[1:-1, 1:-1]
            # same association as 0.25 * (a + b + c + d): ((a + b) + c) + d
            np.add(u[:-2, 1:-1], u[2:, 1:-1], out=out)
            out += u[1:-1, :-2]
            out += u[1:-1, 2:]
            out *= 0.25
            self.u, self.new = new, u
            self.sweeps += 1

    def residual(self) -> float:
        """Max-norm of the discrete Laplace residual ``4u - neighbours`` over the whole grid."""
        self.exchange_halo()
        u = self.u
        r = 4.0 * u[1:-1, 1:-1] - (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        local = np.array([np.abs(r).max() if r.size else 0.0])
        total = np.empty(1)
        self.wait([self.cart.Iallreduce(local, total, op=MPI.MAX)])
        return float(total[0])

    def gather(self, root: int = 0) -> np.ndarray | None:
        """The full ``n x n`` interior on ``root`` (``None`` elsewhere). For small grids: pickles blocks."""
        parts = self.cart.gather((self.block.rows, self.block.cols, self.interior.copy()), root=root)
        if parts is None:
            return None
        full = np.empty((self.block.n, self.block.n))
        for (r0, r1), (c0, c1), data in parts:
            full[r0:r1, c0:c1] = data
        return full


def serial_sweeps(n: int, sweeps: int) -> np.ndarray:
    """Reference: ``sweeps`` Jacobi sweeps on one process; returns the ``n x n`` interior."""
    u = serial_initial(n)
    new = u.copy()
    for _ in range(sweeps):
        new[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        u, new = new, u
    return u[1:-1, 1:-1].copy()
