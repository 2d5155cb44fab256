#!/usr/bin/env bash
# Builds kubeadm 1.20.2 (cmd/kubeadm) from the Kubernetes source tree the cluster bed already unpacked
# and code-generated (scripts/build-kubernetes.sh), through the tree's Makefile as the control-plane
# binaries are, and copies it into $BIN_DIR beside them. Holds the same lock as build-kubernetes.sh:
# one build in the tree at a time. About 2-3 minutes on 2 cores with the tree's warm build cache.
#
# usage: build-kubeadm.sh SRC_DIR BIN_DIR LOCK_FILE
set -euo pipefail

SRC_DIR="$1"
BIN_DIR="$2"
LOCK="$3"

log() { echo "build-kubeadm: $*"; }
die() {
  echo "build-kubeadm: $*" >&2
  exit 1
}

[[ -f "$SRC_DIR/.tskubelet-generated" ]] || die "$SRC_DIR has no generated files yet (run scripts/build-kubernetes.sh first)"

exec 9>"$LOCK"
if ! flock -n 9; then
  log "another build holds $LOCK; waiting for it"
  flock 9
fi
if [[ -x "$BIN_DIR/kubeadm" ]]; then
  log "kubeadm present in $BIN_DIR (built by another caller)"
  exit 0
fi

started=$(date +%s)
# The tree vendors every dependency and the module proxy is unreachable: forbid it outright.
export GOPROXY=off GOTOOLCHAIN=local
cd "$SRC_DIR"
out="$SRC_DIR/_output/local/bin/linux/$(go env GOARCH)"
log "make WHAT=cmd/kubeadm"
nice -n 10 make WHAT=cmd/kubeadm
[[ -x "$out/kubeadm" ]] || die "make finished but $out/kubeadm is missing"
mkdir -p "$BIN_DIR"
cp "$out/kubeadm" "$BIN_DIR/kubeadm.tmp"
mv "$BIN_DIR/kubeadm.tmp" "$BIN_DIR/kubeadm"
"$BIN_DIR/kubeadm" version -o short
log "done in $(($(date +%s) - started))s"
