# Sourced (bash -euo pipefail) before the README's walk-through by scripts/lib/walkthrough.ts, which
# keeps each walk-through line at its README line number: $LINENO and BASH_LINENO are README.md lines.
# From the environment: WALKTHROUGH_EXPECT (lines "LINE STATUS": the curl on LINE must answer STATUS,
# its comment says so), WALKTHROUGH_CALLS (each curl appends "LINE STATUS EXIT"), WALKTHROUGH_VARS.

set -a   # every variable the walk-through sets is exported, for walkthrough_done
trap 'echo "README.md:$LINENO: stopped: exit $? from: $BASH_COMMAND" >&2' ERR

# curl, checked: the answer must have the status its command's comment states ("# 412: ..."), else a
# 2xx. A --write-out / -w format of the command is kept; the status goes to stderr after it.
curl() {
  local line=${BASH_LINENO[0]} args=() format="" errors status want rc=0
  while (($# > 0)); do
    case $1 in
      -w | --write-out) format=$2; shift 2 ;;
      *) args+=("$1"); shift ;;
    esac
  done
  errors=$(mktemp)
  command curl "${args[@]}" --write-out "$format%{stderr}\nwalkthrough-status %{http_code}\n" 2>"$errors" || rc=$?
  status=$(sed -n 's/^walkthrough-status //p' "$errors")
  grep -v -e '^walkthrough-status ' -e '^$' "$errors" >&2 || true
  rm -f "$errors"
  want=$(sed -n "s/^$line //p" "$WALKTHROUGH_EXPECT")
  echo "$line ${status:-000} $rc" >>"$WALKTHROUGH_CALLS"
  if ((rc != 0)); then
    echo "README.md:$line: curl failed (exit $rc)" >&2
    return "$rc"
  fi
  if [[ -z $want && $status != 2?? || -n $want && $status != "$want" ]]; then
    echo "README.md:$line: HTTP $status, expected ${want:-2xx}" >&2
    return 1
  fi
}

# After the last block: the variables the walk-through set (TOKEN, ITEM, ...), as JSON.
walkthrough_done() {
  node -e 'require("fs").writeFileSync(process.env.WALKTHROUGH_VARS, JSON.stringify(process.env))'
}
