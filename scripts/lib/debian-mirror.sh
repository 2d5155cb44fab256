# shellcheck shell=bash
# Sourced by scripts/build-node-vm.sh and scripts/build-package-root.sh: the Debian mirror they
# debootstrap from, and the recipe hash that names their cached builds. No upstream counterpart.

# The Debian mirror the machine already uses (deb822 sources first, then sources.list); overridable.
mirror() {
  if [[ -n "${TSKUBELET_DEBIAN_MIRROR:-}" ]]; then
    echo "$TSKUBELET_DEBIAN_MIRROR"
    return
  fi
  local m=""
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    m="$(awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)"
  fi
  if [[ -z "$m" && -f /etc/apt/sources.list ]]; then
    m="$(awk '$1 == "deb" && $2 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }' /etc/apt/sources.list)"
  fi
  echo "${m:-http://deb.debian.org/debian}"
}

DEBIAN_MIRROR_LIB="$(readlink -f "${BASH_SOURCE[0]}")"

# recipe_hash MIRROR FILE...: 16 hex digits over the text of the files (the calling script) and of
# this library, the mirror and the architecture: editing any of them names a new build. Text, not
# paths: two checkouts with the same scripts share one build.
recipe_hash() {
  local mirror="$1"
  shift
  (cat "$@" "$DEBIAN_MIRROR_LIB" && echo "mirror=$mirror arch=$(uname -m)") | sha256sum | cut -c1-16
}
