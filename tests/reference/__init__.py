"""Plain-Python reference implementations of the C++ kernels.

Tests compare the kernels against these on random instances (same answers), and
benchmarks time them against the kernels. They are written for clarity, not speed.
"""
