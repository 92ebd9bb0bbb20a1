#!/usr/bin/env bash
# A/B of two trees' pass-through, measured in one run so that both see the same machine: the gateway of OLD and of
# NEW in front of one fast upstream (bench/fast-upstream.ts), a tools/call (bench/wrk/tools-call.lua) at c=64, in
# alternating rounds. CPU is each gateway process's utime+stime from /proc over its rounds, divided by the requests
# wrk completed; req/s is the requests over the seconds measured.
#   bash bench/investigations/pipeline-ab.sh OLD_TREE NEW_TREE [ROUNDS] [SECONDS]
# Environment:
#   AB_RUN=dist       run each tree's compiled dist/main.js (build both first) instead of src/main.ts under tsx
#   AB_SIZE=1024      the answer's size in bytes;  AB_FORMAT=json|sse   its form
#   AB_FLOOR=1        also measure bench/floor.ts (this tree's) in the same rounds, and print each tree ÷ the floor
# Used for issue 33 ("the pipeline adds no more than 2 µs of CPU") and issue 38; loopback only, bounded, stops by
# itself.
set -euo pipefail
old=$1 new=$2 rounds=${3:-6} secs=${4:-4}
size=${AB_SIZE:-1024} format=${AB_FORMAT:-json}
here=$(cd "$(dirname "$0")/../.." && pwd)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
start() { # name tree args… → sets url_<name> and pid_<name>
  local name=$1 tree=$2; shift 2
  local log; log=$(mktemp)
  if [[ ${AB_RUN:-src} == dist ]]; then
    (cd "$tree" && exec node dist/main.js "$@" >"$log" 2>&1) &
  else
    (cd "$tree" && exec node --import tsx src/main.ts "$@" >"$log" 2>&1) &
  fi
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
names=(old new)
if [[ ${AB_FLOOR:-0} == 1 ]]; then
  floorlog=$(mktemp)
  (cd "$here" && exec node --import tsx bench/floor.ts --upstream "$upstream" >"$floorlog" 2>&1) &
  pid_floor=$!; pids+=("$pid_floor")
  for _ in $(seq 1 100); do grep -q port "$floorlog" && break; sleep 0.1; done
  url_floor="http://127.0.0.1:$(grep -o '"port":[0-9]*' "$floorlog" | cut -d: -f2)/mcp"
  names+=(floor)
fi
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
declare -A cpu=() reqs=() secsum=()
for k in "${names[@]}"; do cpu[$k]=0; reqs[$k]=0; done
args=(-- '"bench"' "{\"size\":$size,\"format\":\"$format\"}")
run() { # name
  local url pid before after out n
  url=$(eval echo "\$url_$1"); pid=$(eval echo "\$pid_$1")
  wrk -t2 -c64 -d1s -s "$here/bench/wrk/tools-call.lua" "$url" "${args[@]}" >/dev/null 2>&1 || true
  before=$(ticks "$pid")
  out=$(wrk -t2 -c64 -d"${secs}s" -s "$here/bench/wrk/tools-call.lua" "$url" "${args[@]}" 2>&1)
  after=$(ticks "$pid")
  n=$(echo "$out" | grep -o '[0-9]* requests in' | awk '{print $1}')
  cpu[$1]=$(( ${cpu[$1]} + after - before )); reqs[$1]=$(( ${reqs[$1]} + n ))
  echo "round $r $1: $(( n / secs )) req/s, $(( (after - before) * 1000000 / hz / n )) µs CPU/request"
}
for r in $(seq 1 "$rounds"); do
  # Each round rotates the order, so no target always follows the same one.
  for i in "${!names[@]}"; do run "${names[$(( (i + r) % ${#names[@]} ))]}"; done
done
total=$(( rounds * secs ))
for k in "${names[@]}"; do
  echo "$k: ${reqs[$k]} requests, $(( ${reqs[$k]} / total )) req/s, $(( ${cpu[$k]} * 1000000000 / hz / ${reqs[$k]} / 1000 )) µs CPU/request over all rounds"
done
if [[ ${AB_FLOOR:-0} == 1 ]]; then
  for k in old new; do
    awk -v r="${reqs[$k]}" -v f="${reqs[floor]}" -v c="${cpu[$k]}" -v cf="${cpu[floor]}" \
      -v k="$k" 'BEGIN { printf "%s ÷ floor: req/s %.3f, CPU/request %.3f\n", k, r / f, (c / r) / (cf / f) }'
  done
fi
