#!/usr/bin/env python3
"""Re-runs every README example block (a fence whose single `$ build/bin/dlscale ARGS` line is followed by
output) and pastes the command's stdout in place: what tests/readme_test.cpp compares byte for byte.
Run from the repository root after building: tests/golden/refresh_readme.py [build-dir]. Review the diff."""
import os
import shlex
import subprocess
import sys

build = sys.argv[1] if len(sys.argv) > 1 else "build"
prompt = "$ build/bin/dlscale "
lines = open("README.md", encoding="utf-8").read().split("\n")
out, i = [], 0
env = dict(os.environ, DLSCALE_DATA_DIR=os.getcwd())
while i < len(lines):
    line = lines[i]
    out.append(line)
    i += 1
    if not line.startswith("```"):
        continue
    block = []
    while i < len(lines) and not lines[i].startswith("```"):
        block.append(lines[i])
        i += 1
    commands = [b for b in block if b.startswith("$ ")]
    first = block[0] if block else ""
    if len(commands) == 1 and first.startswith(prompt) and len(block) > 1:
        args = shlex.split(first[len(prompt):])
        r = subprocess.run([os.path.join(build, "bin", "dlscale")] + args, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            sys.exit(f"README example failed: {first}\n{r.stderr}")
        text = r.stdout[:-1] if r.stdout.endswith("\n") else r.stdout
        block = [first] + text.split("\n")
    out.extend(block)
    if i < len(lines):
        out.append(lines[i])
        i += 1
open("README.md", "w", encoding="utf-8").write("\n".join(out))
print("refreshed README.md examples; review with: git diff README.md")
