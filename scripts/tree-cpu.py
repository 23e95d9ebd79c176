#!/usr/bin/env python3
"""The CPU time of a command and of every process it starts, for measuring test files (issue 36):
`python3 scripts/tree-cpu.py npx vitest run packages/server/test/<file>`. It runs the command as a child subreaper
(Linux), so every descendant is reaped here, orphans included (Chromium: Playwright leaves it to the init process
when a test worker exits, and /usr/bin/time then misses its CPU), and RUSAGE_CHILDREN counts the whole tree. Prints
`CPU <user> <sys> <user+sys> wall <s> rc <exit code>` on stderr as the last line; exits with the command's code."""
import ctypes, os, resource, sys, time
PR_SET_CHILD_SUBREAPER = 36
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
t0 = time.time()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
status = None
while True:
    try:
        p, st = os.waitpid(-1, 0)
        if p == pid: status = st
    except ChildProcessError:
        break
r = resource.getrusage(resource.RUSAGE_CHILDREN)
code = os.waitstatus_to_exitcode(status) if status is not None else 1
sys.stderr.write(f"CPU {r.ru_utime:.1f} {r.ru_stime:.1f} {r.ru_utime + r.ru_stime:.1f} wall {time.time()-t0:.1f} rc {code}\n")
sys.exit(code)
