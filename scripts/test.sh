#!/usr/bin/env bash
# The test suite as .ci/run and the README run it: every test on three xdist workers, then the tests marked
# `timed` (they judge the stand-in server's measured speed: a second worker on the same cores makes that too
# noisy to decide) one at a time. Three workers on two cores, because many end-to-end tests mostly wait (on a
# stand-in server's requests, a `gate run` child, a fresh clone's pip): a third worker runs while they wait.
# Arguments (paths, -k, -x, …) go to both calls:
#
#     scripts/test.sh                      # the full suite
#     scripts/test.sh tests/unit tests/integration
#
# Exit: 0 when both calls pass; otherwise the first failing call's pytest exit code (1: a test failed).
# A call that collects no test (pytest's 5, e.g. no timed test under the paths given) is not a failure,
# unless neither call collected any.
set -uo pipefail
cd "$(dirname "$0")/.."

python -m pytest -q -n 3 -m "not timed" "$@"
parallel=$?
# With no arguments the timed call collects only the files that say `pytest.mark.timed` (collecting the whole suite
# again costs ~8 s of the serial part); tests/conftest.py refuses a timed test in a file that does not say so.
if [ "$#" -eq 0 ]; then
  mapfile -t timed < <(grep -rlF --include='test_*.py' 'pytest.mark.timed' tests | sort)
  set -- "${timed[@]}"
fi
python -m pytest -q -m timed "$@"
serial=$?

if [ "$parallel" -eq 5 ] && [ "$serial" -eq 5 ]; then exit 5; fi
for code in "$parallel" "$serial"; do
  if [ "$code" -ne 0 ] && [ "$code" -ne 5 ]; then exit "$code"; fi
done
exit 0
