# shellcheck shell=bash
# Sourced by the build scripts (scripts/build-kubernetes.sh, scripts/build-node-vm.sh,
# test/harness/kubeadm/build-kubeadm.sh, test/harness/conformance/build-e2e.sh): their log lines,
# their exit on a fatal error, the lock that keeps one build at a time, and the elapsed-time clock.
# No upstream counterpart.

# build_prologue NAME: `log` and `die` prefixed with NAME, `elapsed` counting from now.
build_prologue() {
  BUILD_NAME="$1"
  BUILD_STARTED=$(date +%s)
}
log() { echo "${BUILD_NAME:-build}: $*"; }
die() {
  echo "${BUILD_NAME:-build}: $*" >&2
  exit 1
}
elapsed() { echo "$(($(date +%s) - BUILD_STARTED))s"; }

# build_lock FILE: holds FILE's lock (fd 9) until the script exits; a second caller waits here.
# `elapsed` counts from when the lock is held: the wait for another build is not this build's time.
build_lock() {
  exec 9>"$1"
  if ! flock -n 9; then
    log "another build holds $1; waiting for it"
    flock 9
  fi
  BUILD_STARTED=$(date +%s)
}
