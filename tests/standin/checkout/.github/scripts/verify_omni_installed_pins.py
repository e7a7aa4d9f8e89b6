"""TEST DOUBLE of sglang-omni's .github/scripts/verify_omni_installed_pins.py (runbook Step 2's last line).

Usage: verify_omni_installed_pins.py PYTHON CHECKOUT. Prints `Verified <N> exact dependency pins`, or with
the knob {"venv_pins_error": "..."} prints that error and exits 1.
"""
import json
import sys
from pathlib import Path

knobs_file = Path(sys.argv[2] if len(sys.argv) > 2 else ".") / "standin-knobs.json"
knobs = json.loads(knobs_file.read_text()) if knobs_file.is_file() else {}
if knobs.get("venv_pins_error"):
    print(f"ERROR: {knobs['venv_pins_error']}")
    sys.exit(1)
print("Verified 0 exact dependency pins")
