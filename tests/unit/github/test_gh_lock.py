"""requirements/action.lock, what the action installs with `pip install --require-hashes --no-deps`,
stays in step with pyproject.toml: every pin hashed, every declared dependency (runtime and build)
pinned at a version its specifier allows, and no pinned package missing one of its own dependencies.

When this fails after editing pyproject.toml, regenerate the lock with the command in its header:
    pip-compile --all-build-deps --allow-unsafe --generate-hashes --no-emit-find-links \
        --no-emit-index-url --output-file=requirements/action.lock --strip-extras --extra runner pyproject.toml
"""
from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[3]
LOCK = ROOT / "requirements" / "action.lock"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")

tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python 3.11+")


def pins() -> dict[str, tuple[Version, list[str]]]:
    """name -> (version, hashes), from the lock's `name==version \\ --hash=...` groups."""
    out: dict[str, tuple[Version, list[str]]] = {}
    current = None
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        text = line.strip()
        match = _PIN.match(text)
        if match:
            current = canonicalize_name(match[1])
            assert current not in out, f"{current} pinned twice"
            out[current] = (Version(match[2]), [])
        elif text.startswith("--hash=") and current is not None:
            out[current][1].append(text.split("=", 1)[1].rstrip(" \\"))
        elif text and not text.startswith("#"):
            raise AssertionError(f"unexpected line in the lock (an index, link or editable?): {text!r}")
    return out


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    # The action runs `gate run` too: the lock covers the [runner] extra as well as the base install (every
    # trusted job installs from it, issue 22). No matplotlib: the charts and the dashboard are the gate's own SVG
    # (test_nothing_installs_matplotlib), so matplotlib and its ~95 MB stay out (issue 39; the [plot] extra is gone, issue 51).
    extras = project["project"]["optional-dependencies"]
    runner = list(extras["runner"])
    return [Requirement(r) for r in (*project["project"]["dependencies"], *runner, *project["build-system"]["requires"])]


def test_every_pin_is_hashed():
    locked = pins()
    assert len(locked) > 10
    unhashed = [name for name, (_, hashes) in locked.items() if not hashes]
    assert not unhashed, f"pins without --hash: {unhashed}"
    assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for _, hashes in locked.values() for h in hashes)


def test_every_declared_dependency_is_pinned_within_its_specifier():
    locked = pins()
    problems = []
    for requirement in declared():
        name = canonicalize_name(requirement.name)
        if name not in locked:
            problems.append(f"{requirement} is not in the lock")
        elif not requirement.specifier.contains(locked[name][0], prereleases=True):
            problems.append(f"{requirement} but the lock pins {locked[name][0]}")
    assert not problems, "; ".join(problems) + " (regenerate requirements/action.lock, see this file's docstring)"


def test_the_lock_is_closed_under_dependencies():
    """With --no-deps nothing fills a gap: each pinned package's own requirements must be pinned too.

    Read from the installed distributions' metadata where the installed version equals the pin."""
    locked = pins()
    checked, missing = 0, []
    environment = {"python_version": f"{sys.version_info.major}.{sys.version_info.minor}", "extra": ""}
    for name, (version, _) in locked.items():
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        if Version(dist.version) != version:
            continue
        checked += 1
        for text in dist.requires or ():
            requirement = Requirement(text)
            if requirement.marker is not None and not requirement.marker.evaluate(environment):
                continue
            if canonicalize_name(requirement.name) not in locked:
                missing.append(f"{name} needs {requirement}")
    assert checked >= 10, f"only {checked} pinned packages are installed at their pinned version here"
    assert not missing, "; ".join(missing)


def test_nothing_installs_matplotlib():
    """No extra but the test tools' [bench] names matplotlib (nothing in gate/ imports it), and no workflow or caller
    installs it or the removed [plot] extra."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert "plot" not in extras
    assert [name for name, reqs in extras.items() if any(r.startswith("matplotlib") for r in reqs)] == ["bench"]
    files = [*sorted((ROOT / ".github" / "workflows").glob("*.yml")), *sorted((ROOT / "docs" / "callers").glob("*.yml")),
             ROOT / "action.yml"]
    assert len(files) > 5
    users = [f.name for f in files if re.search(r"history plot|matplotlib|\[plot\]|extra=plot", f.read_text(encoding="utf-8"))]
    assert not users, f"{users} install matplotlib or run `gate history plot`; the lock has neither"
    assert "matplotlib" not in pins()
