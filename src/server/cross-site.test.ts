import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crossSiteVerdict, originMatchesHost, simpleBodyType, type CrossSiteFacts } from './cross-site.ts';

const HOST = '127.0.0.1:10250';
const CHROMIUM =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';

/** A request from a browser (its User-Agent) unless the headers say otherwise. */
function facts(method: string, headers: CrossSiteFacts['headers'], upgrade = false): CrossSiteFacts {
  return { method, upgrade, headers: { host: HOST, 'user-agent': CHROMIUM, ...headers } };
}

describe('cross-site verdict', () => {
  const cases: [string, CrossSiteFacts, boolean][] = [
    // Non-browser clients (kubectl, curl, the API server's proxy) send neither header.
    ['GET without Origin or Fetch metadata', facts('GET', {}), true],
    ['POST without Origin or Fetch metadata', facts('POST', {}), true],
    ['an upgrade without Origin or Fetch metadata', facts('GET', {}, true), true],
    // Fetch metadata decides whenever a browser sends it.
    ['GET marked cross-site', facts('GET', { 'sec-fetch-site': 'cross-site' }), false],
    [
      'GET marked same-site (another port of the same host)',
      facts('GET', { 'sec-fetch-site': 'same-site' }),
      false,
    ],
    ['HEAD marked cross-site', facts('HEAD', { 'sec-fetch-site': 'cross-site' }), false],
    ['POST marked cross-site', facts('POST', { 'sec-fetch-site': 'Cross-Site' }), false],
    [
      'a WebSocket marked cross-site even with a matching Origin',
      facts('GET', { 'sec-fetch-site': 'cross-site', origin: `http://${HOST}` }, true),
      false,
    ],
    [
      'same-origin through a proxy (Origin is the proxy, not the kubelet)',
      facts('GET', { 'sec-fetch-site': 'same-origin', origin: 'http://127.0.0.1:8001' }),
      true,
    ],
    [
      'a same-origin upgrade through a proxy',
      facts('GET', { 'sec-fetch-site': 'same-origin', origin: 'http://127.0.0.1:8001' }, true),
      true,
    ],
    ['a URL typed or bookmarked (none)', facts('GET', { 'sec-fetch-site': 'none' }), true],
    // Without Fetch metadata: Origin against Host for what is not a plain read.
    ['a cross-origin GET without Fetch metadata', facts('GET', { origin: 'http://evil.example' }), true],
    ['a cross-origin POST without Fetch metadata', facts('POST', { origin: 'http://evil.example' }), false],
    [
      'a cross-origin upgrade without Fetch metadata',
      facts('GET', { origin: 'http://evil.example' }, true),
      false,
    ],
    ['a POST from an opaque origin (null)', facts('POST', { origin: 'null' }), false],
    ['a POST with an unparseable Origin', facts('POST', { origin: 'not a url' }), false],
    ['a same-origin POST without Fetch metadata', facts('POST', { origin: `https://${HOST}` }), true],
    ['a same-origin upgrade without Fetch metadata', facts('GET', { origin: `http://${HOST}` }, true), true],
    [
      'an unknown Sec-Fetch-Site value falls back to the Origin check',
      facts('POST', { 'sec-fetch-site': 'bogus', origin: 'http://evil.example' }),
      false,
    ],
    [
      'a POST with Origin but no Host',
      { method: 'POST', upgrade: false, headers: { origin: 'http://evil.example', 'user-agent': CHROMIUM } },
      false,
    ],
    // A client that is not a browser is not a page's: its Origin is whatever it dialled.
    [
      "the Python client's exec WebSocket through the API server (Origin: the API server it dialled)",
      facts('GET', { origin: 'https://10.0.0.1:6443', 'user-agent': 'Python-urllib/3.11' }, true),
      true,
    ],
    [
      'a POST with a foreign Origin and no User-Agent',
      facts('POST', { origin: 'http://evil.example', 'user-agent': undefined }),
      true,
    ],
    [
      "a non-browser marked cross-site all the same (Fetch metadata is only ever a browser's)",
      facts('GET', { 'sec-fetch-site': 'cross-site', 'user-agent': 'curl/7.88.1' }),
      false,
    ],
  ];
  for (const [name, f, allowed] of cases) {
    it(`${allowed ? 'allows' : 'refuses'} ${name}`, () => {
      assert.equal(crossSiteVerdict(f).ok, allowed);
    });
  }

  it('quotes the header values it refuses, bounded', () => {
    const long = `http://${'a'.repeat(500)}.example`;
    const v = crossSiteVerdict(facts('POST', { origin: long }));
    assert.ok(!v.ok);
    assert.ok(v.reason.length < 400, v.reason);
    assert.match(v.reason, /^Origin "http:\/\/a+…" is not this server \(Host "127\.0\.0\.1:10250"\)/);
  });
});

describe('origin and Host comparison', () => {
  const cases: [string, string | undefined, boolean][] = [
    ['https://127.0.0.1:10250', '127.0.0.1:10250', true],
    ['http://localhost:8001', 'LOCALHOST:8001', true],
    ['https://node.example', 'node.example:443', true],
    ['http://node.example', 'node.example:80', true],
    ['https://node.example', 'node.example:80', false],
    ['http://[::1]:10250', '[::1]:10250', true],
    ['http://127.0.0.1:8001', '127.0.0.1:10250', false],
    ['http://127.0.0.1:10250', 'evil@127.0.0.1:10250', false],
    ['http://127.0.0.1:10250', '127.0.0.1:10250/x', false],
    ['null', '127.0.0.1:10250', false],
    ['http://127.0.0.1:10250', undefined, false],
  ];
  for (const [origin, host, same] of cases) {
    it(`${origin} vs Host ${String(host)}: ${same ? 'same' : 'different'}`, () => {
      assert.equal(originMatchesHost(origin, host), same);
    });
  }
});

describe('body types a page can send without a preflight', () => {
  const cases: [string | undefined, string | undefined][] = [
    [undefined, undefined],
    ['application/json', undefined],
    ['application/x-www-form-urlencoded', 'application/x-www-form-urlencoded'],
    ['Multipart/Form-Data; boundary=x', 'multipart/form-data'],
    [' text/plain ;charset=utf-8', 'text/plain'],
    ['text/plainx', undefined],
  ];
  for (const [header, simple] of cases) {
    it(`${String(header)} → ${String(simple)}`, () => {
      assert.equal(simpleBodyType(header), simple);
    });
  }
});
