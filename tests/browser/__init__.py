"""Browser tests (a package, so that this directory's conftest does not shadow tests/conftest)."""
