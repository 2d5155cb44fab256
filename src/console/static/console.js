// Node console: one module, no framework. Every URL is relative, so the page works at /console/ on
// the kubelet API, on the loopback listener, and behind the API server's node proxy alike. Text from
// the kubelet only ever reaches the page through textContent (never HTML).

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const SVG = 'http://www.w3.org/2000/svg';
const MAX_LOG_LINES = 2000;
const MAX_EVENTS = 200;

/** The page's state: what the last snapshot and the changes since say. */
const state = { node: undefined, pods: new Map(), events: [], selected: undefined, tab: 'overview' };

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k === 'text') e.textContent = String(v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== undefined && c !== null) e.append(c);
  return e;
}

function badge(text, tone) {
  return el('span', { class: `badge ${tone}`, text });
}

const podKey = (p) => `${p.namespace}/${p.name}`;
const enc = encodeURIComponent;

function bytes(n) {
  if (typeof n !== 'number') return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

/** Kubernetes quantities as the node reports them ("24Gi", "2", "250m", "25769803776"). */
function quantity(q) {
  const m = /^([0-9.]+)([a-zA-Z]*)$/.exec(q ?? '');
  if (!m) return NaN;
  const mult = {
    '': 1,
    m: 1e-3,
    k: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
    Ki: 1024,
    Mi: 1024 ** 2,
    Gi: 1024 ** 3,
    Ti: 1024 ** 4,
  };
  return Number(m[1]) * (mult[m[2]] ?? NaN);
}

/** A byte count written as a plain number (standalone) shown in binary units; the rest as given. */
function size(key, q) {
  if (q === undefined) return '–';
  return key !== 'cpu' && key !== 'pods' && /^\d+$/.test(q) ? bytes(Number(q)) : q;
}

function ms(n) {
  if (n < 1000) return `${Math.round(n)} ms`;
  if (n < 60_000) return `${(n / 1000).toFixed(n < 10_000 ? 2 : 1)} s`;
  return `${Math.floor(n / 60_000)} m ${Math.round((n % 60_000) / 1000)} s`;
}

function age(iso) {
  if (!iso) return '';
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 120) return `${Math.round(s)}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}

function phaseTone(p) {
  if (p.deletionTimestamp) return 'warn';
  if (p.phase === 'Running') return p.ready ? 'ok' : 'warn';
  if (p.phase === 'Succeeded') return 'neutral';
  if (p.phase === 'Failed') return 'bad';
  return 'warn';
}

function containerTone(c) {
  if (c.state === 'running') return c.ready ? 'ok' : 'warn';
  if (c.state === 'terminated') return c.exitCode === 0 ? 'neutral' : 'bad';
  if (c.reason && /BackOff|Err|Invalid/.test(c.reason)) return 'bad';
  return 'warn';
}

// ---- node -------------------------------------------------------------------------------------

function renderNode() {
  const n = state.node;
  if (!n) return;
  $('node-name').textContent = n.name;
  document.title = `${n.name} · node console`;
  const conditions = el('ul', { class: 'conditions', 'aria-label': 'Conditions' });
  for (const c of n.conditions) {
    const good = c.type === 'Ready' ? c.status === 'True' : c.status === 'False';
    const li = el('li', {}, badge(`${c.type}: ${c.status}`, good ? 'ok' : 'bad'));
    if (c.message) li.title = c.message;
    conditions.append(li);
  }
  const u = n.usage ?? {};
  const cpuCap = quantity(n.capacity.cpu);
  const memCap = quantity(n.capacity.memory);
  const usage = el('div', { class: 'usage' });
  const meter = (label, value, max, text) => {
    const id = `m-${label.toLowerCase()}`;
    const m = el('meter', { id, min: 0, max: max > 0 ? max : 1, value: value ?? 0, high: (max || 1) * 0.85 });
    usage.append(
      el('label', { for: id }, el('span', { text: label }), m, el('span', { class: 'val', text })),
    );
  };
  meter(
    'CPU',
    u.cpuNanoCores !== undefined ? u.cpuNanoCores / 1e9 : undefined,
    cpuCap,
    u.cpuNanoCores !== undefined
      ? `${(u.cpuNanoCores / 1e9).toFixed(2)} of ${cpuCap} cores`
      : 'not measured yet',
  );
  meter(
    'Memory',
    u.memoryWorkingSetBytes,
    memCap,
    `${bytes(u.memoryWorkingSetBytes)} of ${bytes(memCap)} (working set)`,
  );
  if (u.fsCapacityBytes)
    meter(
      'Disk',
      u.fsUsedBytes,
      u.fsCapacityBytes,
      `${bytes(u.fsUsedBytes)} of ${bytes(u.fsCapacityBytes)} (root dir)`,
    );
  const rows = ['cpu', 'memory', 'pods', 'ephemeral-storage']
    .filter((k) => n.capacity[k] !== undefined)
    .map((k) =>
      el(
        'tr',
        {},
        el('th', { scope: 'row', text: k }),
        el('td', { text: size(k, n.capacity[k]) }),
        el('td', { text: size(k, n.allocatable[k]) }),
      ),
    );
  const table = el(
    'div',
    { class: 'table-wrap' },
    el(
      'table',
      {},
      el('caption', { class: 'muted', text: 'Resources' }),
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          el('th', { text: 'resource' }),
          el('th', { text: 'capacity' }),
          el('th', { text: 'allocatable' }),
        ),
      ),
      el('tbody', {}, ...rows),
    ),
  );
  const facts = el('dl', { class: 'facts' });
  const fact = (k, v) => v && facts.append(el('dt', { text: k }), el('dd', { text: v }));
  fact('Mode', n.mode);
  fact('Pods', `${state.pods.size} on this node`);
  for (const [k, v] of Object.entries(n.info)) fact(k, v);
  $('node').replaceChildren(conditions, usage, facts, table);
}

// ---- pod list ---------------------------------------------------------------------------------

function sortedPods() {
  const f = /** @type {HTMLInputElement} */ ($('filter')).value.trim().toLowerCase();
  return [...state.pods.values()]
    .filter((p) => !f || podKey(p).toLowerCase().includes(f))
    .sort((a, b) => (podKey(a) < podKey(b) ? -1 : podKey(a) > podKey(b) ? 1 : 0));
}

function renderPodList() {
  const list = $('pod-list');
  const pods = sortedPods();
  $('pod-count').textContent = `(${state.pods.size})`;
  $('pods-empty').hidden = state.pods.size > 0;
  const existing = new Map([...list.children].map((li) => [li.dataset.uid, li]));
  const items = pods.map((p) => {
    let li = existing.get(p.uid);
    if (!li) {
      li = el('li', { 'data-uid': p.uid }, el('button', { type: 'button', class: 'pod' }));
      li.firstChild.addEventListener('click', () => select(p.uid, true));
    }
    const b = /** @type {HTMLButtonElement} */ (li.firstChild);
    const ready = p.containers.filter((c) => c.ready).length;
    const phase = p.deletionTimestamp ? 'Terminating' : p.phase;
    b.dataset.pod = podKey(p);
    b.setAttribute('aria-current', String(state.selected === p.uid));
    b.replaceChildren(
      el('span', { class: 'name', text: p.name }),
      badge(phase, phaseTone(p)),
      el('span', {
        class: 'meta',
        text: `${p.namespace} · ready ${ready}/${p.containers.length} · restarts ${p.restarts}${p.startTime ? ` · ${age(p.startTime)}` : ''}`,
      }),
    );
    b.setAttribute(
      'aria-label',
      `${p.namespace}/${p.name}, ${phase}, ready ${ready} of ${p.containers.length}, ${p.restarts} restarts`,
    );
    return li;
  });
  const same = items.length === list.children.length && items.every((li, i) => list.children[i] === li);
  if (!same) {
    const focused = document.activeElement?.closest?.('li')?.dataset.uid;
    list.replaceChildren(...items);
    if (focused) items.find((li) => li.dataset.uid === focused)?.firstChild.focus();
  }
}

$('pod-list').addEventListener('keydown', (e) => {
  const buttons = [...$('pod-list').querySelectorAll('button.pod')];
  const i = buttons.indexOf(document.activeElement);
  if (i < 0) return;
  const to = { ArrowDown: i + 1, ArrowUp: i - 1, Home: 0, End: buttons.length - 1 }[e.key];
  if (to === undefined) return;
  e.preventDefault();
  buttons[Math.max(0, Math.min(buttons.length - 1, to))].focus();
});
$('filter').addEventListener('input', renderPodList);

// ---- pod details ------------------------------------------------------------------------------

function select(uid, fromUser) {
  const changed = state.selected !== uid;
  state.selected = uid;
  const p = state.pods.get(uid);
  if (p && fromUser) history.replaceState(null, '', `#${enc(p.namespace)}/${enc(p.name)}`);
  renderPodList();
  renderPod(changed);
  // One column (a phone): the details are below the list; bring them into view.
  if (p && fromUser && matchMedia('(max-width: 56rem)').matches)
    $('pod-h').scrollIntoView({ block: 'start' });
}

function renderPod(changed) {
  const p = state.pods.get(state.selected);
  $('pod-none').hidden = !!p;
  $('pod-detail').hidden = !p;
  if (!p) {
    $('pod-h').textContent = 'Pod';
    stopLogs();
    return;
  }
  $('pod-h').textContent = `Pod ${p.namespace}/${p.name}`;
  renderOverview(p);
  const names = [...p.initContainers, ...p.containers].map((c) => c.name);
  const sel = /** @type {HTMLSelectElement} */ ($('log-container'));
  if ([...sel.options].map((o) => o.value).join() !== names.join()) {
    const keep = sel.value;
    sel.replaceChildren(...names.map((n) => el('option', { value: n, text: n })));
    if (names.includes(keep)) sel.value = keep;
    else if (p.containers[0]) sel.value = p.containers[0].name;
  }
  if (changed) {
    stopLogs();
    $('log-output').textContent = '';
    $('log-status').textContent = '';
  }
  refreshTab(changed);
}

function renderOverview(p) {
  const facts = el('dl', { class: 'facts' });
  const fact = (k, v) => v !== undefined && v !== '' && facts.append(el('dt', { text: k }), el('dd', {}, v));
  fact('Phase', badge(p.deletionTimestamp ? `${p.phase}, terminating` : p.phase, phaseTone(p)));
  fact('Ready', p.ready ? 'yes' : 'no');
  fact('Reason', p.reason);
  fact('Message', p.message);
  fact('Pod IP', p.podIP);
  fact('QoS class', p.qosClass);
  fact('Started', p.startTime ? `${p.startTime} (${age(p.startTime)} ago)` : undefined);
  fact('Source', p.source);
  fact('UID', p.uid);
  const head = el(
    'tr',
    {},
    ...['container', 'state', 'ready', 'restarts', 'last exit', 'image'].map((t) =>
      el('th', { scope: 'col', text: t }),
    ),
  );
  const row = (c, init) =>
    el(
      'tr',
      {},
      el('th', { scope: 'row', text: init ? `${c.name} (init)` : c.name }),
      el('td', {}, badge(c.reason ? `${c.state}: ${c.reason}` : c.state, containerTone(c))),
      el('td', { text: c.ready ? 'yes' : 'no' }),
      el('td', { text: c.restartCount }),
      el('td', {
        text: c.last
          ? `${c.last.exitCode}${c.last.reason ? ` (${c.last.reason})` : ''}`
          : c.state === 'terminated'
            ? String(c.exitCode)
            : '–',
      }),
      el('td', { text: c.image }),
    );
  const rows = [...p.initContainers.map((c) => row(c, true)), ...p.containers.map((c) => row(c, false))];
  $('panel-overview').replaceChildren(
    facts,
    el(
      'div',
      { class: 'table-wrap' },
      el(
        'table',
        {},
        el('caption', { class: 'muted', text: 'Containers' }),
        el('thead', {}, head),
        el('tbody', {}, ...rows),
      ),
    ),
  );
}

// ---- tabs ---------------------------------------------------------------------------------------

const TABS = ['overview', 'timeline', 'why', 'logs'];

function showTab(name, focus) {
  state.tab = name;
  for (const t of TABS) {
    const tab = $(`tab-${t}`);
    tab.setAttribute('aria-selected', String(t === name));
    tab.tabIndex = t === name ? 0 : -1;
    $(`panel-${t}`).hidden = t !== name;
  }
  if (focus) $(`tab-${name}`).focus();
  if (name !== 'logs') stopLogs();
  refreshTab(true);
}

for (const t of TABS) {
  $(`tab-${t}`).addEventListener('click', () => showTab(t, false));
  $(`tab-${t}`).addEventListener('keydown', (e) => {
    const i = TABS.indexOf(t);
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: TABS.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    showTab(TABS[(to + TABS.length) % TABS.length], true);
  });
}

let lastFetch = 0;
/** Timeline and why are fetched when shown, and again at most every 2 s while the pod changes. */
function refreshTab(force) {
  const p = state.pods.get(state.selected);
  if (!p) return;
  if (!force && Date.now() - lastFetch < 2000) return;
  lastFetch = Date.now();
  if (state.tab === 'timeline') void loadJSON(p, 'timeline', renderTimeline);
  else if (state.tab === 'why') void loadJSON(p, 'why', renderWhy);
}

async function loadJSON(p, what, render) {
  const panel = $(`panel-${what}`);
  if (!panel.firstChild) panel.append(el('p', { class: 'muted', text: 'Loading…' }));
  try {
    const res = await fetch(`../debug/pods/${enc(p.namespace)}/${enc(p.name)}/${what}`, {
      headers: { accept: 'application/json' },
    });
    const text = await res.text();
    if (state.selected !== p.uid) return;
    if (!res.ok) {
      let msg = text.trim();
      try {
        msg = JSON.parse(text).message ?? msg;
      } catch {
        // Not JSON: the text as it came.
      }
      panel.replaceChildren(el('p', { class: 'muted', text: `No ${what} (${res.status}): ${msg}` }));
      return;
    }
    render(panel, JSON.parse(text));
  } catch (err) {
    panel.replaceChildren(el('p', { class: 'muted', text: `Cannot load the ${what}: ${err}` }));
  }
}

function stepKind(s) {
  if (s.step === 'failed' || s.step === 'rejected') return 'wf-failed';
  if (s.step.startsWith('image-')) return 'wf-image';
  if (s.step.startsWith('container-') || s.step.includes('probe') || s.step === 'post-start-done')
    return 'wf-container';
  return 'wf-pod';
}

/** One row per step; a bar from the step before it (of the same container, if it names one). */
function renderTimeline(panel, t) {
  const out = [];
  for (const a of t.attempts ?? []) {
    const steps = [...a.steps].sort((x, y) => x.offsetMs - y.offsetMs);
    const t0 = steps[0]?.offsetMs ?? 0;
    const span = Math.max(1, (steps.at(-1)?.offsetMs ?? 0) - t0);
    const list = el('ol', { class: 'waterfall', 'aria-label': `Attempt ${a.attempt} steps` });
    steps.forEach((s, i) => {
      const prev = [...steps.slice(0, i)]
        .reverse()
        .find((q) => !s.container || q.container === s.container || !q.container);
      const from = (prev ?? s).offsetMs - t0;
      const to = s.offsetMs - t0;
      const svg = document.createElementNS(SVG, 'svg');
      svg.setAttribute('class', 'wf-bar');
      svg.setAttribute('viewBox', '0 0 1000 10');
      svg.setAttribute('preserveAspectRatio', 'none');
      svg.setAttribute('aria-hidden', 'true');
      const rect = document.createElementNS(SVG, 'rect');
      const x = (from / span) * 1000;
      rect.setAttribute('x', String(Math.min(x, 996)));
      rect.setAttribute('width', String(Math.max(4, ((to - from) / span) * 1000)));
      rect.setAttribute('height', '10');
      rect.setAttribute('class', stepKind(s));
      svg.append(rect);
      const detail = [
        s.container,
        s.volume,
        s.image,
        s.podIP,
        s.cached === true ? 'cached' : undefined,
        s.bytes ? bytes(s.bytes) : undefined,
        s.error,
      ]
        .filter(Boolean)
        .join(' · ');
      list.append(
        el(
          'li',
          { class: 'wf-row', 'data-step': s.step },
          el('span', { class: 'wf-label' }, s.step, detail ? el('small', { text: ` ${detail}` }) : undefined),
          svg,
          el('span', {
            class: 'wf-time',
            text: `+${ms(to)}`,
            title: `${ms(to - from)} after the step before`,
          }),
        ),
      );
    });
    out.push(el('h3', { text: `Attempt ${a.attempt} · ${ms(span)}` }), list);
  }
  if (out.length === 0) out.push(el('p', { class: 'muted', text: 'No steps recorded for this pod.' }));
  if (t.droppedSteps)
    out.push(el('p', { class: 'muted', text: `${t.droppedSteps} older steps were dropped.` }));
  panel.replaceChildren(...out);
}

function renderWhy(panel, w) {
  const out = [
    el(
      'p',
      { class: 'why-summary' },
      badge(w.ready ? 'Ready' : w.phase, w.ready ? 'ok' : 'warn'),
      ' ',
      w.summary,
    ),
  ];
  for (const f of w.findings ?? []) {
    const ev = el('dl', { class: 'facts' });
    for (const [k, v] of Object.entries(f.evidence ?? {})) {
      if (Array.isArray(v)) continue;
      ev.append(el('dt', { text: k }), el('dd', { text: v }));
    }
    const lines = Object.values(f.evidence ?? {}).find(Array.isArray);
    out.push(
      el(
        'div',
        { class: 'finding' },
        el('h3', {}, badge(f.reason, 'bad'), f.container ? ` container ${f.container}` : ''),
        el('p', { text: f.message }),
        f.since ? el('p', { class: 'muted', text: `since ${f.since}` }) : undefined,
        ev.childElementCount > 0 ? ev : undefined,
        lines && lines.length > 0 ? el('pre', { class: 'log', text: lines.join('\n') }) : undefined,
      ),
    );
  }
  panel.replaceChildren(...out);
}

// ---- logs ---------------------------------------------------------------------------------------

let logAbort;

function stopLogs() {
  logAbort?.abort();
  logAbort = undefined;
  $('log-follow').setAttribute('aria-pressed', 'false');
  $('log-follow').textContent = 'Follow';
}

function appendLog(text) {
  const out = $('log-output');
  const atEnd = out.scrollHeight - out.scrollTop - out.clientHeight < 40;
  out.append(text);
  if (out.childNodes.length > 200) out.normalize();
  const all = out.textContent ?? '';
  const lines = all.split('\n');
  if (lines.length > MAX_LOG_LINES) out.textContent = lines.slice(-MAX_LOG_LINES).join('\n');
  if (atEnd) out.scrollTop = out.scrollHeight;
}

async function followLogs() {
  const p = state.pods.get(state.selected);
  const container = /** @type {HTMLSelectElement} */ ($('log-container')).value;
  if (!p || !container) return;
  stopLogs();
  const ac = new AbortController();
  logAbort = ac;
  $('log-follow').setAttribute('aria-pressed', 'true');
  $('log-follow').textContent = 'Stop';
  $('log-output').textContent = '';
  $('log-status').textContent = `Following ${container}…`;
  try {
    const res = await fetch(
      `../containerLogs/${enc(p.namespace)}/${enc(p.name)}/${enc(container)}?follow=true&tailLines=200`,
      { signal: ac.signal },
    );
    if (!res.ok || !res.body) {
      $('log-status').textContent = `Cannot read the log (${res.status}): ${(await res.text()).trim()}`;
      return;
    }
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      appendLog(value);
    }
    $('log-status').textContent = 'The log ended (the container stopped).';
  } catch (err) {
    if (!ac.signal.aborted) $('log-status').textContent = `The log stream broke: ${err}`;
  } finally {
    if (logAbort === ac) stopLogs();
  }
}

$('log-follow').addEventListener('click', () => {
  if (logAbort) {
    stopLogs();
    $('log-status').textContent = 'Stopped.';
  } else void followLogs();
});
$('log-container').addEventListener('change', () => {
  if (logAbort) void followLogs();
});

// ---- events -------------------------------------------------------------------------------------

function eventItem(e) {
  const o = e.object;
  const t = new Date(e.at);
  return el(
    'li',
    {},
    el('time', { datetime: e.at, text: t.toLocaleTimeString([], { hour12: false }) }),
    el('span', {}, badge(e.reason, e.type === 'Warning' ? 'bad' : 'neutral')),
    el('span', { class: 'obj', text: `${o.kind} ${o.namespace ? `${o.namespace}/` : ''}${o.name}` }),
    el('span', { class: 'msg', text: e.message }),
  );
}

function renderEvents() {
  $('events').replaceChildren(...state.events.slice().reverse().map(eventItem));
  $('events-empty').hidden = state.events.length > 0;
}

function addEvent(e) {
  state.events.push(e);
  if (state.events.length > MAX_EVENTS) state.events.shift();
  $('events').prepend(eventItem(e));
  while ($('events').children.length > MAX_EVENTS) $('events').lastElementChild.remove();
  $('events-empty').hidden = true;
}

// ---- the live feed ------------------------------------------------------------------------------

function selectFromHash() {
  const [ns, name] = location.hash.slice(1).split('/').map(decodeURIComponent);
  const p = [...state.pods.values()].find((q) => q.namespace === ns && q.name === name);
  if (p) select(p.uid, false);
}

function connect() {
  const conn = $('conn');
  const source = new EventSource('../debug/console/events');
  source.addEventListener('open', () => {
    conn.textContent = 'Live';
    conn.className = 'conn live';
  });
  source.addEventListener('error', () => {
    conn.textContent = source.readyState === EventSource.CLOSED ? 'Disconnected' : 'Reconnecting…';
    conn.className = 'conn down';
  });
  source.addEventListener('snapshot', (m) => {
    const s = JSON.parse(m.data);
    state.node = s.node;
    state.pods = new Map(s.pods.map((p) => [p.uid, p]));
    state.events = s.events.slice(-MAX_EVENTS);
    renderNode();
    renderPodList();
    renderEvents();
    if (state.selected && !state.pods.has(state.selected)) state.selected = undefined;
    if (!state.selected) selectFromHash();
    renderPod(false);
  });
  source.addEventListener('pod', (m) => {
    const p = JSON.parse(m.data);
    state.pods.set(p.uid, p);
    renderPodList();
    if (p.uid === state.selected) renderPod(false);
    else if (!state.selected) selectFromHash();
  });
  source.addEventListener('pod-removed', (m) => {
    const { uid } = JSON.parse(m.data);
    state.pods.delete(uid);
    renderPodList();
    if (uid === state.selected) {
      state.selected = undefined;
      renderPod(true);
    }
  });
  source.addEventListener('node', (m) => {
    state.node = JSON.parse(m.data);
    renderNode();
  });
  source.addEventListener('k8s-event', (m) => addEvent(JSON.parse(m.data)));
}

addEventListener('hashchange', selectFromHash);
connect();
