#!/usr/bin/env bash
# Builds, once, the clean Debian 12 root the package test installs the .deb into
# (test/integration/package.test.ts): `debootstrap --variant=minbase bookworm`, i.e. only Debian's
# required packages and apt, no Node.js, no containerd. Prints the root's path; the test copies it
# and never writes the cached one. No upstream counterpart (Kubernetes' packages are tested by
# kubernetes/release's krel on its build hosts).
#
#   bash scripts/build-package-root.sh     build unless cached; print the root's path
#
# Lives in $TSKUBELET_K8S_CACHE/package-root (default /var/cache/tskubelet-bed/package-root) as
# root-<hash>/ (hash of this script, the library it sources (scripts/lib/debian-mirror.sh), the
# mirror and the architecture: editing the recipe rebuilds).
# The .debs come from the node VM's download cache (scripts/build-node-vm.sh downloads a superset):
# a machine that built the VM image downloads nothing here. ~1 minute cold on 2 cores. Root only.
set -euo pipefail

SCRIPT="$(readlink -f "${BASH_SOURCE[0]}")"
BED_CACHE="${TSKUBELET_K8S_CACHE:-/var/cache/tskubelet-bed}"
CACHE="$BED_CACHE/package-root"
# Shared with scripts/build-node-vm.sh, under its lock (debootstrap writes the .debs it downloads).
DEBS="$BED_CACHE/node-vm/debs"
DEBS_LOCK="$BED_CACHE/node-vm/build.lock"
SUITE=bookworm

die() {
  echo "build-package-root: $*" >&2
  exit 1
}

# mirror() and recipe_hash() (whose hash covers the library too), shared with scripts/build-node-vm.sh.
# shellcheck source=lib/debian-mirror.sh
source "$(dirname "$SCRIPT")/lib/debian-mirror.sh"
MIRROR="$(mirror)"
RECIPE="$(recipe_hash "$MIRROR" "$SCRIPT")"
ROOT="$CACHE/root-$RECIPE"

if [[ -f "$ROOT/.tskubelet-package-root" ]]; then
  echo "$ROOT"
  exit 0
fi
[[ "$(id -u)" == 0 ]] || die "must run as root (debootstrap)"
command -v debootstrap >/dev/null || die "debootstrap not found (scripts/setup.sh installs it)"

mkdir -p "$CACHE" "$DEBS"
exec 9>"$CACHE/build.lock"
flock 9
if [[ -f "$ROOT/.tskubelet-package-root" ]]; then
  echo "$ROOT"
  exit 0
fi

started=$(date +%s)
work="$ROOT.tmp"
# debootstrap mounts nothing for minbase, but a failed run may leave /proc mounted in the target.
cleanup() {
  local m
  while read -r m; do
    umount -l "$m" || echo "build-package-root: cannot unmount $m" >&2
  done < <(awk -v w="$work/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r)
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
cleanup
echo "build-package-root: debootstrap --variant=minbase $SUITE from $MIRROR" >&2
if ! flock "$DEBS_LOCK" nice -n 10 debootstrap --variant=minbase --cache-dir="$DEBS" "$SUITE" "$work" "$MIRROR" \
  >"$CACHE/debootstrap.log" 2>&1; then
  tail -n 30 "$CACHE/debootstrap.log" >&2
  die "debootstrap failed (above; whole log in $CACHE/debootstrap.log)"
fi
# Old roots of an earlier recipe go; the new one is complete before it gets its name.
find "$CACHE" -maxdepth 1 -name 'root-*' ! -name "root-$RECIPE*" -exec rm -rf --one-file-system {} +
touch "$work/.tskubelet-package-root"
mv "$work" "$ROOT"
trap - EXIT
echo "build-package-root: built $ROOT in $(($(date +%s) - started))s" >&2
echo "$ROOT"
