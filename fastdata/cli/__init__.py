"""The `fastdata` command: one module per subcommand, registered here by name."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import select
import sys

from fastdata import __version__
from fastdata.errors import FastdataError

# subcommand -> module with `add_parser(subparsers)` and `run(args) -> int`
COMMANDS: dict[str, str] = {
    "convert": "fastdata.cli.convert",
    "index": "fastdata.cli.index",
    "info": "fastdata.cli.info",
    "verify": "fastdata.cli.verify",
    "bench": "fastdata.cli.bench",
    "doctor": "fastdata.cli.doctor",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fastdata", description="Pack datasets into shards and load them fast.")
    parser.add_argument("--version", action="version", version=f"fastdata {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS.values():
        importlib.import_module(module).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING if args.verbose == 0 else logging.INFO if args.verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    try:
        return importlib.import_module(COMMANDS[args.command]).run(args)
    except (FastdataError, ValueError) as exc:
        print(f"fastdata {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a read-only destination, a full disk, a vanished file: one line, not a traceback
        if isinstance(exc, BrokenPipeError) and _reader_gone():
            return 141  # `fastdata info DS | head`: the reader had its lines; quiet, as a shell's SIGPIPE exit is
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"fastdata {args.command}: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _reader_gone() -> bool:
    """Whether standard output's reader has gone (its pipe closed): then what is left to print goes nowhere, and the
    interpreter's own flush at exit raises no second BrokenPipeError."""
    try:
        fd = sys.stdout.fileno()
        poll = select.poll()
        poll.register(fd, select.POLLOUT)
        gone = any(events & select.POLLERR for _, events in poll.poll(0))  # a pipe without a reader
    except (OSError, ValueError, AttributeError):  # no file behind stdout, or no poll on this system
        return False
    if gone:  # as Python's documentation of SIGPIPE advises: the exit's flush then writes nowhere
        os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
    return gone


if __name__ == "__main__":
    sys.exit(main())
