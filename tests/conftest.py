"""The fixtures every tier shares, one module per area (tests/helpers/fixtures_*.py); tests/README.md defines the tiers."""
pytest_plugins = [
    "tests.helpers.fixtures_foundation",
    "tests.helpers.fixtures_fuzz",
    "tests.helpers.fixtures_github",
    "tests.helpers.fixtures_history",
    "tests.helpers.fixtures_run",
    "tests.helpers.fixtures_verdict",
]


def pytest_collection_modifyitems(config, items):
    """Files with a `slow` test first, each file's tests in their order: on xdist's workers (--dist loadfile hands
    out files in this order) the long files start at once and the short ones fill the end, so that no worker is
    left running one long file after the others are done."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)
