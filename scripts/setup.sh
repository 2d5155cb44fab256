#!/usr/bin/env bash
# Installs the system packages the test bed needs (containerd, runc, CNI plugins, busybox for the
# local images, iptables/iproute2 for the bridge network; etcd, Go, rsync and openssl for the cluster
# bed, whose Kubernetes binaries scripts/build-kubernetes.sh builds from Debian's source package, so a
# deb-src line is added too; QEMU, debootstrap and the ssh client for the node VM that
# scripts/build-node-vm.sh builds). Idempotent: when everything is already installed it only checks, and
# never runs apt-get. Must run as root (CI and the dev VMs are root).
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
  etcd-server                  # etcd 3.4 behind the cluster bed's kube-apiserver
  golang-go                    # Go 1.19: builds kube-apiserver & co. (scripts/build-kubernetes.sh)
  rsync                        # `make generated_files` in the Kubernetes tree needs it
  make
  openssl                      # the cluster bed's CA and certificates
  docker-registry              # loopback image registries for pull tests (test/harness/registry.ts)
  skopeo                       # pushes the bed's OCI archives to them
  apache2-utils                # `htpasswd -B`: bcrypt credentials for the registry that wants auth
  chromium                     # the node console's browser test (test/integration/console.test.ts)
  qemu-system-x86              # the node VM (systemd + cgroup v2): test/harness/node-vm.ts boots it
  qemu-utils                   # `qemu-img`: the copy-on-write overlay each VM boot starts from
  debootstrap                  # scripts/build-node-vm.sh: the VM's Debian 12 root filesystem
  e2fsprogs                    # `mkfs.ext4 -d`: the VM's disk image from that root filesystem
  openssh-client               # `ssh`/`ssh-keygen`: the harness runs commands in the VM over ssh
)

# build-kubernetes.sh runs `apt-get source kubernetes`, which needs a deb-src twin of the binary sources.
DEB_SRC_LIST=/etc/apt/sources.list.d/tskubelet-debian-src.sources

if [[ "$(id -u)" != 0 ]]; then
  echo "setup.sh: must run as root" >&2
  exit 1
fi

need_update=0
if ! grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    echo "setup.sh: adding $DEB_SRC_LIST (deb-src twin of debian.sources)"
    sed -E 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >"$DEB_SRC_LIST.tmp"
    mv "$DEB_SRC_LIST.tmp" "$DEB_SRC_LIST"
    need_update=1
  else
    echo "setup.sh: no deb-src line and no debian.sources to derive one from; build-kubernetes.sh will fail" >&2
  fi
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
  if ((need_update)); then apt-get update -q; fi
else
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Fail here, not in the middle of a test run, if something is still not usable.
for bin in containerd ctr runc busybox iptables ip tar gzip etcd go rsync make openssl \
  qemu-system-x86_64 qemu-img debootstrap mkfs.ext4 ssh ssh-keygen \
  /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/portmap /usr/lib/cni/loopback; do
  if ! command -v "$bin" >/dev/null 2>&1; then
    echo "setup.sh: $bin not found after install" >&2
    exit 1
  fi
done
