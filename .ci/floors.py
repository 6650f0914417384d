#!/usr/bin/env python3
"""The server's floors: each top-level room of strata-server imports only
rooms on floors below it (ARCHITECTURE.md, "The server's floors").

    base < registry < services < command < commands < exec < net < lib/main

Reads every `crate::<room>` path in the non-test code of each room (line
comments and `#[cfg(test)]` modules left out: a test may reach up) and
fails, naming the file and the path, on any that reaches a room on a
higher floor. A room not in the list fails too: a new room takes its floor
here, on purpose.

And a command family sees the services it uses through `Ctx`'s methods:
the whole server state (`Ctx::server`) is the server family's
(`commands/server/`), so any other file of `commands/` calling it fails."""

import os
import re
import sys

FLOORS = ["base", "registry", "services", "command", "commands", "exec", "net"]
TOP = {"lib", "main"}
SRC = os.path.join(os.path.dirname(__file__), "..", "crates", "strata-server", "src")


def code_of(text):
    """The file's code without comments and without its test module."""
    text = text.split("#[cfg(test)]")[0]
    return "\n".join(line.split("//")[0] for line in text.splitlines())


def rooms_used(code):
    """The top-level rooms a file's code names through `crate::`."""
    used = set(re.findall(r"\bcrate::([a-z_][a-z0-9_]*)", code))
    for group in re.findall(r"\bcrate::\{([^}]*)\}", code):
        used |= set(re.findall(r"(?:^|,)\s*([a-z_][a-z0-9_]*)", group))
    return used


def main():
    wrong = []
    for dirpath, _, files in os.walk(SRC):
        for name in sorted(files):
            if not name.endswith(".rs"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, SRC)
            room = rel.split(os.sep)[0].removesuffix(".rs")
            if name == "tests.rs" or os.sep + "tests" + os.sep in os.sep + rel:
                continue
            if room in TOP:
                continue
            if room not in FLOORS:
                wrong.append(f"{rel}: the room `{room}` has no floor in .ci/floors.py")
                continue
            floor = FLOORS.index(room)
            with open(path, encoding="utf-8") as f:
                code = code_of(f.read())
            if rel.startswith("commands" + os.sep) and not rel.startswith(os.path.join("commands", "server") + os.sep):
                if re.search(r"\bctx\s*\.\s*server\s*\(", code):
                    wrong.append(f"{rel}: a family outside commands/server/ takes the whole server state (`ctx.server()`); add a `Ctx` method for the service it uses")
            for used in sorted(rooms_used(code)):
                if used in FLOORS and FLOORS.index(used) > floor:
                    wrong.append(f"{rel}: `{room}` (floor {floor + 1}) imports `crate::{used}` (floor {FLOORS.index(used) + 1})")
    if wrong:
        print("imports that run up a floor, or reach past Ctx:")
        print("\n".join(wrong))
        sys.exit(1)
    print(f"every room imports only the floors below it ({' < '.join(FLOORS)})")


if __name__ == "__main__":
    main()
