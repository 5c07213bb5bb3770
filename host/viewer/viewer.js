'use strict';
// The report viewer. Everything here runs in the reader's browser: the
// answer is parsed, checked and drawn locally and never sent anywhere.
// The answer is untrusted input, so the DOM is built only with
// createElement and textContent (no markup is ever parsed from a
// string), and nothing sets a style attribute (the page's
// Content-Security-Policy forbids them).
// Every figure of the answer is drawn as a <span class="v"> whose
// data-path is its RFC 6901 pointer, so a reader (and the browser test)
// can tie each printed figure to the signed member it came from.
(() => {
  const SVG = 'http://www.w3.org/2000/svg';
  const LIMIT = 400; // rows drawn before a "show all" button
  const $ = (id) => document.getElementById(id);

  // ---------- DOM helpers ----------
  function h(tag, cls, ...kids) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    for (const k of kids) add(e, k);
    return e;
  }
  function add(parent, kid) {
    if (kid === null || kid === undefined || kid === false) return;
    if (Array.isArray(kid)) { for (const k of kid) add(parent, k); return; }
    parent.appendChild(typeof kid === 'string' ? document.createTextNode(kid) : kid);
  }
  function s(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    for (const k of kids) add(e, k);
    return e;
  }
  const ptr = (base, key) => base + '/' + String(key).replace(/~/g, '~0').replace(/\//g, '~1');
  const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  const isPrim = (v) => v === null || typeof v !== 'object';
  // The criteria's absent tokens travel as {"value": TOKEN, "reason": r}.
  const isAbsent = (v) => isObj(v) && Object.keys(v).length === 2 && typeof v.value === 'string' && typeof v.reason === 'string';

  // ---------- leaves ----------
  function text(v) {
    if (typeof v === 'string') return v;
    if (Array.isArray(v) && v.length === 0) return '[]';
    if (isObj(v) && Object.keys(v).length === 0) return '{}';
    return JSON.stringify(v);
  }
  function leaf(v, path) {
    const e = h('span', 'v', text(v));
    e.dataset.path = path;
    return e;
  }
  const key = (name) => h('span', 'k', String(name));

  // ---------- generic rendering ----------
  function absent(v, path) {
    return h('span', 'absent', leaf(v.value, ptr(path, 'value')), ' — ', leaf(v.reason, ptr(path, 'reason')));
  }
  function flatRecord(v) {
    return isObj(v) && !isAbsent(v) && Object.keys(v).length > 0 &&
      Object.values(v).every((x) => isPrim(x) || isAbsent(x) || (Array.isArray(x) && x.every(isPrim)));
  }
  function gen(v, path) {
    if (isPrim(v)) return leaf(v, path);
    if (isAbsent(v)) return absent(v, path);
    if (Array.isArray(v)) {
      if (v.length === 0) return leaf(v, path);
      if (v.every(isPrim)) return inline(v, path);
      if (v.every((x) => Array.isArray(x) && x.length > 0 && x.every(isPrim))) return tuples(v, path);
      if (v.every((x) => isObj(x) && !isAbsent(x))) return table(v, path);
      return listOf(v, path);
    }
    const keys = Object.keys(v);
    if (keys.length === 0) return leaf(v, path);
    if (keys.length > 1 && Object.values(v).every(flatRecord)) return recordTable(v, path);
    return kv(v, path, keys);
  }
  function kv(obj, path, keys) {
    const tb = h('tbody');
    for (const k of keys) tb.appendChild(h('tr', '', h('th', '', key(k)), h('td', '', gen(obj[k], ptr(path, k)))));
    return h('table', 'kv', tb);
  }
  // The host's JSON is canonical, so members arrive sorted by name; the
  // criteria's own order reads better where the page knows it.
  const ORDER = ['message_count', 'total_tokens', 'min_tokens', 'lower_median', 'mean_tokens', 'p90', 'max_tokens', 'largest_contributors',
    'turn_count', 'turns', 'group_count', 'duplicated_block_count', 'excess_block_count', 'excess_tokens', 'excess_share', 'groups',
    'eligible_block_count', 'pair_count', 'listing_bound', 'pairs', 'covered_message_count', 'ignored_entry_count', 'invalid_entry_count',
    'whole_record', 'covered', 'units', 'block_index', 'p_class', 'c_class', 'tokens', 'share', 'block_count', 'excluded'];
  const rank = (k) => { const i = ORDER.indexOf(k); return i < 0 ? ORDER.length : i; };
  function rest(obj, path, used) {
    const keys = Object.keys(obj).filter((k) => !used.includes(k)).sort((x, y) => rank(x) - rank(y));
    return keys.length ? kv(obj, path, keys) : null;
  }
  // more draws the first LIMIT items and a button for the others, so a
  // 10,000-row list does not hold the page up until someone asks for it.
  function more(container, n, draw) {
    for (let i = 0; i < Math.min(n, LIMIT); i++) draw(i);
    if (n <= LIMIT) return null;
    const b = h('button', 'more', `show all ${n} rows`);
    b.type = 'button';
    b.addEventListener('click', () => { for (let i = LIMIT; i < n; i++) draw(i); b.remove(); });
    return b;
  }
  function inline(arr, path) {
    const span = h('span', 'list');
    const b = more(span, arr.length, (i) => { if (i) span.appendChild(document.createTextNode(', ')); span.appendChild(leaf(arr[i], ptr(path, i))); });
    return b ? h('span', '', span, ' ', b) : span;
  }
  function tuples(arr, path) {
    const span = h('span', 'list');
    const b = more(span, arr.length, (i) => {
      if (i) span.appendChild(document.createTextNode(' '));
      const t = h('span', 'tuple', '(');
      arr[i].forEach((x, j) => { if (j) t.appendChild(document.createTextNode(', ')); t.appendChild(leaf(x, ptr(ptr(path, i), j))); });
      t.appendChild(document.createTextNode(')'));
      span.appendChild(t);
    });
    return b ? h('span', '', span, ' ', b) : span;
  }
  function listOf(arr, path) {
    const ol = h('ol', 'plain');
    ol.start = 0;
    const b = more(ol, arr.length, (i) => ol.appendChild(h('li', '', gen(arr[i], ptr(path, i)))));
    return h('div', '', ol, b);
  }
  function columns(rows) {
    const cols = [];
    for (const r of rows) for (const k of Object.keys(r)) if (!cols.includes(k)) cols.push(k);
    return cols;
  }
  function table(rows, path, cols) {
    cols = cols || columns(rows);
    const thead = h('thead', '', h('tr', '', cols.map((c) => h('th', '', key(c)))));
    const tb = h('tbody');
    const b = more(tb, rows.length, (i) => {
      const r = rows[i];
      tb.appendChild(h('tr', '', cols.map((c) => h('td', isPrim(r[c]) && typeof r[c] !== 'string' ? 'num' : '', c in r ? gen(r[c], ptr(ptr(path, i), c)) : ''))));
    });
    return h('div', rows.length > 25 ? 'scroll' : '', h('table', '', thead, tb), b);
  }
  function recordTable(obj, path) {
    const names = Object.keys(obj);
    const cols = columns(names.map((n) => obj[n]));
    const tb = h('tbody');
    for (const n of names) {
      const r = obj[n];
      tb.appendChild(h('tr', '', h('th', '', key(n)), cols.map((c) => h('td', '', c in r ? gen(r[c], ptr(ptr(path, n), c)) : ''))));
    }
    return h('table', '', h('thead', '', h('tr', '', h('th', ''), cols.map((c) => h('th', '', key(c))))), tb);
  }
  function part(title, ...kids) {
    return h('section', 'part', h('h2', '', title), ...kids);
  }
  function sentence(answer, k) {
    return typeof answer[k] === 'string' ? h('p', 'fixed', leaf(answer[k], ptr('', k))) : null;
  }
  function line(answer, k) {
    return typeof answer[k] === 'string' ? h('div', 'line', leaf(answer[k], ptr('', k))) : null;
  }

  // ---------- figures in plots ----------
  // est:~N and est:~N.NN% are the criteria's typography; plots read the
  // number back out of it and print the original string beside each mark.
  function num(v) {
    if (typeof v === 'number') return v;
    if (typeof v !== 'string') return NaN;
    const m = /^(?:est:~)?(-?\d+(?:\.\d+)?)%?$/.exec(v);
    return m ? Number(m[1]) : NaN;
  }
  // Shades of one slate hue: a share is drawn as a quantity, never as a
  // colour that could read as a judgement.
  function shade(i, n) {
    const light = n <= 1 ? 45 : 22 + Math.round((i * 63) / (n - 1));
    return `hsl(215, 16%, ${light}%)`;
  }
  function swatch(fill) {
    return s('svg', { width: 12, height: 12, viewBox: '0 0 12 12', class: 'swatch' }, s('rect', { x: 0.5, y: 0.5, width: 11, height: 11, fill, stroke: '#5b6472' }));
  }
  function stackedBar(rows, label) {
    const drawn = rows.filter((r) => num(r.tokens) > 0);
    const sum = drawn.reduce((a, r) => a + num(r.tokens), 0);
    const W = 1000;
    const g = s('svg', { viewBox: `0 0 ${W} 36`, role: 'img', 'aria-label': label });
    const legend = h('div', 'legend');
    let x = 0;
    drawn.forEach((r, i) => {
      const w = (num(r.tokens) / sum) * W;
      const fill = shade(i, drawn.length);
      g.appendChild(s('rect', { x: x.toFixed(2), y: 4, width: Math.max(w, 0.5).toFixed(2), height: 28, fill, stroke: '#ffffff', 'stroke-width': 1 }, s('title', {}, `${r.class} ${r.tokens} ${r.share}`)));
      x += w;
      legend.appendChild(h('span', '', swatch(fill), h('span', 'k', String(r.class)), ' ', h('span', 'k', `${r.tokens} · ${r.share}`)));
    });
    if (!drawn.length) legend.appendChild(h('span', 'note', 'no class has a positive token figure, so the bar is empty'));
    return [g, legend];
  }
  function axisPlot(width, height, kids) {
    return s('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img' }, ...kids);
  }
  function bars(items, label) {
    // items: [{name, value, text}]
    const max = Math.max(1, ...items.map((i) => i.value));
    const W = 1000, H = 190, base = 150, bw = Math.min(120, (W - 40) / Math.max(items.length, 1));
    const kids = [s('line', { x1: 30, y1: base, x2: W, y2: base, stroke: '#5b6472' })];
    items.forEach((it, i) => {
      const bh = (it.value / max) * 120;
      const x = 34 + i * bw;
      kids.push(s('rect', { x: x.toFixed(1), y: (base - bh).toFixed(1), width: (bw * 0.7).toFixed(1), height: Math.max(bh, 0).toFixed(1), fill: shade(2, 6) }, s('title', {}, `${it.name}: ${it.text}`)));
      if (items.length <= 40) {
        kids.push(s('text', { x: (x + bw * 0.35).toFixed(1), y: (base - bh - 4).toFixed(1), 'text-anchor': 'middle' }, it.text));
        kids.push(s('text', { x: (x + bw * 0.35).toFixed(1), y: base + 16, 'text-anchor': 'middle' }, it.name));
      }
    });
    const g = axisPlot(W, H, kids);
    g.setAttribute('aria-label', label);
    return g;
  }

  // ---------- context-audit (context-composition/v1) ----------
  function factorHead(f, p) {
    return h('h3', '', leaf(f.id, ptr(p, 'id')), ' · metric ', leaf(f.metric, ptr(p, 'metric')), ' · ', h('span', 'status', leaf(f.status, ptr(p, 'status'))));
  }
  const conventionKeys = ['convention', 'literature_line', 'note', 'absence_note', 'cmpt_note'];
  function conventions(f, p) {
    return conventionKeys.filter((k) => typeof f[k] === 'string').map((k) => h('p', 'fixed', key(k), ': ', leaf(f[k], ptr(p, k))));
  }
  function classRows(f, p, k, title) {
    const rows = f[k];
    if (!Array.isArray(rows)) return null;
    return [stackedBar(rows, title), table(rows, ptr(p, k), ['class', 'block_count', 'tokens', 'share', 'note', 'raw_values'].filter((c) => rows.some((r) => c in r)).concat(columns(rows).filter((c) => !['class', 'block_count', 'tokens', 'share', 'note', 'raw_values'].includes(c))))];
  }
  function crossTab(f, p) {
    const m = f.margins, cells = f.cells;
    if (!isObj(m) || !Array.isArray(m.axis_p) || !Array.isArray(m.axis_c) || !Array.isArray(cells)) return null;
    const at = new Map();
    cells.forEach((c, i) => at.set(`${c.p}\u0000${c.c}`, i));
    const head = h('tr', '', h('th', '', 'P \\ C'), m.axis_c.map((c, j) => h('th', '', leaf(c.class, `${p}/margins/axis_c/${j}/class`))), h('th', '', 'all C'));
    const tb = h('tbody');
    const cellFig = (base, o) => [leaf(o.block_count, base + '/block_count'), h('br'), isAbsent(o.tokens) ? absent(o.tokens, base + '/tokens') : leaf(o.tokens, base + '/tokens')];
    m.axis_p.forEach((r, i) => {
      const rp = `${p}/margins/axis_p/${i}`;
      const tds = [h('th', '', leaf(r.class, rp + '/class'))];
      if (typeof r.note === 'string') {
        const td = h('td', 'note', leaf(r.note, rp + '/note'));
        td.colSpan = m.axis_c.length + 1;
        tds.push(td);
      } else {
        for (const c of m.axis_c) {
          const k = at.get(`${r.class}\u0000${c.class}`);
          tds.push(h('td', 'num', k === undefined ? '' : cellFig(`${p}/cells/${k}`, cells[k])));
        }
        tds.push(h('td', 'num', cellFig(rp, r)));
      }
      tb.appendChild(h('tr', '', tds));
    });
    tb.appendChild(h('tr', '', h('th', '', 'all P'), m.axis_c.map((c, j) => h('td', 'num', cellFig(`${p}/margins/axis_c/${j}`, c))), h('td', '')));
    const listed = h('details', '', h('summary', '', 'the cells as listed in the answer'), table(cells, ptr(p, 'cells'), ['p', 'c', 'block_count', 'tokens']));
    const unused = Object.keys(m).filter((k) => k !== 'axis_p' && k !== 'axis_c');
    return [h('p', 'caption', 'Each cell: block count, then tokens. Empty cells hold no block.'), h('div', 'scroll', h('table', 'xtab', h('thead', '', head), tb)), listed, unused.length ? kv(m, ptr(p, 'margins'), unused) : null];
  }
  function distribution(f, p) {
    const max = num(f.max_tokens);
    if (!(max >= 0)) return null;
    const W = 1000, left = 40, right = 960, y = 70;
    const X = (v) => left + (max > 0 ? (v / max) * (right - left) : 0);
    const marks = [
      ['min', f.min_tokens], ['lower median', f.lower_median && f.lower_median.tokens], ['mean', f.mean_tokens], ['p90', f.p90 && f.p90.tokens], ['max', f.max_tokens],
    ].filter(([, v]) => num(v) >= 0);
    const kids = [s('line', { x1: left, y1: y, x2: right, y2: y, stroke: '#5b6472' })];
    marks.forEach(([name, v], i) => {
      const x = X(num(v));
      kids.push(s('line', { x1: x.toFixed(1), y1: y - 14, x2: x.toFixed(1), y2: y + 14, stroke: '#1d2430', 'stroke-width': 2 }));
      kids.push(s('text', { x: x.toFixed(1), y: i % 2 ? y + 30 : y - 20, 'text-anchor': 'middle' }, `${name} ${text(v)}`));
    });
    const plot = axisPlot(W, 110, kids);
    plot.setAttribute('aria-label', 'per-message token distribution');
    const out = [h('p', 'caption', 'Per-message tokens on one axis from 0 to the largest message: min, lower median, mean, p90, max.'), plot];
    if (Array.isArray(f.largest_contributors) && f.largest_contributors.length) {
      out.push(h('p', 'caption', 'Largest contributors, one bar per message index.'));
      out.push(bars(f.largest_contributors.map((c) => ({ name: `#${c.message_index}`, value: num(c.tokens) || 0, text: text(c.tokens) })), 'largest contributors'));
    }
    return out;
  }
  function turnGrowth(f, p) {
    const turns = f.turns;
    if (!Array.isArray(turns) || !turns.length) return null;
    const W = 1000, H = 240, left = 60, right = 980, top = 20, base = 200;
    const maxC = Math.max(1, ...turns.map((t) => num(t.cumulative_tokens) || 0));
    const n = turns.length;
    const X = (i) => left + (n > 1 ? (i / (n - 1)) * (right - left) : (right - left) / 2);
    const Y = (v) => base - (v / maxC) * (base - top);
    const kids = [s('line', { x1: left, y1: base, x2: right, y2: base, stroke: '#5b6472' }), s('line', { x1: left, y1: top, x2: left, y2: base, stroke: '#5b6472' })];
    const bw = Math.max(1, Math.min(30, (right - left) / n - 2));
    turns.forEach((t, i) => {
      const inc = num(t.increment_tokens) || 0;
      kids.push(s('rect', { x: (X(i) - bw / 2).toFixed(1), y: Y(inc).toFixed(1), width: bw.toFixed(1), height: (base - Y(inc)).toFixed(1), fill: shade(4, 6) }, s('title', {}, `turn ${t.turn}: +${text(t.increment_tokens)}`)));
    });
    kids.push(s('polyline', { points: turns.map((t, i) => `${X(i).toFixed(1)},${Y(num(t.cumulative_tokens) || 0).toFixed(1)}`).join(' '), fill: 'none', stroke: '#1d2430', 'stroke-width': 2 }));
    kids.push(s('text', { x: left - 6, y: top + 4, 'text-anchor': 'end' }, `${maxC}`));
    kids.push(s('text', { x: left - 6, y: base, 'text-anchor': 'end' }, '0'));
    kids.push(s('text', { x: left, y: base + 18 }, `turn ${turns[0].turn}`));
    kids.push(s('text', { x: right, y: base + 18, 'text-anchor': 'end' }, `turn ${turns[n - 1].turn}`));
    const plot = axisPlot(W, H, kids);
    plot.setAttribute('aria-label', 'turn growth');
    return [h('p', 'caption', 'Cumulative tokens by turn (line) and each turn\'s increment (bars), both est:~ figures.'), plot];
  }
  function contextFactor(f, p) {
    const box = h('div', 'factor', factorHead(f, p));
    if (f.status !== 'ASSESSABLE') {
      box.appendChild(h('p', '', key('reason'), ': ', typeof f.reason === 'string' ? leaf(f.reason, ptr(p, 'reason')) : gen(f.reason, ptr(p, 'reason'))));
      add(box, rest(f, p, ['id', 'metric', 'status', 'reason']));
      return box;
    }
    const used = ['id', 'metric', 'status', ...conventionKeys.filter((k) => typeof f[k] === 'string')];
    switch (f.id) {
      case 'F-1': case 'F-2':
        add(box, classRows(f, p, 'rows', f.id === 'F-1' ? 'axis P composition' : 'axis C composition'));
        used.push('rows');
        break;
      case 'F-2b':
        add(box, crossTab(f, p));
        used.push('cells', 'margins');
        break;
      case 'F-3':
        add(box, distribution(f, p));
        break;
      case 'F-5':
        add(box, turnGrowth(f, p));
        break;
    }
    add(box, rest(f, p, used));
    add(box, conventions(f, p));
    return box;
  }
  function notAssessable(factors) {
    const items = [];
    factors.forEach((f, i) => {
      if (isObj(f) && f.status !== 'ASSESSABLE' && typeof f.reason === 'string') {
        items.push(h('li', '', leaf(f.id, `/factors/${i}/id`), ': ', leaf(f.status, `/factors/${i}/status`), ' — ', leaf(f.reason, `/factors/${i}/reason`)));
      }
    });
    return items.length ? h('ul', 'plain', items) : h('p', 'note', 'Every factor is printed ASSESSABLE.');
  }
  function contextAudit(a) {
    const out = [];
    const used = ['measurement_line', 'labelling', 'scope', 'header_facts', 'factors', 'never_assessable'];
    out.push(part('Measurement line', line(a, 'measurement_line'), sentence(a, 'labelling')));
    const record = ['declared_format', 'record_bytes', 'record_was_json_string', 'messages_left_out_count', 'unknown_top_level_members', 'method'].filter((k) => k in a);
    used.push(...record);
    out.push(part('The record', kv(a, '', record)));
    if (isObj(a.header_facts)) {
      const hf = a.header_facts;
      const kids = [];
      for (const k of Object.keys(hf)) kids.push(h('h3', '', key(k)), gen(hf[k], ptr('/header_facts', k)));
      out.push(part('Header facts', kids));
    }
    if (Array.isArray(a.factors)) {
      out.push(part('Factors printed NOT-ASSESSABLE, with their reasons', notAssessable(a.factors)));
      out.push(part('Factors', a.factors.map((f, i) => (isObj(f) ? contextFactor(f, `/factors/${i}`) : gen(f, `/factors/${i}`)))));
    }
    if (Array.isArray(a.never_assessable)) out.push(part('Never assessable under this criteria', gen(a.never_assessable, '/never_assessable')));
    out.push(part('Scope', sentence(a, 'scope')));
    return { out, used };
  }

  // ---------- scope-hygiene (memory-scope-hygiene/v1) ----------
  function scopeHygiene(a) {
    const out = [line(a, 'verdict_line') && part('Verdict line', line(a, 'verdict_line'))];
    const used = ['verdict_line', 'factors', 'coverage'];
    const ex = ['family', 'form', 'variant', 'records', 'live_records', 'price'].filter((k) => k in a);
    used.push(...ex);
    out.push(part('The export', kv(a, '', ex)));
    if (isObj(a.factors)) {
      const kids = [];
      for (const name of Object.keys(a.factors)) {
        const f = a.factors[name], p = ptr('/factors', name);
        if (!isObj(f)) { kids.push(h('h3', '', key(name)), gen(f, p)); continue; }
        kids.push(h('h3', '', key(name), ' · ', h('span', 'status', leaf(f.status, ptr(p, 'status')))));
        if (typeof f.reason === 'string') kids.push(h('p', '', key('reason'), ': ', leaf(f.reason, ptr(p, 'reason'))));
        kids.push(rest(f, p, ['status', 'reason']));
      }
      out.push(part('Factors', kids));
    }
    if ('coverage' in a) out.push(part('Coverage', gen(a.coverage, '/coverage')));
    return { out, used };
  }

  // ---------- lifecycle-analytics (settlement-evidence/v1) ----------
  function lifecycle(a) {
    const out = [part('Verdict line', line(a, 'verdict_line'))];
    const used = ['verdict_line', 'evaluation_instant', 'evaluation_instant_source', 'lines', 'census', 'expiry_windows', 'per_rail', 'factors'];
    out.push(part('Evaluation instant', kv(a, '', ['evaluation_instant', 'evaluation_instant_source'].filter((k) => k in a))));
    if ('lines' in a) out.push(part('Lines', gen(a.lines, '/lines')));
    if ('census' in a) out.push(part('Census', gen(a.census, '/census')));
    if (isObj(a.expiry_windows)) {
      const w = a.expiry_windows;
      out.push(part('Expiry windows (seconds)', bars(Object.keys(w).map((k) => ({ name: k, value: num(w[k]) || 0, text: text(w[k]) })), 'expiry windows'), gen(w, '/expiry_windows')));
    }
    if ('per_rail' in a) out.push(part('Per rail', gen(a.per_rail, '/per_rail')));
    if ('factors' in a) out.push(part('Factors', gen(a.factors, '/factors')));
    return { out, used };
  }

  // ---------- stream-divergence (stream-divergence/v1) ----------
  function byteStrip(a) {
    const spans = a.differing_spans;
    const L = Math.max(num(a.streamed_capture && a.streamed_capture.byte_length) || 0, num(a.reference_output && a.reference_output.byte_length) || 0);
    if (!Array.isArray(spans) || !(L > 0)) return null;
    const W = 1000, left = 10, right = 990;
    const X = (b) => left + (b / L) * (right - left);
    const kids = [s('rect', { x: left, y: 10, width: right - left, height: 30, fill: '#f4f5f7', stroke: '#5b6472' })];
    for (const sp of spans) {
      const x = X(num(sp.start) || 0);
      kids.push(s('rect', { x: x.toFixed(2), y: 10, width: Math.max(1, X((num(sp.start) || 0) + (num(sp.length) || 0)) - x).toFixed(2), height: 30, fill: '#1d2430' }));
    }
    kids.push(s('text', { x: left, y: 58 }, 'byte 0'), s('text', { x: right, y: 58, 'text-anchor': 'end' }, `byte ${L}`));
    const plot = axisPlot(W, 66, kids);
    plot.setAttribute('aria-label', 'differing spans');
    return [h('p', 'caption', 'The longer artefact\'s bytes from 0 to its length; each dark mark is a differing span.'), plot];
  }
  function streamDivergence(a) {
    const out = [part('Verdict line', line(a, 'verdict_line'))];
    const used = ['verdict_line', 'byte_equal', 'first_divergence', 'streamed_capture', 'reference_output', 'differing_spans'];
    out.push(part('The comparison', kv(a, '', ['byte_equal', 'first_divergence'].filter((k) => k in a)),
      gen({ streamed_capture: a.streamed_capture, reference_output: a.reference_output }, '')));
    if ('differing_spans' in a) out.push(part('Differing spans', byteStrip(a), gen(a.differing_spans, '/differing_spans')));
    return { out, used };
  }

  // ---------- the answer ----------
  const about = ['service', 'service_version', 'kind', 'op', 'criteria', 'corpus', 'issued_at', 'payment', 'signature'];
  function render(a) {
    const root = $('report');
    root.replaceChildren();
    if (!isObj(a)) { root.appendChild(part('Answer', gen(a, ''))); return; }
    const by = { 'context-audit': contextAudit, 'scope-hygiene': scopeHygiene, 'lifecycle-analytics': lifecycle, 'stream-divergence': streamDivergence };
    const head = about.filter((k) => k in a);
    let used = head;
    if (a.kind === 'report' && by[a.service]) {
      const r = by[a.service](a);
      add(root, r.out);
      used = used.concat(r.used);
    }
    const left = Object.keys(a).filter((k) => !used.includes(k));
    const sentences = left.filter((k) => typeof a[k] === 'string' && a[k].length > 80);
    const others = left.filter((k) => !sentences.includes(k));
    if (others.length) root.appendChild(part(used.length > head.length ? 'Other members of the answer' : 'Members of the answer', kv(a, '', others)));
    if (sentences.length) root.appendChild(part('The criteria\'s fixed sentences', sentences.map((k) => h('p', 'fixed', key(k), ': ', leaf(a[k], ptr('', k))))));
    root.appendChild(part('About this answer', kv(a, '', head)));
  }

  // ---------- the signature ----------
  // RFC 8785: members sorted by UTF-16 code units (JavaScript's default
  // sort), numbers and strings as ECMAScript serialises them.
  function canonical(v) {
    if (v === null || typeof v !== 'object') return JSON.stringify(v);
    if (Array.isArray(v)) return '[' + v.map(canonical).join(',') + ']';
    return '{' + Object.keys(v).sort().map((k) => JSON.stringify(k) + ':' + canonical(v[k])).join(',') + '}';
  }
  function b64url(str) {
    if (typeof str !== 'string' || !/^[A-Za-z0-9_-]*$/.test(str)) return null;
    const b = atob(str.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((str.length + 3) % 4));
    return Uint8Array.from(b, (c) => c.charCodeAt(0));
  }
  function toB64url(buf) {
    let bin = '';
    for (const x of new Uint8Array(buf)) bin += String.fromCharCode(x);
    return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }
  async function keySet(source) {
    if (source === 'pasted') {
      let j;
      try { j = JSON.parse($('jwks').value); } catch (e) { return { err: 'the pasted key set is not JSON' }; }
      if (!isObj(j) || !Array.isArray(j.keys)) return { err: 'the pasted key set has no "keys" array' };
      return { keys: j.keys, from: 'the pasted key set' };
    }
    let resp;
    try {
      resp = await fetch('keys', { cache: 'no-store', credentials: 'omit', headers: { Accept: 'application/json' } });
    } catch (e) {
      return { err: 'this host\'s /keys could not be reached' };
    }
    if (!resp.ok) return { err: `this host's /keys answered HTTP ${resp.status}` };
    let j;
    try { j = await resp.json(); } catch (e) { return { err: 'this host\'s /keys is not JSON' }; }
    if (!isObj(j) || !Array.isArray(j.keys)) return { err: 'this host\'s /keys has no "keys" array' };
    return { keys: j.keys, from: 'this host\'s /keys' };
  }
  async function check(answer, source) {
    const sig = isObj(answer) ? answer.signature : undefined;
    if (!isObj(sig)) return { state: 'INVALID', why: 'the answer carries no signature member' };
    const kid = typeof sig.key_id === 'string' ? sig.key_id : '';
    if (sig.alg !== 'Ed25519') return { state: 'INVALID', kid, why: 'the signature member does not name Ed25519' };
    const value = b64url(sig.value);
    if (!value || value.length !== 64) return { state: 'INVALID', kid, why: 'the signature value is not 64 bytes of base64url' };
    if (!window.crypto || !crypto.subtle) return { state: 'NOT CHECKED', kid, why: 'this page has no WebCrypto here: browsers offer it only on https or localhost' };
    const ks = await keySet(source);
    if (ks.err) return { state: 'NOT CHECKED', kid, why: ks.err };
    const jwk = ks.keys.find((k) => isObj(k) && k.kid === kid);
    if (!jwk) return { state: 'INVALID', kid, why: 'no key in the key set has the key id the signature names', from: ks.from };
    if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') return { state: 'INVALID', kid, why: 'the key with this key id is not an Ed25519 key', from: ks.from };
    const thumb = toB64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(canonical({ crv: 'Ed25519', kty: 'OKP', x: jwk.x }))));
    if (thumb !== kid) return { state: 'INVALID', kid, why: 'the key id is not the RFC 7638 thumbprint of the key it names', from: ks.from };
    let pub;
    try {
      pub = await crypto.subtle.importKey('jwk', { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, { name: 'Ed25519' }, false, ['verify']);
    } catch (e) {
      return { state: 'NOT CHECKED', kid, why: 'this browser\'s WebCrypto does not offer Ed25519, or the key is malformed', from: ks.from };
    }
    const body = Object.assign({}, answer);
    delete body.signature;
    const ok = await crypto.subtle.verify({ name: 'Ed25519' }, pub, value, new TextEncoder().encode(canonical(body)));
    return ok
      ? { state: 'VALID', kid, why: 'the Ed25519 signature matches the RFC 8785 bytes of the answer without its signature member', from: ks.from }
      : { state: 'INVALID', kid, why: 'the signature does not match the answer\'s RFC 8785 bytes: the answer was changed after signing, or signed by another key', from: ks.from };
  }

  let run = 0;
  async function showAnswer() {
    const mine = ++run;
    document.body.dataset.ready = '';
    const box = $('signature');
    let answer;
    try { answer = JSON.parse($('answer').value); } catch (e) { answer = undefined; }
    box.hidden = false;
    $('report').replaceChildren();
    if (!isObj(answer)) {
      box.dataset.state = 'NONE';
      $('verdict').textContent = 'NOT CHECKED';
      $('kid').textContent = '';
      $('why').textContent = 'The text is not a JSON object, so there is no answer to check or show.';
      $('keysource').textContent = '';
      document.body.dataset.ready = String(mine);
      return;
    }
    const source = document.querySelector('input[name="keys"]:checked').value;
    const r = await check(answer, source);
    if (mine !== run) return;
    box.dataset.state = r.state;
    $('verdict').textContent = r.state;
    $('kid').textContent = r.kid || '';
    $('why').textContent = r.why;
    $('keysource').textContent = r.from ? `Keys from ${r.from}.` : '';
    try {
      render(answer);
    } catch (e) {
      $('report').replaceChildren(h('p', 'status', 'The page could not draw this answer: its shape is not one this page knows. The signature state above stands.'));
      console.error(e);
    }
    if (r.state !== 'VALID') {
      $('report').prepend(h('p', 'status', 'The figures below are shown as given: the signature did not check against the key set, so they are not known to be the ones the host signed.'));
    }
    document.body.dataset.ready = String(mine);
  }

  function readFile(file) {
    if (!file) return;
    file.text().then((t) => { $('answer').value = t; showAnswer(); });
  }
  $('show').addEventListener('click', showAnswer);
  $('file').addEventListener('change', (e) => readFile(e.target.files[0]));
  for (const r of document.querySelectorAll('input[name="keys"]')) {
    r.addEventListener('change', () => { $('jwks').hidden = r.value !== 'pasted' || !r.checked; });
  }
  document.addEventListener('dragover', (e) => { e.preventDefault(); document.body.classList.add('dropping'); });
  document.addEventListener('dragleave', () => document.body.classList.remove('dropping'));
  document.addEventListener('drop', (e) => {
    e.preventDefault();
    document.body.classList.remove('dropping');
    readFile(e.dataTransfer && e.dataTransfer.files[0]);
  });
  $('answer').addEventListener('paste', () => setTimeout(showAnswer, 0));
})();
