#!/usr/bin/env bash
# Builds the node VM image test/harness/node-vm.ts boots: Debian 12 with systemd as PID 1, a pure
# cgroup v2 hierarchy (the kernel command line the harness passes), containerd + runc with the
# systemd cgroup driver, logind, openssh and DHCP, i.e. a node as operators run them in 2026, which
# these machines (no systemd, hybrid cgroup v1) are not. The recipe is the one verified in
# ENVIRONMENT.md ("Node VM"); there is no upstream counterpart (kubernetes/test/e2e_node runs its node
# tests on cloud VM images instead: test/e2e_node/remote).
#
#   bash scripts/build-node-vm.sh          build unless the cached image is current
#   bash scripts/build-node-vm.sh --check  exit 0 when the cached image is current, 1 when not
#
# The image lives in $TSKUBELET_K8S_CACHE/node-vm (default /var/cache/tskubelet-bed/node-vm):
# current -> image-<hash>/ with disk.img (raw ext4, the root filesystem; boots always go through a
# copy-on-write overlay, so it is never written), vmlinuz + initrd.img (booted directly by QEMU),
# id_ed25519 (root's ssh key), versions.txt, and recipe.sha256, the stamp. <hash> covers this script,
# the library it sources (scripts/lib/debian-mirror.sh) and the Debian mirror: editing the recipe
# rebuilds, running it again otherwise only checks. The downloaded .debs stay in node-vm/debs, so a
# rebuild does not download again. Serialised by a lock.
# Takes ~2-3 minutes on 2 cores the first time (mostly debootstrap). Must run as root.
set -euo pipefail

SCRIPT="$(readlink -f "${BASH_SOURCE[0]}")"
CACHE="${TSKUBELET_K8S_CACHE:-/var/cache/tskubelet-bed}/node-vm"
SUITE=bookworm
DISK_SIZE=8G
# The packages of the verified recipe, plus what a kubelet node needs besides: CNI plugins and
# iptables (the pod bridge), procps and curl (for tests reading the node).
PACKAGES=(
  linux-image-amd64 initramfs-tools zstd kmod udev
  systemd systemd-sysv dbus
  containerd runc containernetworking-plugins iptables iproute2
  openssh-server ca-certificates busybox-static procps curl
)

log() { echo "build-node-vm: $*"; }
die() {
  echo "build-node-vm: $*" >&2
  exit 1
}

# mirror() and recipe_hash() (whose hash covers the library too), shared with scripts/build-package-root.sh.
# shellcheck source=lib/debian-mirror.sh
source "$(dirname "$SCRIPT")/lib/debian-mirror.sh"
MIRROR="$(mirror)"
RECIPE="$(recipe_hash "$MIRROR" "$SCRIPT")"
IMAGE="$CACHE/image-$RECIPE"
FILES=(disk.img vmlinuz initrd.img id_ed25519 id_ed25519.pub versions.txt recipe.sha256)

current() {
  local f
  [[ "$(readlink "$CACHE/current" 2>/dev/null)" == "image-$RECIPE" ]] || return 1
  for f in "${FILES[@]}"; do [[ -s "$CACHE/current/$f" ]] || return 1; done
  [[ "$(cat "$CACHE/current/recipe.sha256")" == "$RECIPE" ]]
}

if [[ "${1:-}" == --check ]]; then
  current
  exit
elif [[ -n "${1:-}" ]]; then
  die "usage: scripts/build-node-vm.sh [--check]"
fi

if current; then
  log "image current: $IMAGE"
  exit 0
fi
[[ "$(id -u)" == 0 ]] || die "must run as root (debootstrap, chroot, mkfs)"

mkdir -p "$CACHE"
exec 9>"$CACHE/build.lock"
if ! flock -n 9; then
  log "another build holds $CACHE/build.lock; waiting for it"
  flock 9
fi
if current; then
  log "image current: $IMAGE (built by the other caller)"
  exit 0
fi

started=$(date +%s)
elapsed() { echo "$(($(date +%s) - started))s"; }

bash "$(dirname "$SCRIPT")/setup.sh"

WORK="$CACHE/build.tmp"
ROOTFS="$WORK/rootfs"
# Unmounts whatever debootstrap or chroot left mounted under the work dir (a failed package script
# can leave /proc or /sys there) before removing it: rm must never walk into the host's /proc or /dev.
cleanup_work() {
  local m
  if [[ -d "$WORK" ]]; then
    while read -r m; do
      umount -l "$m" || echo "build-node-vm: cannot unmount $m" >&2
    done < <(awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r)
    rm -rf --one-file-system "$WORK"
  fi
}
trap cleanup_work EXIT
cleanup_work
mkdir -p "$ROOTFS" "$CACHE/debs"

# --- 1. the root filesystem --------------------------------------------------------------------------
log "debootstrap $SUITE from $MIRROR ($(elapsed) so far)"
include="$(
  IFS=,
  echo "${PACKAGES[*]}"
)"
if ! nice -n 10 debootstrap --include="$include" --cache-dir="$CACHE/debs" "$SUITE" "$ROOTFS" "$MIRROR" \
  >"$WORK/debootstrap.log" 2>&1; then
  tail -n 40 "$WORK/debootstrap.log" >&2
  [[ -f "$ROOTFS/debootstrap/debootstrap.log" ]] && tail -n 40 "$ROOTFS/debootstrap/debootstrap.log" >&2
  die "debootstrap failed (above)"
fi
log "debootstrap done ($(elapsed) so far)"

# --- 2. configuration ----------------------------------------------------------------------------------
put() { # put PATH MODE: stdin into ROOTFS/PATH
  mkdir -p "$(dirname "$ROOTFS$1")"
  cat >"$ROOTFS$1"
  chmod "$2" "$ROOTFS$1"
}

echo node-vm | put /etc/hostname 0644
printf '127.0.0.1 localhost\n127.0.1.1 node-vm\n::1 localhost ip6-localhost ip6-loopback\n' | put /etc/hosts 0644
# A fixed machine id: with an empty one every boot is a "first boot" (ConditionFirstBoot units,
# systemd-firstboot prompting on the console).
printf '%s\n' "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" | put /etc/machine-id 0444
echo '/dev/vda / ext4 rw,errors=remount-ro 0 1' | put /etc/fstab 0644
# User-mode networking: DHCP from QEMU's slirp, which also answers DNS at 10.0.2.3 (no resolver on
# the guest: nothing beyond the host is reachable anyway).
put /etc/systemd/network/20-wired.network 0644 <<'EOF'
[Match]
Name=en* eth*

[Network]
DHCP=ipv4
EOF
echo 'nameserver 10.0.2.3' | put /etc/resolv.conf 0644

# Root logs in on the serial console without a password (the console log is for diagnosis; a
# person attaching to it gets a shell).
put /etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf 0644 <<'EOF'
[Service]
ExecStart=
ExecStart=-/sbin/agetty -o '-p -f -- \\u' --keep-baud --autologin root 115200,57600,38400,9600 - $TERM
EOF

# 9p shares: the harness passes `tskubelet.share=TAG:PATH[:ro]` on the kernel command line for every
# host folder it exports (the checkout, node_modules' target), mounted at the same absolute path as
# on the host, so absolute symlinks between them resolve. Ordered before ssh: once the harness can
# log in, the shares are there.
put /usr/local/sbin/tskubelet-mount-shares 0755 <<'EOF'
#!/bin/sh
# Mounts the 9p shares named on the kernel command line (tskubelet.share=TAG:PATH[:ro]).
set -eu
modprobe 9pnet_virtio
status=0
for arg in $(cat /proc/cmdline); do
  case "$arg" in
    tskubelet.share=*) ;;
    *) continue ;;
  esac
  spec="${arg#tskubelet.share=}"
  tag="${spec%%:*}"
  rest="${spec#*:}"
  path="${rest%:ro}"
  opts=trans=virtio,version=9p2000.L,msize=524288,cache=loose
  [ "$path" != "$rest" ] && opts="$opts,ro"
  mkdir -p "$path"
  if mount -t 9p -o "$opts" "$tag" "$path"; then
    echo "tskubelet-mount-shares: $tag on $path ($opts)"
  else
    echo "tskubelet-mount-shares: cannot mount $tag on $path" >&2
    status=1
  fi
done
exit $status
EOF
put /etc/systemd/system/tskubelet-shares.service 0644 <<'EOF'
[Unit]
Description=Mount the host's 9p shares named on the kernel command line
After=local-fs.target systemd-modules-load.service
Before=ssh.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/tskubelet-mount-shares

[Install]
WantedBy=multi-user.target
EOF

# containerd: the packaged defaults with the systemd cgroup driver, as kubeadm nodes run it, and the
# pod bridge network the harness' own bed uses (containerd.ts), from the Debian CNI plugins.
chroot "$ROOTFS" containerd config default >"$WORK/containerd.toml"
grep -q 'SystemdCgroup = false' "$WORK/containerd.toml" || die "containerd's default config has no SystemdCgroup line"
sed -i -e 's/SystemdCgroup = false/SystemdCgroup = true/' \
  -e 's#bin_dir = "/opt/cni/bin"#bin_dir = "/usr/lib/cni"#' "$WORK/containerd.toml"
grep -q 'bin_dir = "/usr/lib/cni"' "$WORK/containerd.toml" || die "containerd's default config has no CNI bin_dir line"
put /etc/containerd/config.toml 0644 <"$WORK/containerd.toml"
put /etc/cni/net.d/10-tskubelet.conflist 0644 <<'EOF'
{
  "cniVersion": "1.0.0",
  "name": "tskubelet-node-vm",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "10.88.0.0/16" }]],
        "routes": [{ "dst": "0.0.0.0/0" }]
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF

# ssh: a key made for this image, root's only way in besides the serial console.
ssh-keygen -q -t ed25519 -N '' -C tskubelet-node-vm -f "$WORK/id_ed25519"
put /root/.ssh/authorized_keys 0600 <"$WORK/id_ed25519.pub"
chmod 0700 "$ROOTFS/root/.ssh"

# Units: networkd and the shares on; the periodic jobs that would compete for the guest's slow
# (emulated) CPUs during tests off.
chroot "$ROOTFS" systemctl enable systemd-networkd.service tskubelet-shares.service containerd.service ssh.service
# networking.service is ifupdown's (debootstrap's priority-important set brings it): networkd does
# the job, so it would only cost boot time.
chroot "$ROOTFS" systemctl mask apt-daily.timer apt-daily-upgrade.timer man-db.timer e2scrub_all.timer \
  fstrim.timer systemd-networkd-wait-online.service networking.service
# A lean image: no package lists or debs inside.
rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/archives/*.deb

{
  echo "built $(date -u +%FT%TZ) from $MIRROR ($SUITE), recipe $RECIPE"
  chroot "$ROOTFS" dpkg-query -W -f='${Package} ${Version}\n' linux-image-amd64 systemd containerd runc \
    containernetworking-plugins openssh-server libc6
} >"$WORK/versions.txt"

# --- 3. kernel, initramfs, disk ------------------------------------------------------------------------
shopt -s nullglob
kernels=("$ROOTFS"/boot/vmlinuz-*)
initrds=("$ROOTFS"/boot/initrd.img-*)
((${#kernels[@]} == 1 && ${#initrds[@]} == 1)) || die "expected one kernel and one initrd in $ROOTFS/boot, found ${kernels[*]} ${initrds[*]}"
cp "${kernels[0]}" "$WORK/vmlinuz"
cp "${initrds[0]}" "$WORK/initrd.img"

log "mkfs.ext4 $DISK_SIZE from the root filesystem ($(elapsed) so far)"
truncate -s "$DISK_SIZE" "$WORK/disk.img"
mkfs.ext4 -q -F -L node-vm -d "$ROOTFS" "$WORK/disk.img"
rm -rf --one-file-system "$ROOTFS"

echo "$RECIPE" >"$WORK/recipe.sha256"
for f in "${FILES[@]}"; do [[ -s "$WORK/$f" ]] || die "$WORK/$f missing after the build"; done

# --- 4. publish: the new image dir, then the `current` link switched in one rename ---------------------
rm -rf "$IMAGE"
mkdir -p "$IMAGE"
for f in "${FILES[@]}"; do mv "$WORK/$f" "$IMAGE/$f"; done
ln -sfn "image-$RECIPE" "$CACHE/current.tmp"
mv -T "$CACHE/current.tmp" "$CACHE/current"
# Older images go; a VM still running from one keeps its open files until it exits.
for old in "$CACHE"/image-*; do
  [[ "$old" == "$IMAGE" ]] || rm -rf "$old"
done
log "done in $(elapsed): $IMAGE ($(du -sh --apparent-size "$IMAGE/disk.img" | cut -f1) disk, $(du -sh "$IMAGE/disk.img" | cut -f1) used)"
cat "$IMAGE/versions.txt"
