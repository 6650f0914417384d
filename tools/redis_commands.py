#!/usr/bin/env python3
"""Writes crates/strata-server/src/commands/redis_commands.json: Redis 7.0's
own command descriptions (src/commands/*.json of its sources, BSD-3-Clause,
Copyright (c) Redis Ltd.) for the commands Strata serves, which COMMAND
INFO / DOCS / GETKEYS answer from.

    apt-get source redis   # Debian 12: redis 7.0.15
    python3 tools/redis_commands.py redis-7.0.15 > crates/strata-server/src/commands/redis_commands.json

Kept: every command of Strata's table (commands/table.rs) and, of its
containers, the subcommands Strata serves (those it answers with "unknown
subcommand" are listed in UNSERVED). The output maps each command's full
name (`xgroup|create` for a subcommand) to its description, trimmed of what
COMMAND does not print (the C function names)."""
import glob
import json
import os
import re
import sys

# Subcommands of Strata's containers that Strata does not serve (probed:
# they answer "unknown subcommand").
UNSERVED = {"memory|malloc-stats", "memory|purge", "script|debug"}

def main():
    src = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    table = open(os.path.join(here, "../crates/strata-server/src/commands/table.rs")).read()
    names = set(re.findall(r'cmd\("([a-z_\-]+)"', table))
    out = {}
    for f in sorted(glob.glob(os.path.join(src, "src/commands/*.json"))):
        for name, c in json.load(open(f)).items():
            name = name.lower()
            container = c.get("container", "").lower()
            full = f"{container}|{name}" if container else name
            if container:
                if container not in names or full in UNSERVED:
                    continue
            elif name not in names:
                continue
            c = {k: v for k, v in c.items() if k not in ("function", "get_keys_function", "container")}
            out[full] = c
    missing = sorted(names - set(out))
    if missing:
        print(f"commands without a Redis description: {missing}", file=sys.stderr)
    json.dump(out, sys.stdout, indent=None, sort_keys=True, separators=(",", ":"))
    sys.stdout.write("\n")

main()
