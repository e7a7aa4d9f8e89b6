"""Permission tests that mean the same as root: root ignores permission bits, so a root test process runs the
gate without the two capabilities that override them (setpriv, util-linux); a chmod 000 folder is then refused
to it as to any user. Elsewhere the gate runs as it is."""
from __future__ import annotations

import os
import shutil

import pytest

_DROP = "-dac_override,-dac_read_search"


def as_a_user() -> list[str]:
    """The command prefix that makes permission bits apply to the gate."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: permission bits cannot be made to apply")
    return ["setpriv", "--bounding-set", _DROP]
