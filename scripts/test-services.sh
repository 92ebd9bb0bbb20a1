#!/usr/bin/env bash
# What the tests need besides node_modules, on a Debian machine:
#   - redis-server and redis-cli (the store tests, and private servers some tests start on free ports);
#   - a Redis answering on 127.0.0.1:6379 (TEST_REDIS_URL overrides where the tests look; this script
#     only starts the default one);
#   - Debian's chromium at /usr/bin/chromium (CHROMIUM_PATH overrides it), for the operator page test;
#   - systemd-analyze (Debian's systemd), which checks deploy/systemd/mcp-task-gateway.service.
#
#   bash scripts/test-services.sh check    say what is missing and exit 1, or exit 0 (no root needed)
#   bash scripts/test-services.sh ensure   install with apt-get and start what is missing (root), then check
#   bash scripts/test-services.sh container  install what the container test needs (podman, runc, debootstrap)
#                                            with apt-get when missing (root), then check it
#
# `npm run test:all` runs `ensure` then `npm test`; .ci/run calls `npm run test:all`.
set -euo pipefail

chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"
redis_url="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"

redis_up() {
  command -v redis-cli >/dev/null 2>&1 && [ "$(redis-cli -u "$redis_url" ping 2>/dev/null)" = PONG ]
}

missing() {
  local out=()
  command -v redis-server >/dev/null 2>&1 || out+=("redis-server is not installed")
  redis_up || out+=("no Redis answers at $redis_url")
  [ -x "$chromium" ] || out+=("$chromium is missing")
  command -v systemd-analyze >/dev/null 2>&1 || out+=("systemd-analyze is not installed (Debian's systemd)")
  printf '%s\n' "${out[@]+"${out[@]}"}"
}

apt_install() {
  if [ "$(id -u)" != 0 ]; then
    echo "test-services: installing $* needs root (apt-get); run this as root or install them yourself" >&2
    exit 1
  fi
  # Updated once per run, and only when something is to be installed.
  if [ -z "${apt_updated:-}" ]; then
    apt-get update
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}

ensure() {
  if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
    apt_install redis-server redis-tools
  fi
  if ! redis_up; then
    if [ "$redis_url" != "redis://127.0.0.1:6379" ]; then
      echo "test-services: TEST_REDIS_URL=$redis_url does not answer, and only the default Redis is started here" >&2
      exit 1
    fi
    mkdir -p /var/lib/redis /var/log/redis
    # Nothing on disk: the tests clean their own keys, and a restart starts empty.
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log
    for _ in $(seq 1 50); do
      redis_up && break
      sleep 0.2
    done
    if ! redis_up; then
      echo "test-services: redis-server did not answer within 10 s; its log:" >&2
      tail -n 30 /var/log/redis/ci.log >&2 || true
      exit 1
    fi
  fi
  if [ ! -x "$chromium" ]; then
    if [ "$chromium" != /usr/bin/chromium ]; then
      echo "test-services: CHROMIUM_PATH=$chromium is missing, and only Debian's chromium is installed here" >&2
      exit 1
    fi
    apt_install chromium
  fi
  if ! command -v systemd-analyze >/dev/null 2>&1; then
    apt_install systemd
  fi
}

# The container test (npm run test:container): podman, runc (crun refuses this host's cgroups, docs/container.md)
# and debootstrap (the local base image, scripts/container-base.sh).
container() {
  local want=() tool
  for tool in podman runc debootstrap slirp4netns; do
    command -v "$tool" >/dev/null 2>&1 || want+=("$tool")
  done
  if [ "${#want[@]}" -gt 0 ]; then apt_install "${want[@]}"; fi
  for tool in podman runc debootstrap slirp4netns; do
    command -v "$tool" >/dev/null 2>&1 || {
      echo "test-services: $tool is still missing" >&2
      exit 1
    }
  done
  echo "test-services: $(podman --version), $(runc --version | head -n 1)"
  exit 0
}

case "${1:-}" in
  check) ;;
  ensure) ensure ;;
  container) container ;;
  *)
    echo "usage: bash scripts/test-services.sh check|ensure|container" >&2
    exit 2
    ;;
esac

problems="$(missing)"
if [ -n "$problems" ]; then
  {
    echo "The tests need services this machine lacks:"
    while IFS= read -r line; do echo "  - $line"; done <<<"$problems"
    echo "Run 'npm run test:all' (as root: it installs and starts them with apt-get, then runs npm test),"
    echo "or 'bash scripts/test-services.sh ensure' once, then 'npm test'."
  } >&2
  exit 1
fi
if [ "$1" = ensure ]; then
  echo "test-services: $(redis-cli -u "$redis_url" info server | grep -m1 '^redis_version' | tr -d '\r'), $("$chromium" --version)"
fi
