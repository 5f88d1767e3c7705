#!/usr/bin/env python3
"""tests/ptyrun.py PROG ARG... : runs PROG on a pseudo-terminal (so its
standard input is a terminal, as for a person typing), types each line
of this script's standard input into it, waiting for the prompt before
each, then prints everything the terminal showed. Exit: PROG's status,
or 99 when it did not answer within 20 seconds."""
import os
import pty
import select
import sys
import time

PROMPT = b"e3debugfs:  "


def read_until(fd, want, out, deadline):
    while want not in out[0]:
        left = deadline - time.time()
        if left <= 0:
            return False
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            return False
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            return False
        if not chunk:
            return False
        out[0] += chunk
    return True


def main():
    lines = sys.stdin.buffer.read().split(b"\n")
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(sys.argv[1], sys.argv[1:])
    out = [b""]
    deadline = time.time() + 20
    seen = 0
    for line in lines:
        if not line:
            continue
        # the next prompt, then the line as typed
        if not read_until(fd, PROMPT, out, deadline):
            break
        seen = out[0].count(PROMPT)
        out[0] = out[0].replace(PROMPT, b"<prompt>", seen)
        os.write(fd, line + b"\r")
    while time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.5)
        if not r:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out[0] += chunk
    # the terminal closed (or the time is up): the exit may lag behind
    done, status = os.waitpid(pid, os.WNOHANG)
    while not done and time.time() < deadline:
        time.sleep(0.05)
        done, status = os.waitpid(pid, os.WNOHANG)
    if not done:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        sys.stdout.buffer.write(out[0])
        sys.exit(99)
    sys.stdout.buffer.write(out[0])
    sys.exit(os.waitstatus_to_exitcode(status))


main()
