"""Torch's intra-op work kept on the loader's own threads (the decode threads and the batch producer).

A torch op over more than 32,768 elements (`at::internal::GRAIN_SIZE`) runs as an OpenMP parallel region,
and on a thread that is not already inside one, OpenMP starts a thread team of `torch.get_num_threads()`
for that thread. Two decode threads flipping images and a producer normalising batches would each start
their own team: more busy threads than cores, whose waiting workers spin after every op. The loader's
threads already keep the cores busy, so their ops should run serially.

`torch.set_num_threads(1)` cannot do that: it changes the count every thread created later starts from,
the user's training threads included. OpenMP's own `omp_set_num_threads` sets the count of the calling
thread only (its `nthreads-var` is per thread), and torch reads it through `omp_get_max_threads()` once
it has set up the thread. So each loader thread calls `serial_torch()` once when it starts, which sets it in
every OpenMP runtime of the process.

Where torch was built without OpenMP, or its runtime cannot be found, nothing changes: the ops give the
same results, possibly on a thread team.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os

import torch

log = logging.getLogger(__name__)

_RUNTIMES = ("libgomp", "libiomp5", "libomp")  # GNU (PyPI's Linux wheels), Intel, LLVM


@functools.cache
def _openmp_runtimes() -> tuple[ctypes.CDLL, ...]:
    """The OpenMP runtimes mapped into this process (torch's, and any other library's, e.g. an MKL build of
    numpy bringing Intel's): each keeps its own per-thread count, and which one torch uses is not recorded."""
    if not torch._C.has_openmp:
        return ()
    try:
        with open("/proc/self/maps") as maps:  # the shared objects mapped into this process (Linux)
            paths = {line.split()[-1] for line in maps if line.rstrip().endswith(".so") or ".so." in line}
    except OSError:
        return ()
    runtimes = []
    for path in sorted(paths):
        if os.path.basename(path).startswith(_RUNTIMES):
            try:
                runtime = ctypes.CDLL(path)
                runtime.omp_set_num_threads  # noqa: B018 - the symbol must be there
            except (OSError, AttributeError) as exc:
                log.debug("OpenMP runtime %s not usable: %s", path, exc)
                continue
            runtimes.append(runtime)
    return tuple(runtimes)


def serial_torch() -> bool:
    """Make torch's ops on the calling thread run on that thread alone; True when they now do."""
    runtimes = _openmp_runtimes()
    if not runtimes:
        return False
    torch.get_num_threads()  # torch's first use on a thread sets the thread's count; ours must come after it
    for runtime in runtimes:
        runtime.omp_set_num_threads(1)
    return torch.get_num_threads() == 1
