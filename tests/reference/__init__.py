"""Plain-Python reference implementations of the C++ kernels.

Tests compare the kernels against these on random instances (same answers), and
benchmarks time them against the kernels. They are written for clarity, not speed.
``simulator.py`` is the whole fixed-duration simulator built on the others
(tests/py/test_reference_simulator.py checks the engine against it job by job).
"""
