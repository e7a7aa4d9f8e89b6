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
    """Files with a `waits` test first, then those with a `slow` test, each file's tests in their order: on xdist's
    workers (--dist loadfile hands out files in this order) the minutes spent waiting on stand-in servers overlap
    the CPU-bound files, the long files start at once and the short ones fill the end, so that no worker is left
    running one long file after the others are done."""
    def first(marker: str) -> set:
        return {item.path for item in items if item.get_closest_marker(marker)}

    waits, slow = first("waits"), first("slow")
    items.sort(key=lambda item: (item.path not in waits, item.path not in slow))
