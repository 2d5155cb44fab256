/**
 * `node:http`, loaded through `require` rather than `import`. An ES-module import of `node:http`
 * builds the module's namespace from every export, and reading `http.WebSocket` / `CloseEvent` /
 * `MessageEvent` (lazy getters) loads undici, Node's bundled fetch and WebSocket client: ~5 MiB of
 * resident memory (1.7 MiB of heap) that the kubelet never uses unless `--manifest-url` calls
 * `fetch()` (measured, bench/results/2026-11-24-lean-process.md). `require` skips the namespace.
 * Import what the kubelet uses from here; `import type` from `node:http` stays free.
 */
import { createRequire } from 'node:module';
import type * as Http from 'node:http';

const http = createRequire(import.meta.url)('node:http') as typeof Http;

export const { Agent, STATUS_CODES, createServer, request } = http;
