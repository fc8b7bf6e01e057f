"""Fixtures every test folder may use.

`shared`: the reference data folder (`../shared`, or ROOFLENS_SHARED; devkit/shared.py).
Without it the test is skipped, except under CI (the CI variable set), where a missing
folder fails the test: the golden comparisons must run there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.golden import require_shared


@pytest.fixture(scope="session")
def shared() -> Path:
    return require_shared()
