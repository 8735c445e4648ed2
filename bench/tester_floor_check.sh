#!/bin/sh
# The floor (tester_floor) runs each CPU's operations as `cohsim selftest
# coherence` draws them (one function draws them for both; this checks that
# the floor gives it the same streams, CPUs and lines): both must make the
# same number of increments of the counter, for a few CPU counts.
# Usage: tester_floor_check.sh TESTER_FLOOR COHSIM
set -eu
floor=$1 cohsim=$2
for cpus in 1 4 16; do
  f=$("$floor" --reps 1 --no-draws --cpus "$cpus" --ops 2000 | grep -o 'counter [0-9]*')
  t=$("$cohsim" selftest coherence --cpus "$cpus" --ops 2000 -q | grep -o 'counter [0-9]*')
  echo "$cpus CPUs: floor $f, tester $t"
  [ -n "$f" ] && [ "$f" = "$t" ] || { echo "tester_floor_check: the floor's operations are not the tester's" >&2; exit 1; }
done
