#!/usr/bin/env python3
"""Error texts in one place (ARCHITECTURE.md, "Error texts"): an error reply
text the server answers from more than one place is a constant in
`base/reply.rs`; a text only one command answers stays beside it, as in
Redis's own sources. Fails, naming the text and where it is written, on any
error text spelled out twice in the server's non-test code outside
`base/reply.rs`, or spelled out anywhere when `base/reply.rs` has it."""

import collections
import os
import re
import sys

SRC = os.path.join(os.path.dirname(__file__), "..", "crates", "strata-server", "src")
# The first word of every error reply Redis 7.0 and Strata give.
CODES = (
    "ERR|WRONGTYPE|NOSCRIPT|BUSY|BUSYKEY|BUSYGROUP|NOAUTH|NOPERM|WRONGPASS|OOM|EXECABORT|"
    "LOADING|READONLY|NOGROUP|NOPROTO|UNBLOCKED|NOREPLICAS|MISCONF|MASTERDOWN|NOTBUSY|"
    "UNKILLABLE|CROSSSLOT|MOVED|ASK|TRYAGAIN|CLUSTERDOWN"
)
# A whole literal, not a format string's piece ({} or an escape inside).
TEXT = re.compile(r'"((?:' + CODES + r') [^"{}\\]+)"')


def code_of(text):
    """The file's code without line comments and without its test module."""
    text = text.split("#[cfg(test)]")[0]
    return "\n".join(line.split("//")[0] for line in text.splitlines())


def main():
    seen = collections.defaultdict(list)
    for dirpath, _, files in os.walk(SRC):
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, SRC)
            if not name.endswith(".rs") or name == "tests.rs" or "tests" in rel.split(os.sep)[:-1]:
                continue
            with open(path, encoding="utf-8") as f:
                for m in TEXT.finditer(code_of(f.read())):
                    seen[m.group(1)].append(rel)
    reply = os.path.join("base", "reply.rs")
    constants = {t for t, places in seen.items() if reply in places}
    twice = {t: places for t, places in seen.items() if len(places) > 1}
    if twice:
        print("error texts written in more than one place (make each a constant in base/reply.rs):")
        for text, places in sorted(twice.items()):
            print(f"  {text!r}: {', '.join(places)}")
        sys.exit(1)
    print(f"{len(seen) - len(constants)} error texts each written once outside base/reply.rs, {len(constants)} there")


if __name__ == "__main__":
    main()
