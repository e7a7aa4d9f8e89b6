"""The fixtures every tier shares, one module per area (tests/helpers/fixtures_*.py); tests/README.md defines the tiers."""
import pytest

pytest_plugins = [
    "tests.helpers.fixtures_foundation",
    "tests.helpers.fixtures_fuzz",
    "tests.helpers.fixtures_github",
    "tests.helpers.fixtures_history",
    "tests.helpers.fixtures_run",
    "tests.helpers.fixtures_verdict",
]


def pytest_collection_modifyitems(config, items):
    """Files with a `long` test first, then those with a `slow` test, each file's tests in their order. xdist's workers
    (--dist loadfile --no-loadscope-reorder) take files in this order: the longest start at once, the short ones fill
    the end, and no worker is left running one long file after the others are done. (xdist's own reorder, by number
    of tests, would start the one-test files that run for minutes last.)"""
    def having(marker: str) -> set:
        return {item.path for item in items if item.get_closest_marker(marker)}

    long, slow = having("long"), having("slow")
    unsaid = sorted({str(path) for path in having("timed") if "pytest.mark.timed" not in path.read_text(encoding="utf-8")})
    if unsaid:  # scripts/test.sh finds the timed tests by that text: a test marked another way would never run
        raise pytest.UsageError(f"{', '.join(unsaid)}: a test is marked timed without the text `pytest.mark.timed`; "
                                "mark it with @pytest.mark.timed, which scripts/test.sh looks for")
    items.sort(key=lambda item: (item.path not in long, item.path not in slow))
