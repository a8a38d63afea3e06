"""Judging: a test's ``roofline`` marker checked into an Expectation, and the verdicts of a
workload's Results against it, as plain data.

Pytest-free, between the engine (and the reports) below it and the pytest plugin above it:
the plugin reads markers and hands their arguments here, and turns the verdicts it gets back
into test reports. A notebook or another test runner can judge workloads the same way.
"""
