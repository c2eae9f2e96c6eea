"""Tests of evalband.report (a package, so its conftest does not shadow tests/conftest.py)."""
