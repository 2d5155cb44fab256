#!/usr/bin/env bash
# Builds the node conformance suite's binaries from the Kubernetes 1.20.2 source tree the cluster bed
# already built (scripts/build-kubernetes.sh): test/e2e/e2e.test and ginkgo through the tree's
# Makefile, and the binaries of two test images (agnhost, nonewprivs' nnp) with plain `go build`
# (GOPATH mode, CGO off, as the images' own Makefiles do). Copies them into $BIN_DIR beside the
# control-plane binaries. Holds the same lock as build-kubernetes.sh: one build in the tree at a time.
#
# usage: build-e2e.sh SRC_DIR BIN_DIR LOCK_FILE
set -euo pipefail

SRC_DIR="$1"
BIN_DIR="$2"
LOCK="$3"

# shellcheck source=SCRIPTDIR/../../../scripts/lib/build-prologue.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/lib/build-prologue.sh"
build_prologue build-e2e

[[ -f "$SRC_DIR/.tskubelet-generated" ]] || die "$SRC_DIR has no generated files yet (run scripts/build-kubernetes.sh first)"

build_lock "$LOCK"
export GOPROXY=off GOTOOLCHAIN=local
cd "$SRC_DIR"
out="$SRC_DIR/_output/local/bin/linux/$(go env GOARCH)"
mkdir -p "$BIN_DIR"

install_bin() { # install_bin FROM NAME
  cp "$1" "$BIN_DIR/$2.tmp"
  mv "$BIN_DIR/$2.tmp" "$BIN_DIR/$2"
}

if [[ ! -x "$BIN_DIR/e2e.test" || ! -x "$BIN_DIR/ginkgo" ]]; then
  log "make WHAT=\"test/e2e/e2e.test vendor/github.com/onsi/ginkgo/ginkgo\""
  nice -n 10 make WHAT="test/e2e/e2e.test vendor/github.com/onsi/ginkgo/ginkgo"
  install_bin "$out/e2e.test" e2e.test
  install_bin "$out/ginkgo" ginkgo
  log "e2e.test and ginkgo built ($(elapsed))"
fi

# The Makefile's GOPATH (it links the tree as k8s.io/kubernetes there) and build cache, reused.
gopath="$SRC_DIR/_output/local/go"
[[ -d "$gopath/src/k8s.io/kubernetes" ]] || die "$gopath/src/k8s.io/kubernetes missing (the make above sets it up)"
build_image_bin() { # build_image_bin PACKAGE NAME
  log "go build ./$1 -> $2"
  (cd "$gopath/src/k8s.io/kubernetes" &&
    GOPATH="$gopath" GOCACHE="$gopath/cache" GO111MODULE=off CGO_ENABLED=0 \
      nice -n 10 go build -ldflags "-s -w" -o "$BIN_DIR/$2.tmp" "./$1")
  mv "$BIN_DIR/$2.tmp" "$BIN_DIR/$2"
}
[[ -x "$BIN_DIR/agnhost" ]] || build_image_bin test/images/agnhost agnhost
[[ -x "$BIN_DIR/nnp" ]] || build_image_bin test/images/nonewprivs nnp
log "done in $(elapsed)"
