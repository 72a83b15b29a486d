"""`fastdata info DS | head`: the reader leaves early. The command printed "fastdata info: error: Broken pipe" and
exited 2; it now stops quietly with 141 (128 + SIGPIPE, as a shell reports a command its pipe ended). A broken pipe
that is not standard output's (a worker's, a socket's) is still an error."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    import fastdata.cli.info as info
    from fastdata.cli import main

    def run(args):
        if sys.argv[1] == "other":
            raise BrokenPipeError(32, "Broken pipe")  # a pipe of its own, with standard output still read
        for i in range(100_000):
            print(f"line {i}: " + "x" * 100)
        return 0

    info.run = run
    sys.exit(main(["info", "ds"]))
""")


def _run(mode: str) -> tuple[int, str, str]:
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader leaves, as `head -1` does
    err = proc.stderr.read()
    return proc.wait(timeout=60), first, err


def test_a_reader_that_leaves_early_ends_the_command_quietly():
    code, first, err = _run("stdout")
    assert first == "line 0: " + "x" * 100 + "\n"
    assert (code, err) == (141, "")


def test_another_broken_pipe_is_an_error():
    code, first, err = _run("other")
    assert (code, first, err) == (2, "", "fastdata info: error: Broken pipe\n")
