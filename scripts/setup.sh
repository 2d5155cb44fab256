#!/usr/bin/env bash
# Installs the system packages the test bed needs (containerd, runc, CNI plugins, busybox for the
# local images, iptables/iproute2 for the bridge network). Idempotent: when everything is already
# installed it only checks, and never runs apt-get. Must run as root (CI and the dev VMs are root).
# Node dependencies are not installed here: that is `npm ci`.
set -euo pipefail

PACKAGES=(
  containerd                   # the CRI runtime (1.6 on bookworm); also ships `ctr`
  runc                         # the OCI runtime containerd's runc shim drives
  containernetworking-plugins  # bridge, host-local, portmap, loopback in /usr/lib/cni
  busybox-static               # /bin/busybox: the only binary in the local test images
  iptables                     # bridge ipMasq and portmap rules
  iproute2                     # `ip`, used by CNI plugins and for debugging
  tar                          # deterministic image layers (--sort=name)
  gzip
)

if [[ "$(id -u)" != 0 ]]; then
  echo "setup.sh: must run as root" >&2
  exit 1
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
  if [[ "$status" != installed ]]; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup.sh: all packages present (${PACKAGES[*]})"
else
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Fail here, not in the middle of a test run, if something is still not usable.
for bin in containerd ctr runc busybox iptables ip tar gzip /usr/lib/cni/bridge /usr/lib/cni/host-local \
  /usr/lib/cni/portmap /usr/lib/cni/loopback; do
  if ! command -v "$bin" >/dev/null 2>&1; then
    echo "setup.sh: $bin not found after install" >&2
    exit 1
  fi
done
