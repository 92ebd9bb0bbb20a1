#!/usr/bin/env bash
# A/B of two trees' pass-through CPU per request, measured in one run so that both see the same machine: the
# gateway of OLD and of NEW (each `node --import tsx src/main.ts` from its own tree) in front of one fast upstream
# (bench/fast-upstream.ts), a 1 KB JSON tools/call (bench/wrk/tools-call.lua) at c=64, in alternating rounds.
# CPU is each gateway process's utime+stime from /proc over its rounds, divided by the requests wrk completed.
#   bash bench/investigations/pipeline-ab.sh OLD_TREE NEW_TREE [ROUNDS] [SECONDS]
# Used for issue 33 ("the pipeline adds no more than 2 µs of CPU"); loopback only, bounded, stops by itself.
set -euo pipefail
old=$1 new=$2 rounds=${3:-6} secs=${4:-4}
here=$(cd "$(dirname "$0")/../.." && pwd)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
start() { # name tree args… → sets url_<name> and pid_<name>
  local name=$1 tree=$2; shift 2
  local log; log=$(mktemp)
  (cd "$tree" && exec node --import tsx src/main.ts "$@" >"$log" 2>&1) &
  local pid=$!; pids+=("$pid")
  for _ in $(seq 1 200); do grep -q "listening on" "$log" && break; sleep 0.1; done
  printf -v "url_$name" '%s' "$(grep -o "http://127.0.0.1:[0-9]*/mcp" "$log" | head -1)"
  printf -v "pid_$name" '%s' "$pid"
}
uplog=$(mktemp)
(cd "$here" && exec node --import tsx bench/fast-upstream.ts >"$uplog" 2>&1) &
pids+=("$!")
for _ in $(seq 1 100); do grep -q port "$uplog" && break; sleep 0.1; done
upstream="http://127.0.0.1:$(grep -o '"port":[0-9]*' "$uplog" | cut -d: -f2)/mcp"
common=(--upstream "$upstream" --port 0 --log-level error)
start old "$old" "${common[@]}"
start new "$new" "${common[@]}"
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
declare -A cpu=([old]=0 [new]=0) reqs=([old]=0 [new]=0)
run() { # name url pid
  local before after out n
  wrk -t2 -c64 -d1s -s "$here/bench/wrk/tools-call.lua" "$2" -- '"bench"' '{"size":1024,"format":"json"}' >/dev/null 2>&1 || true
  before=$(ticks "$3")
  out=$(wrk -t2 -c64 -d"${secs}s" -s "$here/bench/wrk/tools-call.lua" "$2" -- '"bench"' '{"size":1024,"format":"json"}' 2>&1)
  after=$(ticks "$3")
  n=$(echo "$out" | grep -o '[0-9]* requests in' | awk '{print $1}')
  cpu[$1]=$(( ${cpu[$1]} + after - before )); reqs[$1]=$(( ${reqs[$1]} + n ))
  echo "round $r $1: $n requests, $(( (after - before) * 1000000 / hz / n )) µs CPU/request"
}
for r in $(seq 1 "$rounds"); do
  if (( r % 2 )); then run old "$url_old" "$pid_old"; run new "$url_new" "$pid_new";
  else run new "$url_new" "$pid_new"; run old "$url_old" "$pid_old"; fi
done
for k in old new; do
  echo "$k: ${reqs[$k]} requests, $(( ${cpu[$k]} * 1000000000 / hz / ${reqs[$k]} / 1000 )) µs CPU/request over all rounds"
done
