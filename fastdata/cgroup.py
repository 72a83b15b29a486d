"""The limits a Linux cgroup puts on this process: a container's (`docker run --cpus 2 --memory 8g`), a Kubernetes
pod's, a Slurm job's. They are read from the process's cgroup and from its parents (the smallest limit holds), on
cgroup v2 (one hierarchy) and v1 (one per controller). Only files under the cgroup mount are read; a limit that
cannot be read is no limit. Used by cpus.py (the CPU quota) and memory_fit.py (the memory limit)."""

from __future__ import annotations

from pathlib import Path

MOUNT = Path("/sys/fs/cgroup")
SELF = Path("/proc/self/cgroup")


def folders(controller: str, *, mount: Path = MOUNT, membership: Path = SELF) -> list[tuple[int, Path]]:
    """(cgroup version, folder) of this process's cgroup for `controller` and of its parents, those that exist (in a
    container the mount is the container's own cgroup, and the path as the host names it does not exist there)."""
    try:
        lines = membership.read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    found = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":  # v2: one hierarchy
            found += [(2, folder) for folder in _upward(mount, path)]
        elif controller in controllers.split(","):  # v1: the hierarchy the controller is mounted on
            base = mount / controllers if (mount / controllers).is_dir() else mount / controller
            found += [(1, folder) for folder in _upward(base, path)]
    return found


def _upward(base: Path, path: str) -> list[Path]:
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    candidates = [base.joinpath(*parts[:n]) for n in range(len(parts), -1, -1)]
    return [f for f in candidates if f.is_dir()]


def read_int(path: Path) -> int | None:
    """The integer in file `path`; None when it holds another word (`max`), or cannot be read."""
    try:
        return int(path.read_text().strip())
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def read_text(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return ""
