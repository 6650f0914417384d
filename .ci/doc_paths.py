#!/usr/bin/env python3
"""Fails when README.md, ARCHITECTURE.md or docs/*.md names a path that
does not exist (issue 45: docs kept true).

A name is a `backticked` word that looks like a path: it holds a `/` or
ends in a file extension this repository uses (.rs .md .sh .py .toml .json
.conf). It exists when some file or directory tracked by git ends with it
(`connection/mod.rs` names crates/strata-server/src/connection/mod.rs;
`loops/` a directory). Words with spaces, globs, URLs, placeholders (`<`,
`$`, `{`), options (`--x`) and absolute paths outside the repository
(`/proc/...`, `/tmp/...`) are not paths of this repository.
"""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXTS = (".rs", ".md", ".sh", ".py", ".toml", ".json", ".conf")


def tracked():
    out = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    names = set()
    for f in out:
        parts = f.split("/")
        for i in range(len(parts)):
            names.add("/".join(parts[i:]))
            if i + 1 < len(parts):
                # Directories, with and without their trailing slash.
                for j in range(i + 1, len(parts)):
                    d = "/".join(parts[i:j])
                    names.add(d)
                    names.add(d + "/")
    return names


# Paths of other trees: Redis's test suite (`unit/...`), what the server
# creates at run time, and words that only look like paths.
NOT_OURS = ("unit/", "./strata-data", "flash-dir/", "1/hz", "journal_pending/", "last_checkpoint_time/")


def candidates(text):
    for m in re.finditer(r"`([^`\n]+)`", text):
        w = m.group(1).strip()
        if " " in w or any(c in w for c in "<>$*{}?|=,;()[]'\""):
            continue
        if w.startswith(("-", "http", "/proc", "/sys", "/dev", "/tmp", "/etc", "/usr", "/var", "~")):
            continue
        if w.startswith("../") or w.startswith(NOT_OURS) or w == "/":
            continue
        # A Rust path (`crate::x::y`) or a method is not a file path.
        if "::" in w:
            continue
        looks = "/" in w or w.endswith(EXTS)
        if not looks:
            continue
        # `a/b` words that are protocol or option values, not paths.
        if re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", w) and not (
            w.endswith(EXTS) or w.endswith("/") or "_" in w or w.islower()
        ):
            continue
        yield w


def main():
    names = tracked()
    docs = [ROOT / "README.md", ROOT / "ARCHITECTURE.md"] + sorted((ROOT / "docs").glob("*.md"))
    missing = []
    for doc in docs:
        if not doc.exists():
            continue
        for lineno, line in enumerate(doc.read_text().splitlines(), 1):
            for w in candidates(line):
                key = w.lstrip("./").rstrip("/") if w.startswith("./") else w
                if key in names or key.rstrip("/") in names:
                    continue
                missing.append(f"{doc.relative_to(ROOT)}:{lineno}: `{w}` names no file or directory")
    for m in missing:
        print(m)
    if missing:
        print(f"{len(missing)} path(s) named in the docs do not exist")
        return 1
    print(f"docs: every path named exists ({len(docs)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
