#!/usr/bin/env bash
# Builds dist/, what bin/tskubelet and the Debian package (scripts/package.sh) run:
#   dist/js/cli/main.js    one esbuild bundle of src/cli/main.ts and its dependencies, with the
#                          manifest decode worker as a second entry and shared code in chunks; the
#                          .proto files and the console's static/ beside it (the code loads them
#                          from import.meta.dirname), and per file a line table for the logger's
#                          `file:line` (<file>.positions.json, src/util/source-positions.ts)
#   dist/package.json      name and version (main.js reads ../../package.json)
#   dist/bench/lib/eld-probe.js  the benchmark's event-loop probe, preloaded into tskubelet
# One bundle rather than a tree of compiled modules: measured on this 2-core machine, `tskubelet
# version` peaks at ~74 MiB resident instead of ~80 and takes 0.15 s of CPU instead of 0.35 (no
# 350-module graph to resolve, compile and keep; the package's own measure of an idle kubelet was
# 78 against 88 MiB). Tests keep running the .ts sources.
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
esbuild="${ESBUILD:-node_modules/.bin/esbuild}"
stamp=dist/.build-stamp
# Everything the build reads: a change to any of these (or a file added to or removed from src/,
# which changes a directory's mtime) makes dist/ stale.
inputs=(src bench/lib/eld-probe.ts package.json package-lock.json scripts/build.sh scripts/position-tables.ts)

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

for f in "$node" "$esbuild"; do
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
fail() {
  rm -rf "$next"
  echo "tskubelet build: $*; dist/ left as it was" >&2
  exit 1
}

# Files the code reads beside itself (import.meta.dirname / import.meta.url): each is handled below.
# A new one would be missing from the bundle's directory, so it stops the build here, not a node.
known_meta=(
  src/cli/main.ts                         # ../../package.json: dist/package.json
  src/console/static-files.ts             # static/
  src/podsource/offload.ts                # ./decode-worker.js (a second entry point)
  src/prober/grpc-probe.ts                # health.proto
  src/runtime/containerd-events/stream.ts # events.proto, task.proto, marker.proto
  src/runtime/cri/h2-invoker.ts           # api.proto
  src/util/node-http.ts                   # createRequire(import.meta.url): nothing to copy
  src/volume/csi/protos.ts                # csi.proto, pluginregistration.proto
)
mapfile -t found_meta < <(grep -rl --include='*.ts' 'import\.meta' src |
  grep -vE '\.test\.ts$|/testing\.ts$|/fake-[^/]*\.ts$' | sort)
if [[ "${found_meta[*]}" != "$(printf '%s\n' "${known_meta[@]%% *}" | sort | xargs)" ]]; then
  fail "the files using import.meta changed (now: ${found_meta[*]}); make sure what they load is copied beside the bundle, then update known_meta"
fi

js="$next/js/cli"
# One directory for every output: the chunks' import.meta.dirname is then the entry's, where the
# .proto files, static/ and decode-worker.js are. ESM bundles of CommonJS packages (proto-loader,
# protobufjs) call require() for Node's modules: the banner gives them one.
if ! out="$("$esbuild" src/cli/main.ts src/podsource/decode-worker.ts \
  --bundle --platform=node --format=esm --target=node24 --splitting \
  --outdir="$js" --entry-names='[name]' --chunk-names='chunk-[hash]' \
  --sourcemap=external --legal-comments=eof --log-level=warning \
  --banner:js="import { createRequire as __tskubeletRequire } from 'node:module'; const require = __tskubeletRequire(import.meta.url);" 2>&1)"; then
  printf '%s\n' "$out" >&2
  fail "esbuild failed (output above)"
fi
[[ -f "$js/main.js" && -f "$js/decode-worker.js" ]] || fail "esbuild left no main.js/decode-worker.js in $js"
"$node" scripts/position-tables.ts "$js" || fail "the line tables could not be written (above)"
mapfile -t protos < <(find src -name '*.proto' | sort)
dups="$(printf '%s\n' "${protos[@]##*/}" | sort | uniq -d)"
[[ -z "$dups" ]] || fail "two .proto files share a name ($dups); the bundle keeps them in one directory"
cp "${protos[@]}" "$js/"
# The node console's page (HTML, CSS and its one JS module), served from beside the bundle.
cp -r src/console/static "$js/static"
# src/cli/main.ts reads the version from ../../package.json, i.e. dist/package.json here; it also
# keeps dist/ an ES module scope.
"$node" -e '
  const fs = require("node:fs");
  const { name, version } = JSON.parse(fs.readFileSync("package.json", "utf8"));
  fs.writeFileSync(process.argv[1], JSON.stringify({ name, version, private: true, type: "module" }, null, 2) + "\n");
' "$next/package.json"
"$esbuild" bench/lib/eld-probe.ts --bundle --platform=node --format=esm --target=node24 \
  --outfile="$next/bench/lib/eld-probe.js" --log-level=warning || fail "esbuild failed on the benchmark probe"

rm -rf dist.old
[[ -d dist ]] && mv dist dist.old
mv "$next" dist
rm -rf dist.old
