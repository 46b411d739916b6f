"""Resource limits for a kernel: ``python -m nini.execution.limits <bytes> -- cmd...`` sets them, then execs.

jupyter_client launches kernels with ``Popen`` and offers no ``preexec_fn`` hook, and a kernel inside
bubblewrap is a grandchild we cannot reach anyway; so the limit is set by a tiny program that is
part of the kernel command and replaces itself with the real kernel (``os.execv``: same pid, the
limit is inherited, nothing stays in between). The same wrapper serves sandboxed and unsandboxed
kernels.

The limit is ``RLIMIT_AS`` (address space). It caps what a kernel can map, so a runaway allocation
fails inside the kernel with ``MemoryError`` instead of waking the OOM killer on the host. Address
space is not resident memory: allocators that reserve large ranges up front would hit it long
before the memory is used, which is why ``KERNEL_ENV`` below turns two of them down.
"""

from __future__ import annotations

import os
import resource
import sys

# Environment every kernel gets so that RLIMIT_AS measures memory, not reservations:
# - pyarrow's default pool (mimalloc) reserves about 1 GiB of address space at first use, which
#   alone broke reading a Parquet file under a 512 MiB limit and left ~200 MiB of headroom under
#   the 2 GiB default; the system allocator reserves nothing.
# - glibc gives each thread that allocates its own arena with 64 MiB of reserved address space
#   (up to 8 arenas per core), so a many-core host would spend the limit on kernel threads.
# Measured with pandas + pyarrow + matplotlib (read/write Parquet, plot, save PNG/SVG): peak
# address space 1.8 GiB by default, 0.54 GiB with both settings.
KERNEL_ENV = {"ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_ARENA_MAX": "2"}


def wrap(cmd: list[str], memory_bytes: int) -> list[str]:
    """``cmd`` prefixed with this wrapper, so that it runs under the given address-space limit."""
    return [sys.executable, "-m", "nini.execution.limits", str(int(memory_bytes)), "--", *cmd]


def apply(memory_bytes: int) -> None:
    """Lower this process's address-space limit (soft and hard: the kernel cannot raise it back)."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        sys.exit("usage: python -m nini.execution.limits <address-space-bytes> -- command [args...]")
    apply(int(argv[0]))
    os.execvp(argv[2], argv[2:])


if __name__ == "__main__":
    main(sys.argv[1:])
