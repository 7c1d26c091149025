"""A child process's own peak memory, for tests that bound it.

``resource.getrusage(RUSAGE_SELF).ru_maxrss`` is no measure for a child the
test suite starts: Linux keeps the high-water mark across ``fork`` and
``execve``, so a fresh interpreter reports at least the pytest process's size
when it forked (seen: every child "peaked" at the suite's 756 MB). ``VmHWM``
in ``/proc/self/status`` belongs to the process's address space, which
``execve`` makes anew, so it counts only what the child itself touched.
"""

PEAK_KIB = (
    "int(next(line for line in open('/proc/self/status') if line.startswith('VmHWM:')).split()[1])"
)
"""A Python expression, for a child's code: its peak resident KiB since it started."""
