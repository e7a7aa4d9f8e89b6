"""The fixtures every tier shares, one module per area (tests/helpers/fixtures_*.py); tests/README.md defines the tiers."""
pytest_plugins = [
    "tests.helpers.fixtures_foundation",
    "tests.helpers.fixtures_fuzz",
    "tests.helpers.fixtures_github",
    "tests.helpers.fixtures_history",
    "tests.helpers.fixtures_run",
    "tests.helpers.fixtures_verdict",
]
