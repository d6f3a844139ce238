// paydispatch operator console. Plain JavaScript, no dependency, nothing
// fetched but this server's API. Every call sends the token the operator
// pasted (kept in sessionStorage) as Authorization: Bearer; no cookie is
// used, so no other site can make a browser act with it. An admin token
// sees every panel; a checker's (payments:approve and payments:read,
// without admin) sees only Awaiting approval, so that approvers need not
// hold the admin scope that edits the rules they approve under.
'use strict';

(() => {
  const TOKEN_KEY = 'paydispatch.console.token';
  const OPERATOR_KEY = 'paydispatch.console.operator';
  const POLL_MS = 1000;
  const WINDOW_MS = 5 * 60 * 1000;
  const QUEUE_SERIES = ['READY', 'CLAIMED', 'DISPATCHED', 'FAILED', 'DEAD_LETTER'];
  const QUEUE_COLUMNS = ['READY', 'CLAIMED', 'DISPATCHED', 'FAILED', 'DEAD_LETTER', 'COMPLETED'];
  // The dispatch settings a form edits, under the keys PATCH takes; the
  // kill switch (enabled) has its own, confirmed, button.
  const SETTINGS = [
    { key: 'exec_mode', kind: 'select', options: ['BATCH', 'PER_ITEM'] },
    { key: 'pacing_config', kind: 'text', list: 'rl-names' },
    { key: 'batch_size', kind: 'int' },
    { key: 'dispatch_interval_secs', kind: 'int' },
    { key: 'jitter_window_ms', kind: 'int' },
    { key: 'pre_start_buffer_secs', kind: 'int' },
    { key: 'paced_lead_ms', kind: 'int' },
    { key: 'max_in_flight', kind: 'int' },
    { key: 'max_dispatch_retries', kind: 'int' },
    { key: 'stale_claim_threshold_secs', kind: 'int' },
    { key: 'max_stale_recovery_per_cycle', kind: 'int' },
    { key: 'exec_workflow_type', kind: 'text' },
    { key: 'exec_task_queue', kind: 'text' },
  ];

  const $ = (id) => document.getElementById(id);

  // el makes an HTML element; strings among children become text.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k === 'className') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) {
      if (c === undefined || c === null) continue;
      e.append(typeof c === 'string' || typeof c === 'number' ? String(c) : c);
    }
    return e;
  }

  const SVG_NS = 'http://www.w3.org/2000/svg';
  function svgEl(tag, attrs, text) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function fmtTime(iso) {
    if (!iso) return '—';
    return String(iso).replace('T', ' ').replace(/\.\d+Z$/, 'Z');
  }

  function fmtNum(v, digits) {
    if (v === undefined || v === null || Number.isNaN(v)) return '—';
    return Number(v).toLocaleString('en', { maximumFractionDigits: digits === undefined ? 1 : digits });
  }

  // ---- the API --------------------------------------------------------

  const state = {
    signedIn: false,
    timer: null,
    pollGen: 0,
    latest: null,          // the last stats read
    history: new Map(),    // item type → [{t, instance, executed, queue, limit}]
    rows: new Map(),       // item type → its row in the live table
    settings: new Map(),   // item type → its dispatch settings as read
    rateLimits: [],
    dlNext: '',
    payment: null,         // the payment looked up: {paymentId, tenantId}
    checker: null,         // signed in as a checker: {bound}, bound to its token's tenant
  };

  class APIError extends Error {
    constructor(status, body) {
      super((body && (body.title || body.detail)) || ('HTTP ' + status));
      this.status = status;
      this.body = body || {};
    }
  }

  function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

  async function api(method, path, body) {
    const headers = { Authorization: 'Bearer ' + token(), Accept: 'application/json' };
    const operator = sessionStorage.getItem(OPERATOR_KEY);
    // The server takes X-Operator as UTF-8 only; fetch sends a header's
    // characters as single bytes, so the name goes as its UTF-8 bytes.
    if (operator) headers['X-Operator'] = String.fromCharCode(...new TextEncoder().encode(operator));
    const init = { method, headers, cache: 'no-store', credentials: 'omit', redirect: 'error' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const resp = await fetch(path, init);
    const text = await resp.text();
    let data = null;
    if (text) {
      try { data = JSON.parse(text); } catch (_) { data = { detail: text.slice(0, 300) }; }
    }
    if (!resp.ok) {
      if (resp.status === 401 && state.signedIn) {
        signOut('The token was refused (unknown, revoked or expired): sign in again.');
      }
      throw new APIError(resp.status, data);
    }
    return data;
  }

  // problemText is a problem+json answer as one message.
  function problemText(err) {
    if (!(err instanceof APIError)) return String((err && err.message) || err);
    const p = err.body;
    let s = (p.title || ('HTTP ' + err.status)) + (p.detail ? ': ' + p.detail : '');
    for (const e of p.errors || []) s += '\n' + (e.field ? e.field + ': ' : '') + e.detail;
    return s;
  }

  function setResult(node, text, ok) {
    node.textContent = text;
    node.classList.toggle('ok', ok === true);
    node.classList.toggle('bad', ok === false);
  }

  // ---- signing in and out ---------------------------------------------

  async function signIn(ev) {
    ev.preventDefault();
    const t = $('token').value.trim();
    const operator = $('operator').value.trim();
    if (!t) return;
    sessionStorage.setItem(TOKEN_KEY, t);
    if (operator) sessionStorage.setItem(OPERATOR_KEY, operator);
    else sessionStorage.removeItem(OPERATOR_KEY);
    $('sign-in-error').textContent = '';
    try {
      await open();
      $('token').value = '';
    } catch (err) {
      sessionStorage.removeItem(TOKEN_KEY);
      let msg = problemText(err);
      if (err instanceof APIError && err.status === 401) msg = 'This token is unknown, revoked or expired.';
      if (err instanceof APIError && err.status === 403) msg = NO_ACCESS;
      $('sign-in-error').textContent = msg;
    }
  }

  const NO_ACCESS = 'This token can use neither the console (it needs the admin scope) nor its Awaiting approval panel ' +
    '(it needs payments:approve and payments:read).';

  // open enters the console with the token stored: every panel for an
  // admin token, the approvals panel alone for a checker's; it throws the
  // refusal (a 403 when the token is neither).
  async function open() {
    let st;
    try {
      st = await api('GET', '/admin/console/stats');
    } catch (err) {
      if (!(err instanceof APIError) || err.status !== 403) throw err;
      enterChecker(await checkerAccess());
      return;
    }
    enter(st);
  }

  // checkerAccess asks, with calls that change nothing, whether the token
  // may list and decide approvals. A list without tenantId answers a
  // tenant's token with its own tenant's payments and refuses an
  // operator's (422); an approval with a bad limit is refused (422) only
  // after its scope is checked, and decides nothing.
  async function checkerAccess() {
    let bound = true;
    try {
      await api('GET', '/v1/payments?status=AWAITING_APPROVAL&limit=1');
    } catch (err) {
      if (!(err instanceof APIError) || err.status !== 422) throw err;
      bound = false;
    }
    try {
      await api('POST', '/v1/payments/approve', { dryRun: true, limit: -1 });
    } catch (err) {
      if (!(err instanceof APIError) || err.status !== 422) throw err;
      return { bound };
    }
    // Unreachable while the API checks limit: a dry run, it decided nothing.
    throw new Error('the server took the approval check (a dry run) as valid: this console does not match its API');
  }

  // enterChecker shows the approvals panel alone and polls nothing: the
  // other panels call admin endpoints the token may not.
  function enterChecker(checker) {
    state.checker = checker;
    state.signedIn = true;
    for (const s of document.querySelectorAll('#app > section.panel')) s.hidden = s.id !== 'approvals';
    for (const a of document.querySelectorAll('#app nav.tabs a')) a.hidden = a.getAttribute('href') !== '#approvals';
    $('appr-tenant-field').hidden = checker.bound;
    $('appr-tenant').required = !checker.bound;
    $('appr-own-tenant').hidden = !checker.bound;
    $('appr-load').textContent = checker.bound ? 'Refresh' : 'Load';
    $('sign-in').hidden = true;
    $('app').hidden = false;
    $('sign-out').hidden = false;
    const operator = sessionStorage.getItem(OPERATOR_KEY);
    $('signed-in-as').textContent = 'signed in as a checker' + (operator ? ' (' + operator + ')' : '');
    if (checker.bound) loadApprovals();
  }

  function enter(st) {
    state.signedIn = true;
    $('sign-in').hidden = true;
    $('app').hidden = false;
    $('sign-out').hidden = false;
    const operator = sessionStorage.getItem(OPERATOR_KEY);
    $('signed-in-as').textContent = 'signed in' + (operator ? ' as ' + operator : '');
    ingest(st);
    startPolling();
    loadSettings();
    loadRateLimits();
    loadDeadLetters(true);
    loadPauses();
  }

  // signOut forgets the token and everything read with it.
  function signOut(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(OPERATOR_KEY);
    state.signedIn = false;
    state.checker = null;
    state.pollGen++;
    if (state.timer) clearTimeout(state.timer);
    state.timer = null;
    state.latest = null;
    state.history.clear();
    state.rows.clear();
    state.settings.clear();
    state.rateLimits = [];
    for (const id of ['item-types', 'rails', 'dl-table', 'rl-table', 'proc-log', 'pause-table', 'appr-table']) clear(document.querySelector('#' + id + ' tbody'));
    for (const id of ['rate-chart', 'queue-chart', 'settings-forms', 'pay-fields', 'pay-links', 'chart-item-type']) clear($(id));
    for (const id of ['kill-result', 'dl-result', 'rl-result', 'pay-error', 'proc-summary', 'dl-count', 'pause-result', 'prio-result', 'appr-result']) $(id).textContent = '';
    $('pause-id').value = '';
    $('appr-tenant').value = '';
    for (const s of document.querySelectorAll('#app > section.panel')) s.hidden = false;
    for (const a of document.querySelectorAll('#app nav.tabs a')) a.hidden = false;
    $('appr-tenant-field').hidden = false;
    $('appr-tenant').required = true;
    $('appr-own-tenant').hidden = true;
    $('appr-own-tenant').textContent = 'this token\'s tenant';
    $('appr-load').textContent = 'Load';
    state.payment = null;
    const names = $('rl-names');
    if (names) clear(names);
    const configs = $('dl-config');
    while (configs.options.length > 1) configs.remove(1);
    state.dlNext = '';
    $('dl-more').hidden = true;
    $('pay-view').hidden = true;
    $('app').hidden = true;
    $('sign-out').hidden = true;
    $('signed-in-as').textContent = '';
    $('sign-in').hidden = false;
    $('sign-in-error').textContent = message || '';
  }

  // ---- live figures ---------------------------------------------------

  // startPolling reads the figures every second (not while the tab is
  // hidden); a new start ends the loop before it.
  function startPolling() {
    if (state.checker) return;
    if (state.timer) clearTimeout(state.timer);
    const gen = ++state.pollGen;
    const tick = async () => {
      state.timer = null;
      if (!state.signedIn || gen !== state.pollGen) return;
      if (document.visibilityState !== 'hidden') {
        try {
          const st = await api('GET', '/admin/console/stats');
          if (gen === state.pollGen) ingest(st);
        } catch (err) {
          if (state.signedIn) $('live-status').textContent = 'figures unavailable: ' + problemText(err);
        }
      }
      if (state.signedIn && gen === state.pollGen) state.timer = setTimeout(tick, POLL_MS);
    };
    state.timer = setTimeout(tick, POLL_MS);
  }

  function ingest(st) {
    if (!st || !state.signedIn) return;
    state.latest = st;
    const t = Date.parse(st.at);
    for (const it of st.itemTypes) {
      const h = state.history.get(it.itemType) || [];
      if (h.length === 0 || h[h.length - 1].t < t) { // a read already seen is not a new sample
        h.push({ t, instance: st.instance, executed: it.executed, queue: it.queue, limit: it.limitPerSecond });
      }
      while (h.length > 1 && h[0].t < t - WINDOW_MS - 10000) h.shift();
      state.history.set(it.itemType, h);
    }
    renderItemTypes(st);
    renderRails(st.rails || []);
    renderCharts();
    const n = (state.history.get(chartItemType()) || []).length;
    $('live-status').textContent = 'figures at ' + fmtTime(st.at) + ' · read every second · ' + n + ' samples kept (5 minutes)';
  }

  // rate is the executions a second from sample a to sample b, when one
  // serve process counted both (else null: another process, or a restart).
  function rate(a, b) {
    const dt = (b.t - a.t) / 1000;
    if (!(dt > 0) || a.instance !== b.instance || b.executed < a.executed) return null;
    return (b.executed - a.executed) / dt;
  }

  // rates are the executions a second between consecutive samples.
  function rates(h) {
    const out = [];
    for (let i = 1; i < h.length; i++) {
      const r = rate(h[i - 1], h[i]);
      if (r !== null) out.push([h[i].t, r]);
    }
    return out;
  }

  // recentRate is the executions a second over the last 5 seconds.
  function recentRate(h) {
    if (h.length < 2) return null;
    const last = h[h.length - 1];
    let first = h[h.length - 2];
    for (let i = h.length - 2; i >= 0 && last.t - h[i].t <= 5000 && h[i].instance === last.instance; i--) first = h[i];
    return rate(first, last);
  }

  function renderItemTypes(st) {
    const body = document.querySelector('#item-types tbody');
    const seen = new Set();
    for (const it of st.itemTypes) {
      seen.add(it.itemType);
      let row = state.rows.get(it.itemType);
      if (!row) {
        const cells = {};
        const tr = el('tr', { 'data-item-type': it.itemType });
        const add = (col, cls) => { const td = el('td', { className: cls || '', 'data-col': col }); cells[col] = td; tr.append(td); };
        add('itemType'); add('enabled'); add('execMode'); add('pacingConfig'); add('limit', 'num'); add('rate', 'num');
        for (const s of QUEUE_COLUMNS) add(s, 'num');
        add('overdue', 'num'); add('kill');
        const button = el('button', { type: 'button', className: 'kill', onclick: () => toggleDispatch(it.itemType) });
        cells.kill.append(button);
        row = { tr, cells, button };
        state.rows.set(it.itemType, row);
        body.append(tr);
      }
      const c = row.cells;
      c.itemType.textContent = it.itemType;
      clear(c.enabled);
      c.enabled.append(enabledBadge(el('span'), it.enabled));
      c.execMode.textContent = it.execMode;
      c.pacingConfig.textContent = it.pacingConfig || '— (not paced)';
      c.limit.textContent = it.limitPerSecond ? fmtNum(it.limitPerSecond, 2) : '—';
      c.rate.textContent = fmtNum(recentRate(state.history.get(it.itemType) || []), 1);
      for (const s of QUEUE_COLUMNS) c[s].textContent = fmtNum(it.queue[s] || 0, 0);
      c.overdue.textContent = it.oldestReadyOverdueSeconds > 0 ? fmtNum(it.oldestReadyOverdueSeconds, 1) + ' s' : '—';
      row.button.textContent = it.enabled ? 'Stop dispatch' : 'Resume dispatch';
      row.button.className = 'kill ' + (it.enabled ? 'danger' : 'resume');
      row.tr.setAttribute('data-enabled', String(it.enabled));
      const badge = document.querySelector('form.settings-form[data-item-type="' + CSS.escape(it.itemType) + '"] .badge');
      if (badge) enabledBadge(badge, it.enabled);
    }
    for (const [type, row] of state.rows) {
      if (!seen.has(type)) { row.tr.remove(); state.rows.delete(type); }
    }
    const sel = $('chart-item-type');
    const have = Array.from(sel.options).map((o) => o.value).join('\n');
    const want = st.itemTypes.map((it) => it.itemType).join('\n');
    if (have !== want) {
      const keep = sel.value;
      clear(sel);
      for (const it of st.itemTypes) sel.append(el('option', { value: it.itemType, text: it.itemType }));
      if (keep && st.itemTypes.some((it) => it.itemType === keep)) sel.value = keep;
    }
  }

  // renderRails draws each rail's backlog against its business day's
  // cut-off; a projected finish at or past it is marked (row class late).
  function renderRails(rails) {
    const body = document.querySelector('#rails tbody');
    clear(body);
    if (rails.length === 0) {
      body.append(el('tr', { className: 'empty' }, el('td', { colspan: 12, text: 'no rails' })));
      return;
    }
    for (const r of rails) {
      const late = r.pastCutoff === true;
      const tr = el('tr', { 'data-rail': r.name, 'data-past-cutoff': String(late), className: late ? 'late' : '' });
      const cell = (col, text, cls) => tr.append(el('td', { 'data-col': col, className: cls || '', text }));
      cell('name', r.name);
      cell('type', r.type);
      const active = el('td', { 'data-col': 'active' });
      active.append(el('span', { className: 'badge ' + (r.active ? 'on' : 'off'), text: r.active ? 'active' : 'inactive' }));
      tr.append(active);
      cell('rateLimitConfig', r.rateLimitConfig || '—');
      cell('rate', r.ratePerSecond ? fmtNum(r.ratePerSecond, 2) : '—', 'num');
      cell('waiting', fmtNum(r.waiting, 0), 'num');
      cell('waitingLater', fmtNum(r.waitingLater, 0), 'num');
      cell('held', fmtNum(r.held, 0), 'num' + (r.held > 0 ? ' warn' : ''));
      cell('businessDay', r.businessDay || '— (none within two years)');
      cell('cutoff', r.cutoff ? fmtTime(r.cutoff) : '— (none)');
      cell('projectedFinish', r.projectedFinish ? fmtTime(r.projectedFinish) : '— (nothing waits)', late ? 'late' : '');
      let margin = '—';
      if (typeof r.marginSeconds === 'number') margin = (r.marginSeconds >= 0 ? '+' : '−') + fmtNum(Math.abs(r.marginSeconds), 0) + ' s';
      cell('margin', margin, 'num' + (late ? ' late' : ''));
      body.append(tr);
    }
  }

  function enabledBadge(node, enabled) {
    node.className = 'badge ' + (enabled ? 'on' : 'off');
    node.textContent = enabled ? 'enabled' : 'STOPPED';
    return node;
  }

  function chartItemType() {
    const sel = $('chart-item-type');
    return sel.value || (state.latest && state.latest.itemTypes[0] && state.latest.itemTypes[0].itemType) || '';
  }

  function renderCharts() {
    const h = state.history.get(chartItemType()) || [];
    if (h.length === 0) return;
    const now = h[h.length - 1].t;
    const series = [{ name: 'rate', points: rates(h) }];
    if (h.some((s) => s.limit > 0)) series.push({ name: 'limit', points: h.map((s) => [s.t, s.limit || 0]) });
    drawChart($('rate-chart'), series, now, '/s');
    drawChart($('queue-chart'), QUEUE_SERIES.map((st) => ({ name: st, points: h.map((s) => [s.t, (s.queue && s.queue[st]) || 0]) })), now, '');
  }

  // niceStep rounds up to a round multiple of a power of ten.
  function niceStep(v) {
    if (!(v > 0)) return 0.25;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }

  // drawChart draws the series ([t, value] points) over the last five
  // minutes up to now as inline SVG, axes and grid included. The first
  // series' count and last value are left on the element (data-samples,
  // data-last), for whoever inspects it.
  function drawChart(root, series, now, unit) {
    const W = 720, H = 240, L = 52, R = 14, T = 12, B = 26;
    const x0 = now - WINDOW_MS;
    let top = 0;
    for (const s of series) for (const p of s.points) if (p[0] >= x0) top = Math.max(top, p[1]);
    const ymax = 4 * niceStep((top * 1.1) / 4); // four grid steps of a round size
    const X = (t) => L + ((Math.max(t, x0) - x0) / WINDOW_MS) * (W - L - R);
    const Y = (v) => H - B - (v / ymax) * (H - T - B);
    clear(root);
    for (let i = 0; i <= 4; i++) {
      const v = (ymax * i) / 4;
      const y = Y(v).toFixed(1);
      root.append(svgEl('line', { class: 'grid-line', x1: L, x2: W - R, y1: y, y2: y }));
      root.append(svgEl('text', { x: L - 6, y: Number(y) + 4, 'text-anchor': 'end' }, fmtNum(v, 2) + (i === 4 ? unit : '')));
    }
    for (let m = 5; m >= 0; m--) {
      const x = X(now - m * 60000).toFixed(1);
      root.append(svgEl('line', { class: 'grid-line', x1: x, x2: x, y1: T, y2: H - B }));
      root.append(svgEl('text', { x, y: H - 8, 'text-anchor': m === 5 ? 'start' : m === 0 ? 'end' : 'middle' }, m === 0 ? 'now' : '−' + m + ' min'));
    }
    root.append(svgEl('line', { class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B }));
    root.append(svgEl('line', { class: 'axis', x1: L, x2: L, y1: T, y2: H - B }));
    for (const s of series) {
      const pts = s.points.filter((p) => p[0] >= x0).map((p) => X(p[0]).toFixed(1) + ',' + Y(p[1]).toFixed(1));
      root.append(svgEl('polyline', { class: 's-' + s.name, 'data-series': s.name, points: pts.join(' ') }));
    }
    const first = series[0].points.filter((p) => p[0] >= x0);
    root.setAttribute('data-samples', String(first.length));
    root.setAttribute('data-last', first.length ? String(Math.round(first[first.length - 1][1] * 100) / 100) : '');
    root.setAttribute('data-ymax', String(ymax));
  }

  // ---- the confirmation dialog -----------------------------------------

  // confirmAction asks in a modal dialog; with word, the operator must
  // type it before Confirm is enabled. It resolves true when confirmed.
  function confirmAction({ title, text, word, okLabel, danger }) {
    const d = $('confirm');
    const input = $('confirm-input');
    const ok = $('confirm-ok');
    $('confirm-title').textContent = title;
    $('confirm-text').textContent = text;
    ok.textContent = okLabel || 'Confirm';
    ok.className = danger ? 'danger' : '';
    input.value = '';
    if (word) {
      $('confirm-type').hidden = false;
      $('confirm-word').textContent = word;
      ok.disabled = true;
      input.oninput = () => { ok.disabled = input.value.trim() !== word; };
    } else {
      $('confirm-type').hidden = true;
      ok.disabled = false;
      input.oninput = null;
    }
    d.returnValue = '';
    return new Promise((resolve) => {
      d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true });
      d.showModal();
      (word ? input : $('confirm-cancel')).focus();
    });
  }

  // ---- the kill switch ---------------------------------------------------

  async function toggleDispatch(itemType) {
    const it = state.latest && state.latest.itemTypes.find((x) => x.itemType === itemType);
    if (!it) return;
    const stopping = it.enabled;
    const confirmed = await confirmAction(stopping ? {
      title: 'Stop dispatching ' + itemType + '?',
      text: 'The kill switch: from the dispatcher\'s next cycle no ' + itemType + ' item is claimed or started; ' +
        'the items wait READY. Executions already started finish. Resume dispatch to go on.',
      word: itemType, okLabel: 'Stop dispatch', danger: true,
    } : {
      title: 'Resume dispatching ' + itemType + '?',
      text: 'From the dispatcher\'s next cycle the items due are claimed and started again, at their pacing config\'s rate.',
      okLabel: 'Resume dispatch',
    });
    if (!confirmed) return;
    const out = $('kill-result');
    try {
      const cfg = await api('PATCH', '/admin/dispatch/config/' + encodeURIComponent(itemType), { enabled: !stopping });
      it.enabled = cfg.enabled;
      renderItemTypes(state.latest);
      state.settings.set(itemType, cfg);
      setResult(out, itemType + ': dispatch ' + (cfg.enabled ? 'resumed' : 'STOPPED') + ' at ' + fmtTime(cfg.updated_at) +
        ' (the dispatcher applies it at its next cycle)', true);
    } catch (err) {
      setResult(out, itemType + ': ' + problemText(err), false);
    }
  }

  // ---- dispatch settings ---------------------------------------------------

  async function loadSettings() {
    const box = $('settings-forms');
    try {
      const res = await api('GET', '/admin/dispatch/config');
      clear(box);
      for (const c of res.configs) {
        state.settings.set(c.item_type, c);
        box.append(settingsForm(c));
      }
    } catch (err) {
      clear(box);
      box.append(el('p', { className: 'error', text: problemText(err) }));
    }
  }

  function settingsForm(c) {
    const result = el('p', { className: 'result', role: 'status' });
    const grid = el('div', { className: 'fields-grid' });
    for (const s of SETTINGS) {
      let input;
      if (s.kind === 'select') {
        input = el('select', { name: s.key });
        for (const o of s.options) input.append(el('option', { value: o, text: o }));
      } else {
        input = el('input', { name: s.key, type: s.kind === 'int' ? 'number' : 'text', step: s.kind === 'int' ? '1' : undefined,
          list: s.list, spellcheck: 'false' });
      }
      input.value = String(c[s.key] ?? '');
      grid.append(el('label', {}, s.key, input));
    }
    const form = el('form', { className: 'settings-form', 'data-item-type': c.item_type },
      el('h3', {}, c.item_type + ' ', enabledBadge(el('span'), c.enabled),
        el('span', { className: 'note', text: ' · updated ' + fmtTime(c.updated_at) })),
      grid, el('p', {}, el('button', { type: 'submit', text: 'Save ' + c.item_type + ' settings' })), result);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const was = state.settings.get(c.item_type) || c;
      const changes = {};
      for (const s of SETTINGS) {
        const raw = form.elements[s.key].value.trim();
        if (raw === String(was[s.key] ?? '')) continue;
        if (s.kind === 'int') {
          if (!/^-?\d+$/.test(raw)) { setResult(result, s.key + ': want a whole number', false); return; }
          changes[s.key] = Number(raw);
        } else {
          changes[s.key] = raw;
        }
      }
      if (Object.keys(changes).length === 0) { setResult(result, 'nothing changed', null); return; }
      try {
        const updated = await api('PATCH', '/admin/dispatch/config/' + encodeURIComponent(c.item_type), changes);
        state.settings.set(c.item_type, updated);
        const fresh = settingsForm(updated);
        form.replaceWith(fresh);
        setResult(fresh.querySelector('.result'), 'saved: ' + Object.entries(changes).map(([k, v]) => k + '=' + v).join(', ') +
          ' (applied at the dispatcher\'s next cycle)', true);
      } catch (err) {
        setResult(result, 'nothing was changed: ' + problemText(err), false);
      }
    });
    return form;
  }

  // ---- rate-limit configs -------------------------------------------------

  async function loadRateLimits() {
    const body = document.querySelector('#rl-table tbody');
    try {
      const res = await api('GET', '/admin/rate-limit/config?limit=1000');
      state.rateLimits = res.configs || [];
    } catch (err) {
      clear(body);
      body.append(el('tr', { className: 'empty' }, el('td', { colspan: 9, text: problemText(err) })));
      return;
    }
    clear(body);
    if (state.rateLimits.length === 0) body.append(el('tr', { className: 'empty' }, el('td', { colspan: 9, text: 'no rate-limit config yet' })));
    for (const c of state.rateLimits) {
      const perSecond = c.active ? c.maxPerWindow / isoSeconds(c.windowSize) : 0;
      body.append(el('tr', { 'data-config': c.configName },
        el('td', { text: c.configName }), el('td', { className: 'num', text: fmtNum(c.maxPerWindow, 0) }), el('td', { text: c.windowSize }),
        el('td', { className: 'num', text: fmtNum(c.headroom, 0) }), el('td', { className: 'num', text: perSecond ? fmtNum(perSecond, 2) : '—' }),
        el('td', {}, el('span', { className: 'badge ' + (c.active ? 'on' : 'off'), text: c.active ? 'active' : 'inactive' })),
        el('td', { className: 'num', text: c.version }), el('td', { text: fmtTime(c.updatedAt) }),
        el('td', {},
          el('button', { type: 'button', className: 'secondary', text: 'Edit', onclick: () => editRateLimit(c) }), ' ',
          c.active ? el('button', { type: 'button', className: 'secondary', text: 'Deactivate', onclick: () => deactivate(c.configName) }) : null)));
    }
    // The requeue's choice and the settings' suggestions.
    const sel = $('dl-config');
    const keep = sel.value;
    while (sel.options.length > 1) sel.remove(1);
    let list = $('rl-names');
    if (!list) { list = el('datalist', { id: 'rl-names' }); document.body.append(list); }
    clear(list);
    for (const c of state.rateLimits) {
      list.append(el('option', { value: c.configName }));
      if (c.active) sel.append(el('option', { value: c.configName, text: c.configName + ' (' + c.maxPerWindow + ' per ' + c.windowSize + ')' }));
    }
    if (Array.from(sel.options).some((o) => o.value === keep)) sel.value = keep;
  }

  // isoSeconds reads the ISO 8601 durations the limiter writes (PT4S,
  // PT1M30S, P1D, PT0.5S) in seconds.
  function isoSeconds(s) {
    const m = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(s || '');
    if (!m) return NaN;
    return (Number(m[1] || 0) * 86400) + (Number(m[2] || 0) * 3600) + (Number(m[3] || 0) * 60) + Number(m[4] || 0);
  }

  function editRateLimit(c) {
    $('rl-name').value = c.configName;
    $('rl-max').value = c.maxPerWindow;
    $('rl-window').value = c.windowSize;
    $('rl-headroom').value = c.headroom;
    $('rl-max').focus();
  }

  async function saveRateLimit(ev) {
    ev.preventDefault();
    const out = $('rl-result');
    const body = { configName: $('rl-name').value.trim(), maxPerWindow: Number($('rl-max').value), windowSize: $('rl-window').value.trim() };
    if ($('rl-headroom').value.trim() !== '') body.headroom = Number($('rl-headroom').value);
    try {
      const c = await api('POST', '/admin/rate-limit/config', body);
      setResult(out, c.configName + ': ' + c.maxPerWindow + ' per ' + c.windowSize + ', headroom ' + c.headroom + ' (version ' + c.version + ')', true);
      await loadRateLimits();
    } catch (err) {
      setResult(out, 'nothing was changed: ' + problemText(err), false);
    }
  }

  async function deactivate(name) {
    const confirmed = await confirmAction({
      title: 'Deactivate ' + name + '?',
      text: 'It stops giving slots: items paced by it wait until it is saved again (which reactivates it). Slots given stay.',
      okLabel: 'Deactivate', danger: true,
    });
    if (!confirmed) return;
    try {
      await api('POST', '/admin/rate-limit/config/' + encodeURIComponent(name) + '/deactivate');
      setResult($('rl-result'), name + ' deactivated', true);
      await loadRateLimits();
    } catch (err) {
      setResult($('rl-result'), problemText(err), false);
    }
  }

  // ---- dead letters ---------------------------------------------------------

  function deadLetterQuery(cursor) {
    const q = new URLSearchParams({ limit: '100' });
    for (const [name, id] of [['source', 'dl-source'], ['tenantId', 'dl-tenant'], ['reason', 'dl-reason']]) {
      const v = $(id).value.trim();
      if (v) q.set(name, v);
    }
    if (cursor) q.set('cursor', cursor);
    return '/admin/dead-letters?' + q.toString();
  }

  async function loadDeadLetters(reset) {
    const body = document.querySelector('#dl-table tbody');
    let res;
    try {
      res = await api('GET', deadLetterQuery(reset ? '' : state.dlNext));
    } catch (err) {
      setResult($('dl-result'), problemText(err), false);
      return;
    }
    if (reset) { clear(body); $('dl-all').checked = false; }
    for (const l of res.deadLetters) {
      body.append(el('tr', { 'data-id': l.id, 'data-item-id': l.itemId },
        el('td', {}, el('input', { type: 'checkbox', className: 'dl-pick', value: l.id, 'aria-label': 'select ' + l.id, onchange: updateRequeueButton })),
        el('td', { text: l.id }), el('td', { text: l.source }), el('td', { text: l.itemType }), el('td', { text: l.itemId }),
        el('td', { text: l.tenantId }), el('td', { text: fmtTime(l.diedAt) }), el('td', { className: 'num', text: l.attempts }),
        el('td', { className: 'wrap', text: l.reason })));
    }
    state.dlNext = res.next || '';
    $('dl-more').hidden = !state.dlNext;
    const shown = body.querySelectorAll('tr[data-id]').length;
    if (shown === 0) body.append(el('tr', { className: 'empty' }, el('td', { colspan: 9, text: 'no dead letters' })));
    $('dl-count').textContent = shown + ' shown' + (state.dlNext ? ', more to load' : '');
    updateRequeueButton();
  }

  function picked() {
    return Array.from(document.querySelectorAll('#dl-table input.dl-pick:checked')).map((c) => c.value);
  }

  function updateRequeueButton() {
    const n = picked().length;
    const b = $('dl-requeue-button');
    b.disabled = n === 0;
    b.textContent = n ? 'Requeue ' + n + ' selected' : 'Requeue selected';
  }

  async function requeue(ev) {
    ev.preventDefault();
    const ids = picked();
    if (ids.length === 0) return;
    const config = $('dl-config').value;
    const confirmed = await confirmAction({
      title: 'Requeue ' + ids.length + ' dead letter' + (ids.length === 1 ? '' : 's') + '?',
      text: 'Each goes again at a new slot from ' + (config ? 'the rate-limit config ' + config : 'its item type\'s own rate-limit config') +
        ': a queue item is dispatched again; a rail instruction is sent again, its payment debited again first if it was returned.',
      okLabel: 'Requeue',
    });
    if (!confirmed) return;
    const out = $('dl-result');
    const body = { ids, rateLimitConfig: config };
    const reason = $('dl-requeue-reason').value.trim();
    if (reason) body.reason = reason;
    try {
      const res = await api('POST', '/admin/dead-letters/requeue', body);
      let text = 'requeued ' + res.requeued + ' through ' + (res.configs || []).join(', ');
      if (res.firstSlot) text += '; slots ' + fmtTime(res.firstSlot) + ' to ' + fmtTime(res.lastSlot);
      if (res.unslotted) text += '; ' + res.unslotted + ' found no slot and stay dead';
      for (const [id, why] of Object.entries(res.refused || {})) text += '\nkept dead: ' + id + ': ' + why;
      setResult(out, text, res.requeued > 0);
    } catch (err) {
      setResult(out, 'nothing was requeued: ' + problemText(err), false);
    }
    await loadDeadLetters(true);
  }

  // ---- pauses ---------------------------------------------------------------------

  const SCOPE_NAMES = { TENANT: 'tenant', BATCH: 'file', RAIL: 'rail' };

  // repacedText says how a lever moved the waiting payments.
  function repacedText(r) {
    let text = r.moved + ' paced again';
    if (r.firstSlot) text += ', slots ' + fmtTime(r.firstSlot) + ' to ' + fmtTime(r.lastSlot);
    for (const [k, what] of [['rolled', 'rolled to a later day'], ['held', 'held at the cut-off'], ['rejected', 'rejected at the cut-off'],
      ['claimed', 'left to executions already claimed']]) {
      if (r[k]) text += '; ' + r[k] + ' ' + what;
    }
    return text;
  }

  async function loadPauses() {
    const body = document.querySelector('#pause-table tbody');
    let res;
    try {
      res = await api('GET', '/admin/pauses');
    } catch (err) {
      clear(body);
      body.append(el('tr', { className: 'empty' }, el('td', { colspan: 4, text: problemText(err) })));
      return;
    }
    clear(body);
    if (res.pauses.length === 0) body.append(el('tr', { className: 'empty' }, el('td', { colspan: 4, text: 'nothing is paused' })));
    for (const p of res.pauses) {
      body.append(el('tr', { 'data-scope': p.scope, 'data-id': p.id },
        el('td', { text: SCOPE_NAMES[p.scope] || p.scope }), el('td', { text: p.id }), el('td', { text: fmtTime(p.pausedAt) }),
        el('td', {}, el('button', { type: 'button', className: 'resume', text: 'Resume', onclick: () => resume(p) }))));
    }
  }

  async function pause(ev) {
    ev.preventDefault();
    const scope = $('pause-scope').value;
    const id = $('pause-id').value.trim();
    if (!id) return;
    const what = (SCOPE_NAMES[scope] || scope) + ' ' + id;
    const confirmed = await confirmAction({
      title: 'Pause ' + what + '?',
      text: 'Its waiting payments stay SCHEDULED in their order and do not execute until it is resumed; their slots go to the others. ' +
        'Executions that have begun finish.',
      word: id, okLabel: 'Pause', danger: true,
    });
    if (!confirmed) return;
    const out = $('pause-result');
    try {
      const res = await api('POST', '/admin/pauses', { scope, id });
      setResult(out, what + ' paused: ' + res.payments + ' waiting payment' + (res.payments === 1 ? '' : 's') + ' held, ' + res.parked + ' parked now' +
        (res.payments > res.parked ? ' (the others park as their executions reach them)' : ''), true);
      $('pause-id').value = '';
    } catch (err) {
      setResult(out, 'nothing was paused: ' + problemText(err), false);
    }
    await loadPauses();
  }

  async function resume(p) {
    const what = (SCOPE_NAMES[p.scope] || p.scope) + ' ' + p.id;
    const confirmed = await confirmAction({
      title: 'Resume ' + what + '?',
      text: 'Its paused payments are paced again from now at their rate-limit configs\' rates, in their order; one that can no longer make its ' +
        'rail\'s cut-off meets its tenant\'s rule.',
      okLabel: 'Resume',
    });
    if (!confirmed) return;
    const out = $('pause-result');
    try {
      const res = await api('DELETE', '/admin/pauses/' + encodeURIComponent(p.scope) + '/' + encodeURIComponent(p.id));
      setResult(out, what + ' resumed: ' + repacedText(res), true);
    } catch (err) {
      setResult(out, what + ': ' + problemText(err), false);
    }
    await loadPauses();
  }

  // ---- approvals -------------------------------------------------------

  async function loadApprovals(ev) {
    if (ev) ev.preventDefault();
    // A checker's token bound to a tenant names none: the API answers
    // with, and decides in, the token's own.
    const bound = state.checker && state.checker.bound;
    const tenant = bound ? '' : $('appr-tenant').value.trim();
    const body = document.querySelector('#appr-table tbody');
    if (!tenant && !bound) return;
    const query = { status: 'AWAITING_APPROVAL', limit: '100' };
    if (tenant) query.tenantId = tenant;
    let res;
    try {
      res = await api('GET', '/v1/payments?' + new URLSearchParams(query).toString());
    } catch (err) {
      clear(body);
      body.append(el('tr', { className: 'empty' }, el('td', { colspan: 6, text: problemText(err) })));
      return;
    }
    clear(body);
    if (bound && res.payments.length > 0) $('appr-own-tenant').textContent = 'tenant ' + res.payments[0].tenantId + ' (this token\'s)';
    if (res.payments.length === 0) body.append(el('tr', { className: 'empty' }, el('td', { colspan: 6, text: 'nothing awaits approval' })));
    for (const p of res.payments) {
      body.append(el('tr', { 'data-id': p.paymentId },
        el('td', { text: p.paymentId }), el('td', { className: 'num', text: (p.amount || '') + ' ' + (p.currency || '') }),
        el('td', { text: fmtTime(p.requestedExecutionTime) }), el('td', { text: p.rail || '' }), el('td', { className: 'wrap', text: p.statusReason || '' }),
        el('td', {},
          el('button', { type: 'button', className: 'approve', text: 'Approve', onclick: () => decide(tenant, p.paymentId, false) }), ' ',
          el('button', { type: 'button', className: 'deny danger', text: 'Deny', onclick: () => decide(tenant, p.paymentId, true) }))));
    }
  }

  async function decide(tenant, id, deny) {
    const out = $('appr-result');
    const body = { tenantId: tenant, paymentIds: [id] };
    if (deny) {
      const reason = (window.prompt('Deny ' + id + ': why? (kept as its status reason)') || '').trim();
      if (!reason) return;
      body.reason = reason;
    }
    try {
      const res = await api('POST', deny ? '/v1/payments/deny' : '/v1/payments/approve', body);
      // The row may be stale: the payment was decided, or cancelled, since
      // the list was read, and the call selected nothing.
      if (res.selected === 0) setResult(out, id + ' no longer awaits approval (decided or cancelled meanwhile): nothing was decided', null);
      else setResult(out, deny ? id + ' denied: ' + res.rejected + ' rejected' :
        id + ' approved: ' + (res.scheduled ? 'its approvals are complete, it is scheduled' : (res.already ? 'this token approved it before' : 'it awaits more approvals')), true);
    } catch (err) {
      setResult(out, id + ': ' + problemText(err), false);
    }
    await loadApprovals();
  }

  // setPriority changes the priority of the payment looked up.
  async function setPriority(ev) {
    ev.preventDefault();
    const p = state.payment;
    if (!p) return;
    const priority = $('prio-value').value;
    const out = $('prio-result');
    try {
      const res = await api('POST', '/v1/payments/' + encodeURIComponent(p.paymentId) + '/priority?tenantId=' + encodeURIComponent(p.tenantId), { priority });
      if (res.changed === 0) {
        setResult(out, 'its priority is ' + priority + ' already', null);
      } else {
        setResult(out, 'priority ' + priority + '; the payments waiting with it: ' + repacedText(res.repaced), true);
        const dd = document.querySelector('#pay-fields dd[data-field="priority"]');
        if (dd) dd.textContent = priority;
      }
    } catch (err) {
      setResult(out, 'nothing was changed: ' + problemText(err), false);
    }
  }

  // ---- a payment ---------------------------------------------------------------

  async function lookUp(ev) {
    ev.preventDefault();
    const id = $('pay-id').value.trim();
    const tenant = $('pay-tenant').value.trim();
    $('pay-error').textContent = '';
    $('prio-result').textContent = '';
    $('pay-view').hidden = true;
    state.payment = null;
    if (!id) return;
    let v;
    try {
      v = await api('GET', '/v1/payments/' + encodeURIComponent(id) + (tenant ? '?tenantId=' + encodeURIComponent(tenant) : ''));
    } catch (err) {
      $('pay-error').textContent = problemText(err);
      return;
    }
    const dl = $('pay-fields');
    clear(dl);
    const field = (name, value) => { if (value !== undefined && value !== null && value !== '') dl.append(el('dt', { text: name }), el('dd', { 'data-field': name, text: String(value) })); };
    field('paymentId', v.paymentId);
    field('tenantId', v.tenantId);
    field('status', v.status);
    field('statusReason', v.statusReason);
    field('queueStatus', v.queueStatus);
    field('priority', v.priority || 'NORMAL');
    field('amount', v.amount ? v.amount + ' ' + (v.currency || '') : '');
    field('requestedExecutionTime', fmtTime(v.requestedExecutionTime));
    field('scheduledExecutionTime', v.scheduledExecutionTime ? fmtTime(v.scheduledExecutionTime) : '');
    field('createdAt', fmtTime(v.createdAt));
    field('updatedAt', fmtTime(v.updatedAt));
    field('executionRef', v.executionRef);
    state.payment = { paymentId: v.paymentId, tenantId: v.tenantId };
    $('prio-value').value = v.priority || 'NORMAL';
    $('prio-form').hidden = !(v.status === 'SCHEDULED' || v.status === 'HELD' || v.status === 'RECEIVED');
    const links = $('pay-links');
    clear(links);
    const ui = v.links && v.links.temporalUI;
    if (ui && /^https?:$/.test(safeProtocol(ui))) {
      links.append(el('a', { id: 'pay-temporal-link', href: ui, target: '_blank', rel: 'noopener noreferrer', text: 'Open its execution in Temporal\'s Web UI' }));
    } else {
      links.append(el('span', { className: 'note', text: v.executionRef ? 'No Temporal Web UI is known to serve (see --temporal-ui-url).' : 'No execution yet.' }));
    }
    const logBody = document.querySelector('#proc-log tbody');
    clear(logBody);
    $('proc-summary').textContent = '';
    $('pay-view').hidden = false;
    if (!v.process || !v.process.processId) {
      $('proc-summary').textContent = 'Its execution has not begun: no process yet.';
      return;
    }
    try {
      const p = await api('GET', '/v1/processes/' + encodeURIComponent(v.process.processId));
      let s = p.processType + ' ' + p.processId + ': ' + p.status + (p.currentStep ? ' at ' + p.currentStep : '');
      if (p.errorCode) s += ' · ' + p.errorCode + (p.errorMessage ? ': ' + p.errorMessage : '');
      $('proc-summary').textContent = s;
      for (const e of p.log || []) {
        const detail = e.detail === undefined || e.detail === null ? '' : JSON.stringify(e.detail);
        logBody.append(el('tr', {}, el('td', { className: 'num', text: e.seq }), el('td', { text: fmtTime(e.at) }), el('td', { text: e.event }),
          el('td', { text: e.step || '' }), el('td', { className: 'num', text: e.attempt || '' }), el('td', { text: e.errorCode || '' }),
          el('td', { text: e.actor || '' }), el('td', { className: 'wrap', text: detail.length > 300 ? detail.slice(0, 300) + '…' : detail })));
      }
    } catch (err) {
      $('proc-summary').textContent = 'its process log cannot be read: ' + problemText(err);
    }
  }

  function safeProtocol(u) {
    try { return new URL(u, location.href).protocol; } catch (_) { return ''; }
  }

  // ---- start ---------------------------------------------------------------------

  function start() {
    $('sign-in-form').addEventListener('submit', signIn);
    $('sign-out').addEventListener('click', () => signOut('Signed out.'));
    $('chart-item-type').addEventListener('change', renderCharts);
    $('dl-filter').addEventListener('submit', (ev) => { ev.preventDefault(); loadDeadLetters(true); });
    $('dl-more').addEventListener('click', () => loadDeadLetters(false));
    $('dl-all').addEventListener('change', () => {
      for (const c of document.querySelectorAll('#dl-table input.dl-pick')) c.checked = $('dl-all').checked;
      updateRequeueButton();
    });
    $('dl-requeue').addEventListener('submit', requeue);
    $('rl-form').addEventListener('submit', saveRateLimit);
    $('pay-form').addEventListener('submit', lookUp);
    $('prio-form').addEventListener('submit', setPriority);
    $('pause-form').addEventListener('submit', pause);
    $('pause-refresh').addEventListener('click', loadPauses);
    $('appr-filter').addEventListener('submit', loadApprovals);
    document.addEventListener('visibilitychange', () => { if (state.signedIn && document.visibilityState === 'visible') startPolling(); });
    if (!token()) { signOut(''); return; }
    open().catch((err) => {
      let msg = problemText(err);
      if (err instanceof APIError && err.status === 401) msg = 'The token was refused: sign in again.';
      if (err instanceof APIError && err.status === 403) msg = NO_ACCESS;
      signOut(msg);
    });
  }

  start();
})();
