"""The manifest's quick version reader agrees with importlib.metadata on every distribution."""

from __future__ import annotations

from importlib import metadata

import pytest

from evalband.store._manifest import distribution_version, environment_versions


def test_every_installed_distribution_reads_the_same_version() -> None:
    names = sorted({d.metadata["Name"] for d in metadata.distributions()})
    assert len(names) > 10  # numpy, pydantic, typer, ... at least
    assert {n: distribution_version(n) for n in names} == {
        n: metadata.version(n) for n in names
    }


def test_a_missing_distribution_is_not_found() -> None:
    with pytest.raises(metadata.PackageNotFoundError):
        distribution_version("evalband-no-such-distribution")


def test_environment_versions_are_metadatas() -> None:
    versions = environment_versions()
    for name, version in versions.items():
        if name not in ("python", "evalband"):
            assert version == metadata.version(name)
