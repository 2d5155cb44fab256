#!/usr/bin/env bash
# Builds dist/: src/ (and bench/lib/eld-probe.ts, which the benchmark preloads into tskubelet)
# compiled to plain JavaScript by tsconfig.build.json, with the .proto files beside the JS that loads
# them. bin/tskubelet runs dist/ so the kubelet does not pay for Node's TypeScript type stripping
# (~17 MiB resident); tests keep running the .ts sources.
#
#   bash scripts/build.sh             build now
#   bash scripts/build.sh --if-stale  build only if a source is newer than the last build (one line
#                                     on stderr when it does); what bin/tskubelet calls each start,
#                                     ~10 ms when nothing changed
#
# Concurrent callers serialize on a lock; the new tree is built aside and swapped in whole.
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
cd "$root"
# The caller's NODE_OPTIONS (the benchmark's --import of the probe, --cpu-prof) are for the kubelet,
# not for the compiler.
unset NODE_OPTIONS

node=node_modules/.bin/node
tsc=node_modules/typescript/bin/tsc
stamp=dist/.build-stamp
# Everything the build reads: a change to any of these (or a file added to or removed from src/,
# which changes a directory's mtime) makes dist/ stale.
inputs=(src bench/lib/eld-probe.ts tsconfig.json tsconfig.build.json package.json scripts/build.sh)

stale() {
  [[ ! -f "$stamp" ]] || [[ -n "$(find "${inputs[@]}" -newer "$stamp" -print -quit)" ]]
}

if_stale=false
case "${1:-}" in
  --if-stale) if_stale=true ;;
  '') ;;
  *)
    echo "usage: scripts/build.sh [--if-stale]" >&2
    exit 2
    ;;
esac

for f in "$node" "$tsc"; do
  if [[ ! -e "$f" ]]; then
    echo "tskubelet build: $f is missing; run 'npm ci' (or bash scripts/install-deps.sh) first" >&2
    exit 1
  fi
done

if $if_stale && ! stale; then exit 0; fi
mkdir -p node_modules/.cache
exec 9>node_modules/.cache/tskubelet-build.lock
flock 9
# Checked again under the lock: a concurrent caller may have just built.
if $if_stale; then
  stale || exit 0
  echo "tskubelet: sources changed since the last build; rebuilding dist/ (scripts/build.sh)" >&2
fi

next=dist.next
rm -rf "$next"
mkdir -p "$next"
# Stamped before compiling, so a source saved during the build makes the result stale.
touch "$next/.build-stamp"
if ! out="$("$node" "$tsc" -p tsconfig.build.json --outDir "$next" 2>&1)"; then
  rm -rf "$next"
  printf '%s\n' "$out" >&2
  echo "tskubelet build: tsc -p tsconfig.build.json failed (output above); dist/ left as it was" >&2
  exit 1
fi
# Files the code loads beside itself (path.join(import.meta.dirname, ...)).
find src -name '*.proto' -exec cp --parents {} "$next/" \;
# The node console's page (HTML, CSS and its one JS module), served from beside node-console.js.
cp -r --parents src/console/static "$next/"
# src/cli/main.ts reads the version from ../../package.json, i.e. dist/package.json here; it also
# keeps dist/ an ES module scope.
"$node" -e '
  const fs = require("node:fs");
  const { name, version } = JSON.parse(fs.readFileSync("package.json", "utf8"));
  fs.writeFileSync(process.argv[1], JSON.stringify({ name, version, private: true, type: "module" }, null, 2) + "\n");
' "$next/package.json"

rm -rf dist.old
[[ -d dist ]] && mv dist dist.old
mv "$next" dist
rm -rf dist.old
