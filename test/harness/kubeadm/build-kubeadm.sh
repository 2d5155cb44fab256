#!/usr/bin/env bash
# Builds kubeadm 1.20.2 (cmd/kubeadm) from the Kubernetes source tree the cluster bed already unpacked
# and code-generated (scripts/build-kubernetes.sh), through the tree's Makefile as the control-plane
# binaries are, and copies it into $BIN_DIR beside them. Holds the same lock as build-kubernetes.sh:
# one build in the tree at a time. About 40 s on 2 cores with the tree's warm build cache.
#
# The tree vendors github.com/modern-go/reflect2 v1.0.1, which calls the Go runtime's map iterator with
# the pre-1.18 signature: built with Debian 12's Go 1.19, every YAML encoding of a map (kubeadm's
# upload-config, its kubelet config.yaml) dies with "unexpected fault address" (modern-go/reflect2#26,
# fixed in v1.0.2). kubeadm is built with v1.0.2's sources from Debian's golang-github-modern-go-reflect2-dev
# laid over the vendored ones through `go build -overlay`: the tree itself is not changed.
#
# usage: build-kubeadm.sh SRC_DIR BIN_DIR LOCK_FILE
set -euo pipefail

SRC_DIR="$1"
BIN_DIR="$2"
LOCK="$3"
REFLECT2_PKG=golang-github-modern-go-reflect2-dev
REFLECT2_SRC=/usr/share/gocode/src/github.com/modern-go/reflect2

# shellcheck source=SCRIPTDIR/../../../scripts/lib/build-prologue.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/lib/build-prologue.sh"
build_prologue build-kubeadm

[[ -f "$SRC_DIR/.tskubelet-generated" ]] || die "$SRC_DIR has no generated files yet (run scripts/build-kubernetes.sh first)"

build_lock "$LOCK"
if [[ -x "$BIN_DIR/kubeadm" ]]; then
  log "kubeadm present in $BIN_DIR (built by another caller)"
  exit 0
fi

if [[ ! -f "$REFLECT2_SRC/go_above_118.go" ]]; then
  log "installing $REFLECT2_PKG (reflect2 v1.0.2 sources)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends "$REFLECT2_PKG" || {
    apt-get update -q
    apt-get install -y -q --no-install-recommends "$REFLECT2_PKG"
  }
fi
[[ -f "$REFLECT2_SRC/go_above_118.go" ]] || die "$REFLECT2_SRC/go_above_118.go missing after installing $REFLECT2_PKG"

# The overlay: each vendored reflect2 file replaced by v1.0.2's or removed, v1.0.2's new files added.
# Under both the tree's path and the GOPATH link the Makefile builds through (_output/local/go/src/k8s.io/kubernetes).
overlay="$SRC_DIR/_output/tskubelet-reflect2-overlay.json"
mkdir -p "$SRC_DIR/_output"
{
  echo '{"Replace": {'
  sep=""
  for root in "$SRC_DIR" "$SRC_DIR/_output/local/go/src/k8s.io/kubernetes"; do
    vendored="$root/vendor/github.com/modern-go/reflect2"
    for f in "$SRC_DIR"/vendor/github.com/modern-go/reflect2/*.go "$SRC_DIR"/vendor/github.com/modern-go/reflect2/*.s "$REFLECT2_SRC"/*.go "$REFLECT2_SRC"/*.s; do
      name=$(basename "$f")
      if [[ -f "$REFLECT2_SRC/$name" ]]; then to="$REFLECT2_SRC/$name"; else to=""; fi
      printf '%s"%s": "%s"\n' "$sep" "$vendored/$name" "$to"
      sep=","
    done
  done
  echo '}}'
} >"$overlay.tmp"
# A file named in both lists appears twice; JSON objects keep the last, which is the same value.
mv "$overlay.tmp" "$overlay"

# The tree vendors every dependency and the module proxy is unreachable: forbid it outright.
export GOPROXY=off GOTOOLCHAIN=local
cd "$SRC_DIR"
out="$SRC_DIR/_output/local/bin/linux/$(go env GOARCH)"
# hack/make-rules/build.sh passes arguments that start with a dash to `go install` as flags.
log "make WHAT=\"-overlay=$overlay cmd/kubeadm\""
nice -n 10 make WHAT="-overlay=$overlay cmd/kubeadm"
[[ -x "$out/kubeadm" ]] || die "make finished but $out/kubeadm is missing"
mkdir -p "$BIN_DIR"
cp "$out/kubeadm" "$BIN_DIR/kubeadm.tmp"
mv "$BIN_DIR/kubeadm.tmp" "$BIN_DIR/kubeadm"
"$BIN_DIR/kubeadm" version -o short
log "done in $(elapsed)"
