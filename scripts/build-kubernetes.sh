#!/usr/bin/env bash
# Builds the Kubernetes 1.20.2 control plane the cluster tests run against (kube-apiserver,
# kube-controller-manager, kube-scheduler) plus the upstream kubelet (the benchmark peer), from
# Debian's source package: no container registry or Go module proxy is reachable from these
# machines, and Debian does not package the server binaries.
#
# Binaries are cached outside the repo, in $TSKUBELET_K8S_CACHE/kubernetes-1.20.2/bin (default
# /var/cache/tskubelet-bed); the script rebuilds only when one of them is missing, so running it again
# is cheap. The source tree is kept in $CACHE/src (a later rebuild skips download and code generation).
# Takes about 8 minutes on 2 cores the first time. Must run as root (apt-get). Serialised by a lock.
set -euo pipefail

VERSION=1.20.2
CACHE="${TSKUBELET_K8S_CACHE:-/var/cache/tskubelet-bed}"
BIN_DIR="$CACHE/kubernetes-$VERSION/bin"
SRC_PARENT="$CACHE/src"
SRC_DIR="$SRC_PARENT/kubernetes-$VERSION"
COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler kubelet)

# shellcheck source=SCRIPTDIR/lib/build-prologue.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/build-prologue.sh"
build_prologue build-kubernetes

all_present() {
  local c
  for c in "${COMPONENTS[@]}"; do
    [[ -x "$BIN_DIR/$c" ]] || return 1
  done
}

if all_present; then
  log "all binaries present in $BIN_DIR (${COMPONENTS[*]})"
  exit 0
fi

[[ "$(id -u)" == 0 ]] || die "must run as root (it installs packages and writes $CACHE)"

mkdir -p "$CACHE"
# One build at a time: a second caller waits here, then finds the binaries present.
build_lock "$CACHE/build.lock"
if all_present; then
  log "all binaries present in $BIN_DIR (built by the other caller)"
  exit 0
fi


# --- 1. the deb-src line and the build dependencies (golang-go, rsync, make): setup.sh owns them ------
bash "$(dirname "$(readlink -f "$0")")/setup.sh"
apt_updated=0
apt_update() {
  if ((apt_updated == 0)); then
    log "apt-get update"
    apt-get update -q
    apt_updated=1
  fi
}
command -v go >/dev/null || die "go not found after installing golang-go"
log "$(go version)"

# --- 2. the source tree -----------------------------------------------------------------------------
mkdir -p "$SRC_PARENT"
if [[ ! -f "$SRC_DIR/.tskubelet-unpacked" ]]; then
  shopt -s nullglob
  tarballs=("$SRC_PARENT"/kubernetes_*"$VERSION".orig.tar.gz)
  if ((${#tarballs[@]} == 0)); then
    # Bookworm's source package is versioned 1.20.5+really1.20.2 (the 1.20.2 tree). The download can
    # fail on a stale index: refresh once and retry.
    log "downloading Debian source package kubernetes $VERSION into $SRC_PARENT"
    if ! (cd "$SRC_PARENT" && apt-get source -q --download-only kubernetes); then
      apt_updated=0
      apt_update
      (cd "$SRC_PARENT" && apt-get source -q --download-only kubernetes)
    fi
    tarballs=("$SRC_PARENT"/kubernetes_*"$VERSION".orig.tar.gz)
  fi
  ((${#tarballs[@]} > 0)) || die "no kubernetes_*${VERSION}.orig.tar.gz in $SRC_PARENT after download"
  log "unpacking ${tarballs[0]} into $SRC_DIR"
  rm -rf "$SRC_DIR" "$SRC_DIR.tmp"
  mkdir -p "$SRC_DIR.tmp"
  tar -xzf "${tarballs[0]}" -C "$SRC_DIR.tmp" --strip-components=1
  [[ -f "$SRC_DIR.tmp/Makefile" && -d "$SRC_DIR.tmp/vendor" ]] || die "unexpected tarball layout in ${tarballs[0]}"
  touch "$SRC_DIR.tmp/.tskubelet-unpacked"
  mv "$SRC_DIR.tmp" "$SRC_DIR"
fi

# --- 3. build -----------------------------------------------------------------------------------------
# The Makefile keeps its GOPATH and Go build cache inside the tree (_output/local/go), i.e. under the
# cache dir: they survive between runs and never touch the repo. The tree vendors every dependency;
# the module proxy is unreachable, so forbid it outright rather than wait for a network timeout.
export GOPROXY=off
export GOTOOLCHAIN=local

cd "$SRC_DIR"
if [[ ! -f .tskubelet-generated ]]; then
  log "make generated_files (a few minutes; $(elapsed) so far)"
  nice -n 10 make generated_files
  touch .tskubelet-generated
fi

what=""
for c in "${COMPONENTS[@]}"; do what+="cmd/$c "; done
log "make WHAT=\"${what% }\" ($(elapsed) so far)"
nice -n 10 make WHAT="${what% }"

out="$SRC_DIR/_output/local/bin/linux/$(go env GOARCH)"
mkdir -p "$BIN_DIR"
for c in "${COMPONENTS[@]}"; do
  [[ -x "$out/$c" ]] || die "make finished but $out/$c is missing"
  cp "$out/$c" "$BIN_DIR/$c.tmp"
  mv "$BIN_DIR/$c.tmp" "$BIN_DIR/$c"
done
"$BIN_DIR/kube-apiserver" --version
log "done in $(elapsed): ${COMPONENTS[*]} in $BIN_DIR"
