"""The documentation, run as written: every command and Python block of README.md and docs/*.md.

`steps(markdown)` extracts a file's runnable blocks in order:
- a fenced block whose lines are all commands (`fastdata ...`, `python ...`) or comments is a shell block;
  each command runs with bash in the sandbox and must exit 0;
- a ```python block runs in one interpreter per file, in order, so later blocks see earlier names;
- a block right after `<!-- not run: REASON -->` is skipped and its reason reported (GPU, cluster, network,
  the test command itself); a block of any other text (a folder listing) is not code and is left alone;
- `<!-- not run: docs/X.md runs these as written -->` skips commands another page repeats (the README's summary of
  `fastdata doctor`, a 40 s command): the test checks that every one of them is a step of that page.

`python docs_walk.py STEPS.json` (run by the test in a fresh process, cwd = the sandbox) executes the steps.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass

COMMANDS = ("fastdata", "python", "make", "pip", "export", "ray", "srun", "sbatch", "bash")
SELF = {"make demo": "the set-up command itself (tests/test_demo.py runs the demo script)",
        "make test": "the command that runs this test (CI runs it)",
        "make test-oldest": "this suite again, in an environment of its own with a 5 GB torch (docs/testing.md)"}
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->")
ELSEWHERE = re.compile(r"^((?:docs/)?[\w.-]+\.md) runs these as written$")
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")


@dataclass(frozen=True)
class Step:
    kind: str  # "shell", "python" or "skip"
    text: str
    line: int  # where the block starts in the file
    reason: str = ""


def _blocks(markdown: str):
    """(language, code, first line number, preceding non-blank line) of every fenced block."""
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = m.group(1), m.group(2), i
        before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        body = []
        i += 1
        while i < len(lines) and not re.match(rf"^{re.escape(indent)}```\s*$", lines[i]):
            body.append(lines[i])
            i += 1
        yield lang, textwrap.dedent("\n".join(body)), start + 1, before
        i += 1


def command_text(command: str) -> str:
    """A command without its trailing `# comment` and spacing, to match the same command on another page."""
    return " ".join(command.split("  #")[0].split())


def _commands(code: str) -> list[str] | None:
    """The commands of a shell block (continuation lines joined), or None when it is not a shell block."""
    joined = code.replace("\\\n", " ")
    lines = [ln.strip() for ln in joined.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if not lines:
        return None
    is_command = [ln.split()[0] in COMMANDS for ln in lines]
    if not any(is_command):
        return None
    if not all(is_command):
        bad = [ln for ln, c in zip(lines, is_command) if not c]
        raise ValueError(f"a block mixes commands and other text ({bad[0]!r}); make it all commands, or mark it "
                         "<!-- not run: reason -->")
    return lines


def steps(markdown: str) -> list[Step]:
    out = []
    for lang, code, line, before in _blocks(markdown):
        marker = NOT_RUN.search(before)
        if marker:
            out.append(Step("skip", code, line, marker.group(1)))
        elif lang == "python":
            out.append(Step("python", code, line))
        elif lang in ("", "sh", "bash", "shell", "console"):
            for c in _commands(code) or ():
                own = SELF.get(c.split("#")[0].strip())
                out.append(Step("skip", c, line, own) if own else Step("shell", c, line))
    return out


def run(steps_: list[dict]) -> None:
    namespace: dict = {"__name__": "__docs__"}
    for step in steps_:
        print(f"--- line {step['line']}: {step['text'].splitlines()[0][:100]}", flush=True)
        start = time.perf_counter()
        if step["kind"] == "shell":
            done = subprocess.run(["bash", "-c", step["text"]])
            if done.returncode != 0:
                sys.exit(f"line {step['line']}: `{step['text']}` exited {done.returncode}")
        elif step["kind"] == "python":
            exec(compile(step["text"], f"<block at line {step['line']}>", "exec"), namespace)  # noqa: S102
        print(f"=== line {step['line']}: {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        run(json.load(f))
