"""The rules every loader's options dataclass checks the same way: how a refused value is reported, the seed, and
the on/off flags (a string such as "no" is truthy, so `shuffle="no"` would shuffle: flags take True or False)."""

from __future__ import annotations


def refused(name: str, value: object, allowed: str, *, cut: int | None = None) -> ValueError:
    """The error for option `name` given `value`, saying what it must be; with `cut`, the value's repr cut to that many
    characters (an option holding a million numbers is not printed)."""
    text = repr(value)
    if cut is not None and len(text) > cut:
        text = text[:cut - 3] + "..."
    return ValueError(f"{name}={text} is not allowed; {name} must be {allowed}")


def check_seed(seed: object) -> None:
    """A seed is an integer >= 0 (the order's random streams are keyed by it)."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise refused("seed", seed, "an integer >= 0")


def check_flag(name: str, value: object, *, none: str | None = None) -> None:
    """`value` is True or False; or None too, when `none` says what None means."""
    if isinstance(value, bool) or (none is not None and value is None):
        return
    raise refused(name, value, f"None ({none}), True or False" if none is not None else "True or False")
