#!/bin/sh
# /usr/bin/tskubelet of the .deb (scripts/package.sh): runs the bundled JavaScript with the Node.js 24
# the package ships, with the same node flags and malloc setting as the repository's bin/tskubelet
# (see there for the measurements). Paths are found from this script's real location, so the tree
# also runs where `dpkg -x` unpacked it; /usr/bin/kubelet (package tskubelet-kubelet) links here.
set -eu
self="$(readlink -f "$0")"
lib="${self%/bin/*}/lib/tskubelet"
# --max-semi-space-size=2 (MiB): a young generation that does not grow to 64 MiB in a burst and
# stay there. TSKUBELET_NODE_FLAGS replaces the flags (set it empty for none).
flags="${TSKUBELET_NODE_FLAGS-"--max-semi-space-size=2"}"
# glibc malloc: at most 2 arenas; an explicit MALLOC_ARENA_MAX in the environment wins.
MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
export MALLOC_ARENA_MAX
# The flags are words (no quoting inside), as bin/tskubelet reads them.
# shellcheck disable=SC2086
exec "$lib/node" $flags "$lib/js/cli/main.js" "$@"
