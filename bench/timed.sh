# shellcheck shell=bash
# Sourced by the bench/*.sh scripts. run_timed FORMAT COMMAND...: runs COMMAND
# (its output discarded) and prints the GNU time fields FORMAT asks for (e.g.
# "%U" user seconds, "%e %U" wall and user); a failed command prints which one
# and returns 1.
run_timed() {
  local format="$1" f status=0
  shift
  f=$(mktemp)
  /usr/bin/time -o "$f" -f "$format" "$@" >/dev/null 2>&1 || status=$?
  if (( status != 0 )); then
    echo "$(basename "$0" .sh): failed (exit $status): $*" >&2
    rm -f "$f"
    return 1
  fi
  tail -1 "$f"
  rm -f "$f"
}
