// settlement-evidence/v1 corpus cases and their expected answers
// (service lifecycle-analytics, paid op analyse).
//
// Written from criteria/settlement-evidence/criteria.json and
// criteria/settlement-evidence/ANNEX.md alone: this module implements the
// strict timestamp grammar (ANNEX A-2) with exact BigInt nanosecond instants
// confined to years 0000-9999 UTC,
// the body refusals in their order, line validity with first-valid-
// occurrence duplicates, classification at T and the usage / rail
// computability rules (criteria classification_rule, computability_rule,
// A-5), the expiry-window buckets and factors with exact decimal arithmetic
// (criteria distribution_rule, A-6), the answer shapes (A-1, per-rail groups
// named by first_line, never by label: A-8) and the verdict line (criteria
// verdict_grammar, A-7) on its own. It never calls the Go engine.

import { utf8, utf8Length, makeRng, assert, deepEqual, commonMembers, base58 } from './lib.mjs';

export const criteriaName = 'settlement-evidence';

const CHECK_END = '<check-end UTC>';
const SERVER_CLOCK = '<server clock>';
const PIN = '<pin>';

// ANNEX A-3: codes, statuses, static messages and fact names, in rule order
// (body_bytes_cap is the host pre-gate, before any parsing). Cross-checked
// against the ANNEX table text at generation time (see selfTest).
const REFUSALS = {
  body_bytes_cap: { status: 413, message: 'request body exceeds the published cap', facts: ['cap'] },
  body_not_object: { status: 400, message: 'request body is not a JSON object', facts: [] },
  log_required: { status: 400, message: 'log is missing or not an array', facts: [] },
  as_of_invalid: { status: 400, message: 'as_of is not a parseable timestamp', facts: [] },
  log_empty: { status: 400, message: 'the log has no lines', facts: [] },
  no_valid_lines: { status: 400, message: 'every line of the log is malformed', facts: ['lines_submitted', 'malformed_lines'] },
};

// ANNEX A-1: the two static NOT-COMPUTABLE reasons.
const REASON_USAGE = 'no valid line carries the used_at field';
const REASON_RAIL = 'no valid line carries the rail field';

// A well-formed caller the generator assumes when it sizes a pre-check body:
// the harness injects a fresh base58 address (32 bytes -> at most 44 chars).
const SIZING_CALLER = '1'.repeat(44);

// Cases whose T is the host's clock must not depend on it: every expiry that
// decides a classification lies at or before CLOCK_LATEST_PAST (so it is
// EXPIRED-UNUSED at any plausible clock) or after CLOCK_EARLIEST_FUTURE (PENDING).
const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
const isPlainObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);

// ---------------------------------------------------------------- timestamps (ANNEX A-2)

const NS_PER_S = 1_000_000_000n;
const TS_RE = /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?(?:(Z)|([+-])([0-9]{2}):([0-9]{2}))$/;

const isLeap = (y) => y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
const daysInMonth = (y, m) => [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1];

// Days since 1970-01-01 of a proleptic Gregorian civil date (H. Hinnant's algorithm).
function daysFromCivil(y, m, d) {
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function civilFromDays(z) {
  z += 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
}

// ANNEX A-2: the instant itself must lie in years 0000-9999 UTC, from
// 0000-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z (both included).
const MIN_INSTANT = BigInt(daysFromCivil(0, 1, 1) * 86400) * NS_PER_S;
const MAX_INSTANT = BigInt(daysFromCivil(10000, 1, 1) * 86400) * NS_PER_S - 1n;

// A parseable timestamp string -> its instant as BigInt nanoseconds since
// 1970-01-01T00:00:00Z (negative before); anything else -> null. A string of
// the A-2 form whose offset carries its instant outside years 0000-9999 UTC
// is not parseable (as_of_invalid for as_of, a malformed line otherwise).
export function parseTimestamp(v) {
  if (typeof v !== 'string') return null;
  const m = TS_RE.exec(v);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  if (month < 1 || month > 12) return null;
  if (day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetSeconds = 0;
  if (m[8] !== 'Z') {
    const oh = Number(m[10]), om = Number(m[11]);
    if (oh > 23 || om > 59) return null;
    offsetSeconds = (m[9] === '-' ? -1 : 1) * (oh * 3600 + om * 60);
  }
  const localSeconds = daysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second;
  const frac = m[7] === undefined ? 0n : BigInt(m[7].padEnd(9, '0'));
  const instant = BigInt(localSeconds - offsetSeconds) * NS_PER_S + frac;
  if (instant < MIN_INSTANT || instant > MAX_INSTANT) return null;
  return instant;
}

const floorDiv = (a, b) => { const q = a / b; return (a % b !== 0n && (a < 0n) !== (b < 0n)) ? q - 1n : q; };
const pad = (n, w) => String(n).padStart(w, '0');

// Civil fields of an instant shifted by offsetMinutes.
function civilOf(ns, offsetMinutes = 0) {
  const local = ns + BigInt(offsetMinutes) * 60n * NS_PER_S;
  const secs = floorDiv(local, NS_PER_S);
  const nanos = local - secs * NS_PER_S;
  const days = floorDiv(secs, 86400n);
  const sod = Number(secs - days * 86400n);
  const [y, mo, d] = civilFromDays(Number(days));
  return { y, mo, d, h: Math.floor(sod / 3600), mi: Math.floor(sod / 60) % 60, s: sod % 60, nanos };
}

// ANNEX A-2 printed form: RFC 3339 UTC, whole seconds, then the nanosecond
// digits without trailing zeros only when they are not zero.
export function formatInstant(ns) {
  const c = civilOf(ns);
  assert(c.y >= 0 && c.y <= 9999, 'printed instant outside years 0000-9999');
  let out = `${pad(c.y, 4)}-${pad(c.mo, 2)}-${pad(c.d, 2)}T${pad(c.h, 2)}:${pad(c.mi, 2)}:${pad(c.s, 2)}`;
  if (c.nanos !== 0n) out += '.' + pad(c.nanos, 9).replace(/0+$/, '');
  return out + 'Z';
}

// A timestamp string for an instant, written in local time at an offset
// (minutes; '-00:00' when negZero) with exactly `digits` fractional digits
// (the instant must be representable with that many digits).
function formatLocal(ns, offsetMinutes, digits, negZero = false) {
  const c = civilOf(ns, offsetMinutes);
  assert(c.y >= 0 && c.y <= 9999, 'local year in range');
  let out = `${pad(c.y, 4)}-${pad(c.mo, 2)}-${pad(c.d, 2)}T${pad(c.h, 2)}:${pad(c.mi, 2)}:${pad(c.s, 2)}`;
  const fracDigits = pad(c.nanos, 9);
  assert(/^0*$/.test(fracDigits.slice(digits)), 'instant representable with the digit count');
  if (digits > 0) out += '.' + fracDigits.slice(0, digits);
  if (offsetMinutes === 0 && !negZero) return out + 'Z';
  const sign = offsetMinutes < 0 || negZero ? '-' : '+';
  const a = Math.abs(offsetMinutes);
  return `${out}${sign}${pad(Math.floor(a / 60), 2)}:${pad(a % 60, 2)}`;
}

// Seconds as an exact decimal string (A-6 min/max).
function secondsExact(ns) {
  assert(ns >= 0n, 'windows are positive');
  const whole = ns / NS_PER_S, frac = ns % NS_PER_S;
  return frac === 0n ? String(whole) : `${whole}.${pad(frac, 9).replace(/0+$/, '')}`;
}

// sumNs / count nanoseconds as seconds, rounded half up to exactly 3 decimals (A-6 mean).
function meanSeconds3(sumNs, count) {
  const n = BigInt(count);
  const unit = 1_000_000n * n; // one millisecond of the mean, in sum units
  const ms = (2n * sumNs + unit) / (2n * unit); // floor(sum/unit + 1/2); all positive
  return `${ms / 1000n}.${pad(ms % 1000n, 3)}`;
}

// ---------------------------------------------------------------- the family model

export function build({ criteria, annexText }) {
  const CAP = criteria.input_contract.caps.body_bytes;
  assert(CAP === 262144, 'body cap differs from the criteria text');
  assert(criteria.op === 'analyse' && criteria.service === 'lifecycle-analytics', 'op / service');
  assert(deepEqual(criteria.window_buckets, ['le_60', '61_300', '301_900', '901_3600', 'gt_3600']), 'window buckets');
  const NC_TOKEN = criteria.not_computable_token;
  assert(NC_TOKEN === 'NOT-COMPUTABLE', 'not-computable token');
  const service = criteria.service;
  const OP = criteria.op;
  const notComputable = (reason) => ({ value: NC_TOKEN, reason });

  const CLOCK_LATEST_PAST = parseTimestamp('2020-01-01T00:00:00Z');
  const CLOCK_EARLIEST_FUTURE = parseTimestamp('9000-01-01T00:00:00Z');

  // Bucket upper edges in nanoseconds (criteria distribution_rule).
  const EDGES = [60n, 300n, 900n, 3600n].map((s) => s * NS_PER_S);

  const common = (op, kind) => commonMembers(criteria, service, OP, op, kind);

  function refusal(op, code, facts = {}) {
    const r = REFUSALS[code];
    assert(r, 'unknown refusal ' + code);
    assert(deepEqual(Object.keys(facts).sort(), [...r.facts].sort()), 'facts of ' + code);
    return { status: r.status, answer: { ...common(op, 'refusal'), error: { code, message: r.message, ...facts } } };
  }

  // ANNEX A-4 rules 1-6 on one line: null when malformed, else its parsed facts.
  function lineFacts(line) {
    if (!isPlainObject(line)) return null; // rule 1
    const id = hasOwn(line, 'challenge_id') ? line.challenge_id : undefined;
    if (typeof id !== 'string' || id === '') return null; // rule 2
    const issued = hasOwn(line, 'issued_at') ? parseTimestamp(line.issued_at) : null;
    const expires = hasOwn(line, 'expires_at') ? parseTimestamp(line.expires_at) : null;
    if (issued === null || expires === null) return null; // rule 3
    if (!(expires > issued)) return null; // rule 4
    const hasUsedAt = hasOwn(line, 'used_at');
    let used = null;
    if (hasUsedAt && line.used_at !== null) { // rule 5
      used = parseTimestamp(line.used_at);
      if (used === null || used < issued || used > expires) return null;
    }
    const hasRail = hasOwn(line, 'rail');
    if (hasRail && (typeof line.rail !== 'string' || line.rail === '')) return null; // rule 6
    return { id, issued, expires, hasUsedAt, used, hasRail, rail: hasRail ? line.rail : null };
  }

  // Validation of a parsed body, ANNEX A-3 order then A-4.
  function validate(body) {
    if (!isPlainObject(body)) return { error: { code: 'body_not_object' } };
    const log = hasOwn(body, 'log') ? body.log : undefined;
    if (!Array.isArray(log)) return { error: { code: 'log_required' } };
    let T = null; // null: not supplied, the server clock is T
    if (hasOwn(body, 'as_of') && body.as_of !== null) {
      T = parseTimestamp(body.as_of);
      if (T === null) return { error: { code: 'as_of_invalid' } };
    }
    if (log.length === 0) return { error: { code: 'log_empty' } };
    const seen = new Set();
    const valid = [];
    log.forEach((line, index) => {
      const f = lineFacts(line);
      if (f === null) return;
      if (seen.has(f.id)) return; // rule 7: duplicates an earlier valid line
      seen.add(f.id);
      valid.push({ ...f, index }); // index: 0-based position in the submitted log, malformed lines counted
    });
    const lines = { submitted: log.length, valid: valid.length, malformed: log.length - valid.length };
    if (valid.length === 0) {
      return { error: { code: 'no_valid_lines', facts: { lines_submitted: lines.submitted, malformed_lines: lines.malformed } } };
    }
    return { T, lines, valid };
  }

  // Classification of one valid line at T. With T unknown (server
  // clock) the answer must not depend on the clock.
  function classify(f, T) {
    if (f.used !== null) return 'used';
    if (T !== null) return f.expires <= T ? 'expired_unused' : 'pending';
    if (f.expires <= CLOCK_LATEST_PAST) return 'expired_unused';
    if (f.expires > CLOCK_EARLIEST_FUTURE) return 'pending';
    throw new Error('a server-clock case depends on the clock');
  }

  function census(lines, T, usageComputable) {
    const out = { issued: lines.length };
    if (!usageComputable) {
      out.used = notComputable(REASON_USAGE);
      out.expired_unused = notComputable(REASON_USAGE);
      out.pending = notComputable(REASON_USAGE);
      return out;
    }
    out.used = 0; out.expired_unused = 0; out.pending = 0;
    for (const f of lines) out[classify(f, T)]++;
    assert(out.used + out.expired_unused + out.pending === out.issued, 'census sums to issued');
    return out;
  }

  function bucketOf(w) {
    const names = criteria.window_buckets;
    for (let i = 0; i < EDGES.length; i++) if (w <= EDGES[i]) return names[i];
    return names[names.length - 1];
  }

  // criteria verdict_grammar.line, filled in order.
  function verdictLine(c, instantText) {
    let line = criteria.verdict_grammar.line;
    const fill = (ph, val) => {
      const at = line.indexOf(ph);
      assert(at >= 0, 'verdict grammar placeholder ' + ph);
      line = line.slice(0, at) + val + line.slice(at + ph.length);
    };
    const show = (v) => (typeof v === 'number' ? String(v) : v.value);
    fill('<n>', String(c.issued));
    fill('<x>', show(c.used));
    fill('<y>', show(c.expired_unused));
    fill('<z>', show(c.pending));
    fill('<evaluation UTC>', instantText);
    assert(!/<(?!server clock>)[^>]*>/.test(line), 'unfilled verdict placeholder');
    return line;
  }

  function report(v) {
    const { T, lines, valid } = v;
    const usageComputable = valid.some((f) => f.hasUsedAt);
    const railComputable = valid.some((f) => f.hasRail);
    const c = census(valid, T, usageComputable);

    const windows = {};
    for (const b of criteria.window_buckets) windows[b] = 0;
    let min = null, max = null, sum = 0n;
    for (const f of valid) {
      const w = f.expires - f.issued;
      windows[bucketOf(w)]++;
      if (min === null || w < min) min = w;
      if (max === null || w > max) max = w;
      sum += w;
    }

    let perRail;
    if (!railComputable) {
      perRail = notComputable(REASON_RAIL);
    } else {
      // one group per distinct rail value (exact string
      // equality), named by first_line, the log position of the first valid
      // line carrying the value, and ordered by it; the label is never printed.
      const groups = new Map(); // label -> { first_line, lines }
      let absent = 0;
      for (const f of valid) {
        if (!f.hasRail) { absent++; continue; }
        if (!groups.has(f.rail)) groups.set(f.rail, { first_line: f.index, lines: [] });
        groups.get(f.rail).lines.push(f);
      }
      const ordered = [...groups.values()].sort((a, b) => a.first_line - b.first_line);
      perRail = {
        groups: ordered.map((g) => ({ first_line: g.first_line, ...census(g.lines, T, usageComputable) })),
        rail_absent_lines: absent,
      };
    }

    const instantText = T === null ? SERVER_CLOCK : formatInstant(T);
    return {
      evaluation_instant: instantText,
      evaluation_instant_source: T === null ? 'server_clock' : 'as_of',
      lines,
      census: c,
      expiry_windows: windows,
      per_rail: perRail,
      factors: {
        malformed_lines: lines.malformed,
        expiry_window_min_seconds: secondsExact(min),
        expiry_window_max_seconds: secondsExact(max),
        expiry_window_mean_seconds: meanSeconds3(sum, valid.length),
      },
      reasons_line: criteria.reasons_line,
      honesty_line: criteria.honesty_line,
      disclosure_sentence: criteria.disclosure_sentence,
      verdict_line: verdictLine(c, instantText),
    };
  }

  function precheck(v) {
    return {
      assessable: true,
      lines: v.lines,
      disclosure_sentence: criteria.disclosure_sentence,
      honesty_line: criteria.honesty_line,
      retention: criteria.retention,
    };
  }

  // The whole route: raw request bytes in, {status, answer|body_text} out.
  function expectedFor(path, bodyBytes) {
    const prefix = `/${service}/`;
    const op = path.startsWith(prefix) ? path.slice(prefix.length) : null;
    if (op !== 'precheck' && op !== OP) return { status: 404, body_text: 'NOT COVERED' };
    if (bodyBytes.length > CAP) return refusal(op, 'body_bytes_cap', { cap: CAP });
    let body;
    try {
      body = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bodyBytes));
    } catch {
      return refusal(op, 'body_not_object');
    }
    const v = validate(body);
    if (v.error) return refusal(op, v.error.code, v.error.facts);
    if (op === 'precheck') return { status: 200, answer: { ...common(op, 'precheck'), ...precheck(v) } };
    return { status: 200, answer: { ...common(op, 'report'), ...report(v) } };
  }

  selfTest({ validate, report, precheck, verdictLine, criteria, annexText });

  // ------------------------------------------------------------ case builders

  const cases = [];
  const names = new Set();
  const tally = {};

  function addCase(route, category, name, description, req) {
    assert(/^[a-z0-9]+(-[a-z0-9]+)*$/.test(name), 'kebab-case name ' + name);
    assert(!names.has(name), 'duplicate case name ' + name);
    assert(/^[^\n]+\.$/.test(description) && !/\.\s+[A-Z]/.test(description), 'one-sentence description for ' + name);
    names.add(name);
    const path = route.startsWith('/') ? route : `/${service}/${route}`;
    const request = { method: 'POST', path };
    let bytes;
    if (hasOwn(req, 'body_text')) {
      request.body_text = req.body_text;
      bytes = utf8(req.body_text);
    } else {
      request.body = req.body;
      let sent = req.body;
      // The harness sets `caller` on a pre-check whose body is a JSON object.
      if (path.endsWith('/precheck') && isPlainObject(sent) && !hasOwn(sent, 'caller')) {
        sent = { ...sent, caller: SIZING_CALLER };
      }
      bytes = utf8(JSON.stringify(sent));
    }
    const exp = expectedFor(path, bytes);
    const got = exp.answer ? (exp.answer.error ? exp.answer.error.code : exp.answer.kind) : exp.body_text;
    assert(got === req.expectCode, `case ${name}: intended ${req.expectCode}, model gives ${got}`);
    if (exp.answer) custodyCheck(exp.answer, bytes, name);
    if (req.check) req.check(exp.answer, name);
    const expect = { status: exp.status };
    if (exp.body_text !== undefined) expect.body_text = exp.body_text;
    else expect.answer = exp.answer;
    cases.push({ name, provenance: 'synthetic', description, request, expect });
    tally[category] = (tally[category] || 0) + 1;
  }
  // on every answer: no rail label or challenge id of the
  // submitted log is any string of the answer, and per-rail groups carry
  // exactly first_line and the four counts.
  function custodyCheck(answer, bytes, name) {
    let body = null;
    try { body = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)); } catch { /* not JSON */ }
    const submitted = new Set();
    if (isPlainObject(body) && Array.isArray(body.log)) {
      for (const line of body.log) {
        if (!isPlainObject(line)) continue;
        for (const k of ['rail', 'challenge_id']) if (typeof line[k] === 'string' && line[k] !== '') submitted.add(line[k]);
      }
    }
    const walk = (v) => {
      if (typeof v === 'string') assert(!submitted.has(v), `case ${name}: answer carries a submitted rail label or id`);
      else if (Array.isArray(v)) v.forEach(walk);
      else if (isPlainObject(v)) Object.values(v).forEach(walk);
    };
    walk(answer);
    if (answer.kind === 'report' && !hasOwn(answer.per_rail, 'value')) {
      let prev = -1;
      for (const g of answer.per_rail.groups) {
        assert(deepEqual(Object.keys(g).sort(), ['expired_unused', 'first_line', 'issued', 'pending', 'used']), `case ${name}: group members`);
        assert(Number.isInteger(g.first_line) && g.first_line > prev, `case ${name}: groups ordered by first_line`);
        prev = g.first_line;
      }
    }
  }
  const pre = (cat, name, description, req) => addCase('precheck', cat, name, description, req);
  const ana = (cat, name, description, req) => addCase(OP, cat, name, description, req);

  // Check helpers: what a case claims, asserted against the model.
  const expectLines = (submitted, valid) => (a, n) => {
    assert(a.lines.submitted === submitted && a.lines.valid === valid, `case ${n}: lines ${JSON.stringify(a.lines)}`);
  };
  const expectAll = (...checks) => (a, n) => { for (const c of checks) c(a, n); };
  const expectCensus = (used, expired, pending) => (a, n) => {
    assert(a.census.used === used && a.census.expired_unused === expired && a.census.pending === pending,
      `case ${n}: census ${JSON.stringify(a.census)}`);
  };
  const expectWindows = (list) => (a, n) => {
    assert(deepEqual(criteria.window_buckets.map((b) => a.expiry_windows[b]), list), `case ${n}: windows ${JSON.stringify(a.expiry_windows)}`);
  };
  const expectFactors = (min, max, mean) => (a, n) => {
    const f = a.factors;
    assert(f.expiry_window_min_seconds === min && f.expiry_window_max_seconds === max && f.expiry_window_mean_seconds === mean,
      `case ${n}: factors ${JSON.stringify(f)}`);
  };
  const expectUsageNC = (a, n) => assert(a.census.used.value === NC_TOKEN, `case ${n}: usage should be NOT-COMPUTABLE`);
  const expectRailNC = (a, n) => assert(a.per_rail.value === NC_TOKEN, `case ${n}: per_rail should be NOT-COMPUTABLE`);
  // groups named by first_line (log positions, malformed lines
  // counted), in that order, with exactly the census members and no label.
  const expectRails = (firstLines, absent) => (a, n) => {
    assert(deepEqual(a.per_rail.groups.map((g) => g.first_line), firstLines) && a.per_rail.rail_absent_lines === absent,
      `case ${n}: rails ${JSON.stringify(a.per_rail)}`);
  };
  const expectGroupSizes = (sizes) => (a, n) => {
    assert(deepEqual(a.per_rail.groups.map((g) => g.issued), sizes), `case ${n}: group sizes ${JSON.stringify(a.per_rail)}`);
  };
  const expectNoText = (text) => (a, n) => {
    assert(!JSON.stringify(a).includes(text) && !JSON.stringify(a).includes(JSON.stringify(text).slice(1, -1)), `case ${n}: answer carries ${text}`);
  };
  const expectInstant = (text, source) => (a, n) => {
    assert(a.evaluation_instant === text && a.evaluation_instant_source === source, `case ${n}: instant ${a.evaluation_instant}`);
  };

  // Lines and bodies.
  const L = (id, issued_at, expires_at, extra = {}) => ({ challenge_id: id, issued_at, expires_at, ...extra });
  const T0 = '2026-11-29T12:00:00Z';
  const at = (log, as_of = T0, extra = {}) => ({ log, as_of, ...extra });
  // Offsets from T0 in nanoseconds, written as timestamps.
  const T0ns = parseTimestamp(T0);
  const S = (seconds) => BigInt(seconds) * NS_PER_S;
  const ts = (deltaNs, offsetMinutes = 0, digits = 9) => formatLocal(T0ns + deltaNs, offsetMinutes, digits);
  const tsz = (deltaNs) => { // shortest exact Z form
    for (let d = 0; d <= 9; d++) {
      try { return formatLocal(T0ns + deltaNs, 0, d); } catch { /* more digits */ }
    }
    throw new Error('unreachable');
  };

  // ------------------------------------------------------------ the ANNEX A-1 example

  // Line order fits the A-1 groups: first_line 0 (usdc, two lines) and
  // first_line 2 (card, one line), the malformed card line at position 1
  // counted in the positions but naming nothing.
  const annexMalformed = L('c-5', '2026-11-29T11:00:00Z', '2026-11-29T10:00:00Z', { rail: 'card' });
  const annexLog = [
    L('c-2', '2026-11-29T10:00:00Z', '2026-11-29T10:01:40Z', { used_at: '2026-11-29T10:00:50Z', rail: 'usdc' }),
    annexMalformed,
    L('c-1', '2026-11-29T11:00:00Z', '2026-11-29T11:01:00Z', { used_at: '2026-11-29T11:00:30Z', rail: 'card' }),
    L('c-3', '2026-11-29T09:00:00Z', '2026-11-29T09:04:20Z', { used_at: null, rail: 'usdc' }),
    L('c-4', '2026-11-29T11:30:00Z', '2026-11-29T12:30:00Z'),
  ];
  pre('annex', 'precheck-annex-a1-example',
    'The ANNEX A-1 log (five lines, one malformed) is assessable and the pre-check reports only the line counts and the three fixed sentences.',
    { body: at(annexLog), expectCode: 'precheck', check: expectLines(5, 4) });
  ana('annex', 'analyse-annex-a1-example',
    'The ANNEX A-1 log at as_of 2026-11-29T12:00:00Z gives exactly the ANNEX report: census 4/2/1/1, windows 60, 100, 260 and 3600 seconds, rail groups named first_line 0 and 2 (the malformed line 1 counted in the positions) and one rail-absent line.',
    { body: at(annexLog), expectCode: 'report', check: expectAll(expectCensus(2, 1, 1), expectFactors('60', '3600', '1005.000'), expectRails([0, 2], 1)) });

  // ------------------------------------------------------------ offsets

  ana('offsets', 'analyse-offset-plus-0530-annex-a2-example',
    'The ANNEX A-2 example 2026-11-29T17:30:00.000000001+05:30 is one nanosecond after T and PENDING while 17:30:00+05:30 equals T and is EXPIRED-UNUSED.',
    {
      body: at([
        L('p-1', '2026-11-29T17:00:00+05:30', '2026-11-29T17:30:00.000000001+05:30', { used_at: null }),
        L('p-2', '2026-11-29T11:59:00Z', '2026-11-29T17:30:00+05:30'),
      ]),
      expectCode: 'report',
      check: expectAll(expectCensus(0, 1, 1), expectWindows([1, 0, 0, 1, 0]), expectFactors('60', '1800.000000001', '930.000')),
    });
  ana('offsets', 'analyse-offset-minus-0800',
    'Timestamps at -08:00 normalise to UTC instants: a wall-clock string that sorts earlier is the later instant, and the same instant written at two offsets is not strictly after.',
    {
      body: at([
        L('m-1', '2026-11-29T03:55:00-08:00', '2026-11-29T12:05:00Z', { used_at: '2026-11-29T04:00:00.5-08:00' }),
        L('m-2', '2026-11-29T11:00:00Z', '2026-11-29T04:00:01-08:00', { used_at: null }),
        L('m-3', '2026-11-28T23:00:00-08:00', '2026-11-29T07:00:00+00:00', { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(3, 2), expectCensus(1, 0, 1), expectWindows([0, 0, 1, 0, 1])),
    });
  ana('offsets', 'analyse-offset-minus-0000-and-plus-0000-are-utc',
    'The offsets -00:00 and +00:00 mean UTC exactly as Z, so a 60-second window written with them is in le_60 and an expiry at T is EXPIRED-UNUSED.',
    {
      body: at([
        L('z-1', '2026-11-29T11:59:00-00:00', '2026-11-29T12:00:00+00:00', { used_at: null, rail: 'usdc' }),
        L('z-2', '2026-11-29T11:58:00+00:00', '2026-11-29T11:59:00-00:00', { used_at: '2026-11-29T11:59:00Z', rail: 'usdc' }),
        L('z-3', '2026-11-29T11:59:00Z', '2026-11-29T12:00:00.000000001-00:00', { used_at: null, rail: 'usdc' }),
      ]),
      expectCode: 'report',
      check: expectAll(expectCensus(1, 1, 1), expectWindows([2, 1, 0, 0, 0])),
    });
  ana('offsets', 'analyse-offset-extremes-2359',
    'Offsets +23:59 and -23:59 are accepted and move the local date by almost a day in each direction.',
    {
      body: at([
        L('x-1', '2026-11-29T23:59:00+23:59', '2026-11-28T00:02:00-23:59', { used_at: '2026-11-28T00:01:00-23:59' }),
        L('x-2', '2026-11-30T11:58:00+23:59', '2026-11-28T12:02:00-23:59', { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectAll(expectCensus(1, 0, 1), expectWindows([1, 1, 0, 0, 0])),
    });
  ana('offsets', 'analyse-offset-crosses-year-boundary',
    'Local times on 2027-01-01 at +01:00 and on 2026-12-31 at -05:00 are compared as instants and an as_of at +01:00 prints as 2026-12-31T23:59:59Z.',
    {
      body: at([
        L('y-1', '2027-01-01T00:30:00+01:00', '2026-12-31T19:00:00-05:00', { used_at: null }),
        L('y-2', '2026-12-31T23:00:00Z', '2027-01-01T00:59:59+01:00', { used_at: null }),
      ], '2027-01-01T00:59:59+01:00'),
      expectCode: 'report',
      check: expectAll(expectCensus(0, 1, 1), expectInstant('2026-12-31T23:59:59Z', 'as_of')),
    });
  ana('offsets', 'analyse-as-of-offset-normalised',
    'An as_of written at +05:30 is used as its UTC instant and printed in the report and the verdict line as 2026-11-29T12:00:00Z.',
    {
      body: at([
        L('a-1', '2026-11-29T11:00:00Z', T0, { used_at: null }),
        L('a-2', '2026-11-29T11:00:00Z', '2026-11-29T12:00:01Z', { used_at: null }),
      ], '2026-11-29T17:30:00+05:30'),
      expectCode: 'report',
      check: expectAll(expectCensus(0, 1, 1), expectInstant(T0, 'as_of')),
    });

  // ------------------------------------------------------------ fractional seconds

  ana('fractions', 'analyse-as-of-fraction-printed-without-trailing-zeros',
    'An as_of with nine fractional digits .500000000 prints as 12:00:00.5Z and splits expiries at .5 (EXPIRED-UNUSED) and .500000001 (PENDING).',
    {
      body: at([
        L('f-1', '2026-11-29T11:59:00Z', '2026-11-29T12:00:00.5Z', { used_at: null }),
        L('f-2', '2026-11-29T11:59:00Z', '2026-11-29T12:00:00.500000001Z', { used_at: null }),
        L('f-3', '2026-11-29T11:59:00Z', '2026-11-29T12:00:00.499999999Z', { used_at: null }),
      ], '2026-11-29T12:00:00.500000000Z'),
      expectCode: 'report',
      check: expectAll(expectCensus(0, 2, 1), expectInstant('2026-11-29T12:00:00.5Z', 'as_of'),
        expectFactors('60.499999999', '60.500000001', '60.500')),
    });
  ana('fractions', 'analyse-as-of-one-nanosecond-after-second',
    'An as_of of 17:30:00.000000001+05:30 prints as 2026-11-29T12:00:00.000000001Z, so an expiry at that instant is EXPIRED-UNUSED and one nanosecond later is PENDING.',
    {
      body: at([
        L('n-1', '2026-11-29T11:00:00Z', '2026-11-29T12:00:00.000000001Z', { used_at: null }),
        L('n-2', '2026-11-29T11:00:00Z', '2026-11-29T12:00:00.000000002Z', { used_at: null }),
        L('n-3', '2026-11-29T11:00:00Z', '2026-11-29T12:00:00Z', { used_at: null }),
      ], '2026-11-29T17:30:00.000000001+05:30'),
      expectCode: 'report',
      check: expectAll(expectCensus(0, 2, 1), expectInstant('2026-11-29T12:00:00.000000001Z', 'as_of')),
    });
  ana('fractions', 'analyse-sub-millisecond-order',
    'Instants that differ only below a millisecond are ordered exactly: a one-nanosecond window is valid and an expiry one nanosecond before its issue is malformed.',
    {
      body: at([
        L('s-1', '2026-11-29T11:00:00.123456789Z', '2026-11-29T11:00:00.12345679Z', { used_at: '2026-11-29T11:00:00.123456790Z' }),
        L('s-2', '2026-11-29T11:00:00.123456789Z', '2026-11-29T11:00:00.123456788Z', { used_at: null }),
        L('s-3', '2026-11-29T11:00:00.123456789Z', '2026-11-29T16:30:00.123456789+05:30', { used_at: null }),
        L('s-4', '2026-11-29T11:00:00.1Z', '2026-11-29T11:00:00.100000000001Z'),
        L('s-5', '2026-11-29T11:00:00.1Z', '2026-11-29T11:00:00.10000001Z'),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(5, 2), expectCensus(1, 1, 0), expectFactors('0.000000001', '0.00000001', '0.000')),
    });
  ana('fractions', 'analyse-fraction-digit-counts-one-to-nine',
    'Fractions of one to nine digits, with and without trailing zeros, are exact nanosecond values.',
    {
      body: at([
        L('d-1', '2026-11-29T11:00:00.5Z', '2026-11-29T11:01:00.75Z', { used_at: null }),
        L('d-2', '2026-11-29T11:00:00.05Z', '2026-11-29T11:01:00.050Z', { used_at: null }),
        L('d-3', '2026-11-29T11:00:00.123Z', '2026-11-29T11:01:00.1229Z', { used_at: null }),
        L('d-4', '2026-11-29T11:00:00.12345Z', '2026-11-29T11:01:00.123456Z', { used_at: null }),
        L('d-5', '2026-11-29T11:00:00.1234567Z', '2026-11-29T11:00:59.12345678Z', { used_at: null }),
        L('d-6', '2026-11-29T11:00:00.000000000Z', '2026-11-29T11:01:00.100000000Z', { used_at: '2026-11-29T11:00:59.9Z' }),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(6, 6), expectWindows([3, 3, 0, 0, 0])),
    });

  // ------------------------------------------------------------ bucket edges

  for (const edge of [60, 300, 900, 3600]) {
    const w = S(edge);
    ana('windows', `analyse-bucket-edge-${edge}`,
      `Windows of ${edge} seconds minus one nanosecond, exactly ${edge} and ${edge}.000000001 seconds put the first two in the lower bucket and the third in the next.`,
      {
        body: at([
          L(`e-${edge}-1`, tsz(-S(7200)), tsz(-S(7200) + w - 1n), { used_at: null }),
          L(`e-${edge}-2`, tsz(-S(7200)), tsz(-S(7200) + w), { used_at: null }),
          L(`e-${edge}-3`, tsz(-S(7200)), ts(-S(7200) + w + 1n, 330), { used_at: null }),
        ]),
        expectCode: 'report',
        check: (a, n) => {
          const idx = [60, 300, 900, 3600].indexOf(edge);
          const list = [0, 0, 0, 0, 0];
          list[idx] += 2; list[idx + 1] += 1;
          expectWindows(list)(a, n);
          expectFactors(`${edge - 1}.999999999`, `${edge}.000000001`, `${edge}.000`)(a, n);
        },
      });
  }
  ana('windows', 'analyse-window-over-292-years',
    'Windows longer than 2^63 nanoseconds (1700 to 2000, and the whole range from 0000-01-01T23:59:00+23:59 to 9999-12-31T00:00:59.999999999-23:59) are exact in gt_3600, while local year 0000 at +23:59 to local year 9999 at -23:59 falls outside years 0000-9999 UTC and is malformed.',
    {
      body: at([
        L('g-1', '1700-01-01T00:00:00Z', '2000-01-01T00:00:00Z', { used_at: null }),
        L('g-2', '0000-01-01T23:59:00+23:59', '9999-12-31T00:00:59.999999999-23:59', { used_at: null }),
        L('g-3', '1999-12-31T23:00:00Z', '2000-01-01T00:00:00Z', { used_at: '1999-12-31T23:30:00.000000001Z' }),
        L('g-4', '0000-01-01T00:00:00+23:59', '9999-12-31T23:59:59.999999999-23:59', { used_at: null }),
      ]),
      expectCode: 'report',
      check: (a, n) => {
        expectLines(4, 3)(a, n);
        expectCensus(1, 1, 1)(a, n);
        expectWindows([0, 0, 0, 1, 2])(a, n);
        // Max: 10000 Gregorian years (3652425 days) less one nanosecond. Mean:
        // (3600 + 300 years of 109572 days + that max) / 3, rounded half up.
        const max = 3652425n * 86400n * NS_PER_S - 1n;
        const sum = S(3600) + 109572n * 86400n * NS_PER_S + max;
        expectFactors('3600', '315569519999.999999999', meanSeconds3(sum, 3))(a, n);
        assert(parseTimestamp('2000-01-01T00:00:00Z') - parseTimestamp('1700-01-01T00:00:00Z') > 2n ** 63n, 'over 2^63');
      },
    });

  // ------------------------------------------------------------ min / max / mean

  ana('factors', 'analyse-mean-round-half-up-at-fourth-decimal',
    'Windows of 1 and 2.001 seconds have an exact mean of 1.5005, which rounds half up to "1.501" (binary floating point would give 1.500).',
    {
      body: at([
        L('r-1', tsz(-S(100)), tsz(-S(99)), { used_at: null }),
        L('r-2', tsz(-S(100)), tsz(-S(100) + 2_001_000_000n), { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectFactors('1', '2.001', '1.501'),
    });
  ana('factors', 'analyse-mean-repeating-third',
    'Windows of 20, 20 and 21 seconds have a mean of 61/3, printed "20.333" with exactly three decimals.',
    {
      body: at([
        L('t-1', tsz(-S(100)), tsz(-S(80)), { used_at: null }),
        L('t-2', tsz(-S(100)), tsz(-S(80)), { used_at: null }),
        L('t-3', tsz(-S(100)), tsz(-S(79)), { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectFactors('20', '21', '20.333'),
    });
  ana('factors', 'analyse-mean-two-thirds-millisecond-rounds-up',
    'Windows of 100, 100 and 100.002 seconds have a mean of 100.000666..., printed "100.001".',
    {
      body: at([
        L('u-1', tsz(-S(200)), tsz(-S(100)), { used_at: null }),
        L('u-2', tsz(-S(200)), tsz(-S(100)), { used_at: null }),
        L('u-3', tsz(-S(200)), tsz(-S(100) + 2_000_000n), { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectFactors('100', '100.002', '100.001'),
    });
  ana('factors', 'analyse-mean-exact-half-millisecond-rounds-up',
    'A single window of 0.0005 seconds prints min and max "0.0005" and a mean rounded half up to "0.001".',
    {
      body: at([L('h-1', tsz(-S(10)), tsz(-S(10) + 500_000n), { used_at: null })]),
      expectCode: 'report',
      check: expectFactors('0.0005', '0.0005', '0.001'),
    });
  ana('factors', 'analyse-mean-just-below-half-millisecond-rounds-down',
    'Windows of 0.000499999, 0.000500001 and 0.000499999 seconds average just below half a millisecond, so the mean rounds down to "0.000".',
    {
      body: at([
        L('k-1', tsz(-S(10)), tsz(-S(10) + 499_999n), { used_at: null }),
        L('k-2', tsz(-S(10)), tsz(-S(10) + 500_001n), { used_at: null }),
        L('k-3', tsz(-S(10)), tsz(-S(10) + 499_999n), { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectFactors('0.000499999', '0.000500001', '0.000'),
    });
  ana('factors', 'analyse-fractional-min-and-max',
    'Windows of 60.5, 100.25 and 300.125 seconds print min "60.5", max "300.125" and mean "153.625".',
    {
      body: at([
        L('q-1', '2026-11-29T11:00:00Z', '2026-11-29T11:01:00.5Z', { used_at: null }),
        L('q-2', '2026-11-29T11:00:00.75Z', '2026-11-29T11:01:41Z', { used_at: null }),
        L('q-3', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00.125Z', { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectFactors('60.5', '300.125', '153.625'),
    });

  // ------------------------------------------------------------ used_at

  ana('used-at', 'analyse-used-at-exactly-at-issued-and-expires',
    'A used_at equal to issued_at and one equal to expires_at (written at other offsets) are inside the closed interval and the lines are USED.',
    {
      body: at([
        L('w-1', '2026-11-29T11:30:00.000000001Z', '2026-11-29T11:31:00Z', { used_at: '2026-11-29T17:00:00.000000001+05:30' }),
        L('w-2', '2026-11-29T11:30:00Z', '2026-11-29T11:31:00.999999999Z', { used_at: '2026-11-29T03:31:00.999999999-08:00' }),
        L('w-3', '2026-11-29T11:30:00Z', '2026-11-29T11:31:00Z', { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(3, 3), expectCensus(2, 1, 0)),
    });
  ana('used-at', 'analyse-used-at-one-nanosecond-outside-malformed',
    'A used_at one nanosecond before issued_at and one a nanosecond after expires_at make their lines malformed, leaving one valid line.',
    {
      body: at([
        L('o-1', '2026-11-29T11:30:00Z', '2026-11-29T11:31:00Z', { used_at: '2026-11-29T16:59:59.999999999+05:30' }),
        L('o-2', '2026-11-29T11:30:00Z', '2026-11-29T11:31:00Z', { used_at: '2026-11-29T11:31:00.000000001Z' }),
        L('o-3', '2026-11-29T11:30:00Z', '2026-11-29T11:31:00Z', { used_at: '2026-11-29T11:31:00Z' }),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(3, 1), expectCensus(1, 0, 0)),
    });
  ana('used-at', 'analyse-used-at-null-computable-not-used',
    'When every valid line carries used_at null, usage is computable, nothing is used, and each line is EXPIRED-UNUSED or PENDING by its expiry.',
    {
      body: at([
        L('v-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
        L('v-2', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { used_at: null }),
        L('v-3', '2026-11-29T11:00:00Z', '2026-11-29T12:00:00Z', { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectCensus(0, 2, 1),
    });
  ana('used-at', 'analyse-used-at-absent-everywhere-not-computable',
    'When no valid line carries used_at, used, expired-unused and pending are NOT-COMPUTABLE in the census and verdict line while issued and the windows stay numbers.',
    {
      body: at([
        L('na-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z'),
        L('na-2', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z'),
        L('na-3', '2026-11-29T11:00:00Z', '2026-11-29T11:00:30Z'),
      ]),
      expectCode: 'report',
      check: expectAll(expectUsageNC, expectRailNC, expectWindows([1, 1, 0, 0, 1])),
    });
  ana('used-at', 'analyse-used-at-absent-with-rails-groups-not-computable',
    'With rail recorded but no used_at anywhere, each group keeps its issued count and prints used, expired-unused and pending as NOT-COMPUTABLE.',
    {
      body: at([
        L('nr-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { rail: 'usdc' }),
        L('nr-2', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { rail: 'card' }),
        L('nr-3', '2026-11-29T11:00:00Z', '2026-11-29T11:00:30Z', { rail: 'usdc' }),
        L('nr-4', '2026-11-29T11:00:00Z', '2026-11-29T11:00:30Z'),
      ]),
      expectCode: 'report',
      check: expectAll(expectUsageNC, expectRails([0, 1], 1), expectGroupSizes([2, 1])),
    });
  ana('used-at', 'analyse-used-at-only-on-malformed-lines-not-computable',
    'A used_at carried only by malformed lines (outside the window, or a number) does not make usage computable.',
    {
      body: at([
        L('nm-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: '2026-11-29T11:06:00Z' }),
        L('nm-2', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: 1764414000 }),
        L('nm-3', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z'),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(3, 1), expectUsageNC),
    });
  ana('used-at', 'analyse-used-at-mixed-null-absent-and-instant',
    'Once one valid line carries used_at, lines without the member are classified as not used by their expiry, like lines with used_at null.',
    {
      body: at([
        L('mx-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: '2026-11-29T11:01:00Z' }),
        L('mx-2', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z'),
        L('mx-3', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z'),
        L('mx-4', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectCensus(1, 1, 2),
    });
  ana('used-at', 'analyse-used-at-after-as-of-still-used',
    'A line whose used_at (and issue) lie after as_of is USED, since USED depends only on the line carrying a used_at instant, while an unused line expiring after T is PENDING.',
    {
      body: at([
        L('af-1', '2026-11-30T11:00:00Z', '2026-11-30T11:05:00Z', { used_at: '2026-11-30T11:04:00Z' }),
        L('af-2', '2026-11-30T11:00:00Z', '2026-11-30T11:05:00Z', { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectCensus(1, 0, 1),
    });
  pre('used-at', 'precheck-used-at-invalid-values',
    'A used_at that is a number, an empty string, false, an object or a timestamp with a lower-case t makes its line malformed.',
    {
      body: at([
        L('ui-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: 1764414060 }),
        L('ui-2', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: '' }),
        L('ui-3', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: false }),
        L('ui-4', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: { at: '2026-11-29T11:01:00Z' } }),
        L('ui-5', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: '2026-11-29t11:01:00Z' }),
        L('ui-6', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: '2026-11-29T11:01:00Z' }),
      ]),
      expectCode: 'precheck',
      check: expectLines(6, 1),
    });

  // ------------------------------------------------------------ rail

  ana('rail', 'analyse-rail-absent-everywhere-not-computable',
    'With usage computable but no valid line carrying rail, per_rail is the NOT-COMPUTABLE object with the rail reason.',
    {
      body: at([
        L('ra-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: '2026-11-29T11:01:00Z' }),
        L('ra-2', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectAll(expectCensus(1, 0, 1), expectRailNC),
    });
  ana('rail', 'analyse-rail-only-on-malformed-lines-not-computable',
    'A rail carried only by malformed lines (a duplicate id, a bad timestamp) does not make the per-rail split computable.',
    {
      body: at([
        L('rm-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
        L('rm-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null, rail: 'usdc' }),
        L('rm-2', '2026-11-29 11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null, rail: 'card' }),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(3, 1), expectRailNC),
    });
  ana('rail', 'analyse-rail-on-some-lines-absent-count',
    'Valid lines without a rail member are counted in rail_absent_lines and appear in no group.',
    {
      body: at([
        L('rs-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: '2026-11-29T11:01:00Z', rail: 'usdc' }),
        L('rs-2', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { used_at: null }),
        L('rs-3', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z'),
        L('rs-4', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { rail: 'usdc' }),
      ]),
      expectCode: 'report',
      check: expectAll(expectCensus(1, 1, 2), expectRails([0], 2)),
    });
  {
    // Eleven labels distinct only by exact string equality, then the
    // precomposed "é" and "card" again: thirteen lines, eleven groups.
    const rails = ['usdc', 'é', 'a', 'Z', 'USDC', '\u{1F600}', '\uFF21', ' ', 'e\u0301', 'card ', 'card', 'é', 'card'];
    ana('rail', 'analyse-rail-groups-exact-label-equality-log-order',
      'Eleven distinct labels, some differing only by case, a trailing space or Unicode normalisation, are eleven groups named first_line 0 to 10 in log order (not label order), and repeats of "é" and "card" join the groups of lines 1 and 10.',
      {
        body: at(rails.map((r, i) => L(`ro-${i}`, '2026-11-29T11:00:00Z', i % 2 ? '2026-11-29T11:05:00Z' : '2026-11-29T12:05:00Z',
          i % 3 ? { used_at: null, rail: r } : { used_at: '2026-11-29T11:02:00Z', rail: r }))),
        expectCode: 'report',
        check: expectAll(expectRails([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0), expectGroupSizes([1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 2])),
      });
  }
  pre('rail', 'precheck-rail-null-empty-and-non-string-malformed',
    'A rail that is null, an empty string, a number, an object or false makes its line malformed on the pre-check.',
    {
      body: at([
        L('rn-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { rail: null }),
        L('rn-2', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { rail: '' }),
        L('rn-3', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { rail: 7 }),
        L('rn-4', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { rail: { name: 'usdc' } }),
        L('rn-5', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { rail: false }),
        L('rn-6', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { rail: 'usdc' }),
      ]),
      expectCode: 'precheck',
      check: expectLines(6, 1),
    });
  ana('rail', 'analyse-rail-null-and-empty-malformed',
    'Lines with rail null or "" are malformed and counted neither in a group nor in rail_absent_lines.',
    {
      body: at([
        L('re-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null, rail: null }),
        L('re-2', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null, rail: '' }),
        L('re-3', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null, rail: 'usdc' }),
        L('re-4', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(4, 2), expectRails([2], 1)),
    });
  ana('rail', 'analyse-rail-group-without-used-at-member',
    'With usage computable for the log, a rail group none of whose lines carries used_at is counted as not used by expiry, like every valid line without a used_at instant.',
    {
      body: at([
        L('rg-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: '2026-11-29T11:01:00Z', rail: 'usdc' }),
        L('rg-2', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { rail: 'card' }),
        L('rg-3', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { rail: 'card' }),
      ]),
      expectCode: 'report',
      check: expectAll(expectCensus(1, 1, 1), expectRails([0, 1], 0), expectGroupSizes([1, 2])),
    });

  // ------------------------------------------------------------ rail groups by first_line

  ana('rail-groups', 'analyse-rail-annex-a8-example',
    'The ANNEX A-8 example: lines 0 and 3 carry "usdc" and line 1 "card" (line 2 malformed), giving the groups first_line 0 with two lines then first_line 1 with one line, and no label anywhere.',
    {
      body: at([
        L('a8-0', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: '2026-11-29T11:01:00Z', rail: 'usdc' }),
        L('a8-1', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { used_at: null, rail: 'card' }),
        L('a8-2', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null, rail: 'usdc', issued_at: 'yesterday' }),
        L('a8-3', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null, rail: 'usdc' }),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(4, 3), expectRails([0, 1], 0), expectGroupSizes([2, 1]), expectNoText('usdc'), expectNoText('card')),
    });
  ana('rail-groups', 'analyse-rail-groups-first-line-out-of-label-order-after-malformed',
    'After a malformed line 0 carrying "ach", groups are named by the first valid line of each value, usdc at 1, card at 3 and ach at 5 (a null line 4 also counted), and ordered by that position, the reverse of label order.',
    {
      body: at([
        L('fl-0', '2026-11-29 11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null, rail: 'ach' }),
        L('fl-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: '2026-11-29T11:01:00Z', rail: 'usdc' }),
        L('fl-2', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
        L('fl-3', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null, rail: 'card' }),
        null,
        L('fl-5', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { used_at: null, rail: 'ach' }),
        L('fl-6', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { rail: 'usdc' }),
        L('fl-7', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { rail: 'card' }),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(8, 6), expectCensus(1, 3, 2), expectRails([1, 3, 5], 1), expectGroupSizes([2, 2, 1])),
    });
  ana('rail-groups', 'analyse-rail-group-named-by-valid-line-not-duplicate',
    'With id "dd" malformed at line 0 (expiry before issue, rail card), valid at line 1 (rail usdc) and a malformed duplicate at line 2 (rail card), the card group is named by line 3, the first valid card line, and usdc by line 1.',
    {
      body: at([
        L('dd', '2026-11-29T11:05:00Z', '2026-11-29T11:00:00Z', { used_at: null, rail: 'card' }),
        L('dd', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: '2026-11-29T11:02:00Z', rail: 'usdc' }),
        L('dd', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { used_at: null, rail: 'card' }),
        L('de', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { used_at: null, rail: 'card' }),
        L('df', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null, rail: 'usdc' }),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(5, 3), expectCensus(1, 1, 1), expectRails([1, 3], 0), expectGroupSizes([2, 1])),
    });
  {
    const walletLabel = base58(makeRng('lifecycle-analytics-corpus/v1 wallet-like rail').bytes(32));
    assert(walletLabel.length >= 43 && walletLabel.length <= 44, 'wallet-like label length');
    const walletLog = [
      L('wl-0', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: '2026-11-29T11:03:00Z', rail: walletLabel }),
      L('wl-1', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { used_at: null, rail: 'card' }),
      L('wl-2', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null, rail: walletLabel, payer: walletLabel }),
      L('wl-3', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
    ];
    ana('rail-groups', 'analyse-rail-label-wallet-address-not-printed',
      'A rail label that looks like a base58 wallet address groups its two lines under first_line 0 and appears nowhere in the report, like every rail label.',
      {
        body: at(walletLog),
        expectCode: 'report',
        check: expectAll(expectLines(4, 4), expectRails([0, 1], 1), expectGroupSizes([2, 1]), expectNoText(walletLabel), expectNoText('card')),
      });
    pre('rail-groups', 'precheck-rail-label-wallet-address-not-printed',
      'The same log with a wallet-like rail label on the pre-check reports only line counts and carries no label.',
      { body: at(walletLog), expectCode: 'precheck', check: expectAll(expectLines(4, 4), expectNoText(walletLabel)) });
  }

  // ------------------------------------------------------------ duplicates

  ana('duplicates', 'analyse-duplicate-annex-a4-example',
    'The ANNEX A-4 example: a malformed first line with id "a" reserves nothing, the second "a" is valid and the third "a" is a malformed duplicate.',
    {
      body: at([
        L('a', '2026-11-29T11:05:00Z', '2026-11-29T11:00:00Z', { used_at: null }),
        L('a', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
        L('a', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(3, 1), expectCensus(0, 1, 0)),
    });
  ana('duplicates', 'analyse-duplicate-of-valid-line-first-wins',
    'A later otherwise-valid line repeating a valid line\'s id is malformed, so the first line\'s usage, window and rail are the ones counted.',
    {
      body: at([
        L('dup', '2026-11-29T11:00:00Z', '2026-11-29T11:00:30Z', { used_at: '2026-11-29T11:00:10Z', rail: 'card' }),
        L('dup', '2026-11-29T11:00:00Z', '2026-11-29T13:00:00Z', { used_at: null, rail: 'usdc' }),
        L('other', '2026-11-29T11:00:00Z', '2026-11-29T11:10:00Z', { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(3, 2), expectCensus(1, 1, 0), expectRails([0], 1), expectWindows([1, 0, 1, 0, 0])),
    });
  ana('duplicates', 'analyse-duplicate-behind-malformed-lines-reserves-nothing',
    'Two malformed lines carrying id "k" (bad timestamp, rail null) reserve nothing, so the third "k" is valid and the fourth is a malformed duplicate.',
    {
      body: at([
        L('k', '2026-11-29T11:00:00', '2026-11-29T11:05:00Z', { used_at: null }),
        L('k', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null, rail: null }),
        L('k', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: '2026-11-29T11:03:00Z', rail: 'usdc' }),
        L('k', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null, rail: 'usdc' }),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(4, 1), expectCensus(1, 0, 0)),
    });
  ana('duplicates', 'analyse-ids-differing-by-unicode-normalisation-distinct',
    'Ids that differ only by Unicode normalisation (é precomposed vs e plus combining acute, U+00C5 vs U+212B) or by case or trailing space are distinct and all valid.',
    {
      body: at([
        L('caf\u00e9', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
        L('cafe\u0301', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
        L('\u00c5', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
        L('\u212b', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
        L('id', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
        L('ID', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
        L('id ', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
        L(' ', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectLines(8, 8),
    });
  ana('duplicates', 'analyse-duplicate-id-equal-after-json-unescaping',
    'An id written "\\u0061\\u0062" in the JSON text equals "ab" after unescaping, so the second line is a malformed duplicate.',
    {
      body_text: JSON.stringify({ as_of: T0, log: [
        L('ab', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
        L('@@', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { used_at: null }),
        L('a\u00e9', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { used_at: null }),
        L('@\u00e9', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
      ] }).replace('"@@"', '"\\u0061\\u0062"').replace('"@\u00e9"', '"a\\u00E9"'),
      expectCode: 'report',
      check: expectAll(expectLines(4, 2), expectCensus(0, 1, 1)),
    });
  pre('duplicates', 'precheck-malformed-duplicate-counted-once',
    'A line that both repeats a valid id and is malformed on its own (bad rail) is counted once in the malformed lines.',
    {
      body: at([
        L('once', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z'),
        L('once', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { rail: '' }),
        L('once', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z'),
      ]),
      expectCode: 'precheck',
      check: expectLines(3, 1),
    });

  // ------------------------------------------------------------ ignored members

  ana('ignored', 'analyse-status-and-state-ignored',
    'A status or state field saying used, settled or expired is ignored: only a used_at instant makes a line USED.',
    {
      body: at([
        L('st-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null, status: 'used', state: 'settled' }),
        L('st-2', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { status: 'expired', state: 'paid' }),
        L('st-3', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: '2026-11-29T11:04:59Z', status: 'unused', state: null }),
      ]),
      expectCode: 'report',
      check: expectCensus(1, 1, 1),
    });
  ana('ignored', 'analyse-buyer-fields-ignored',
    'Buyer-identity fields (payer, wallet, customer, contact, buyer, email) of any type are ignored and never make a line malformed.',
    {
      body: at([
        L('bf-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: '2026-11-29T11:01:00Z', payer: '9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin', wallet: null }),
        L('bf-2', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { customer: { id: 17, name: 'Ada' }, contact: 'ada@example.com', rail: 'card' }),
        L('bf-3', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { buyer: ['x'], email: 42, wallet: '' }),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(3, 3), expectCensus(1, 1, 1), expectRails([1], 2)),
    });
  ana('ignored', 'analyse-unknown-body-members-and-caller-ignored',
    'Unknown top-level members and a caller member on the paid route are ignored.',
    {
      body: { caller: '9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin', note: 'ignored', options: { strict: false }, as_of: T0,
        log: [L('ub-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null })] },
      expectCode: 'report',
      check: expectCensus(0, 1, 0),
    });
  pre('ignored', 'precheck-unknown-body-members-ignored',
    'Unknown top-level members are ignored on the pre-check, which still reports only the line counts.',
    {
      body: { log: [L('ub-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null })], extra: [1, 2], as_of: null },
      expectCode: 'precheck',
      check: expectLines(1, 1),
    });

  // ------------------------------------------------------------ line shape

  ana('line-shape', 'analyse-non-object-lines-malformed',
    'Lines that are null, a number, a string, an array (even wrapping a valid object), or true are malformed and excluded from every count.',
    {
      body: at([
        null, 1, 'challenge', [], [L('wrapped', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z')], true,
        L('obj-1', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
        L('obj-2', '2026-11-29T11:00:00Z', '2026-11-29T12:05:00Z', { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(8, 2), expectCensus(0, 1, 1)),
    });
  pre('line-shape', 'precheck-challenge-id-invalid',
    'A challenge_id that is missing, a number, an empty string, null or an array makes the line malformed, while a single space is a valid id.',
    {
      body: at([
        { issued_at: '2026-11-29T11:00:00Z', expires_at: '2026-11-29T11:05:00Z' },
        L(12, '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z'),
        L('', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z'),
        L(null, '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z'),
        L(['x'], '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z'),
        L(' ', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z'),
      ]),
      expectCode: 'precheck',
      check: expectLines(6, 1),
    });
  pre('line-shape', 'precheck-issued-and-expires-missing-or-not-strings',
    'A missing issued_at or expires_at, an epoch number, null or an object in their place makes the line malformed.',
    {
      body: at([
        { challenge_id: 'i-1', expires_at: '2026-11-29T11:05:00Z' },
        { challenge_id: 'i-2', issued_at: '2026-11-29T11:00:00Z' },
        L('i-3', 1764414000, '2026-11-29T11:05:00Z'),
        L('i-4', '2026-11-29T11:00:00Z', null),
        L('i-5', { t: '2026-11-29T11:00:00Z' }, '2026-11-29T11:05:00Z'),
        L('i-6', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z'),
      ]),
      expectCode: 'precheck',
      check: expectLines(6, 1),
    });
  ana('line-shape', 'analyse-expires-not-strictly-after-issued-malformed',
    'An expires_at equal to issued_at (also when written at another offset) or before it makes the line malformed.',
    {
      body: at([
        L('eq-1', '2026-11-29T11:00:00Z', '2026-11-29T11:00:00Z', { used_at: null }),
        L('eq-2', '2026-11-29T11:00:00.5Z', '2026-11-29T16:30:00.500+05:30', { used_at: null }),
        L('eq-3', '2026-11-29T11:00:00Z', '2026-11-29T10:59:59.999999999Z', { used_at: null }),
        L('eq-4', '2026-11-29T11:00:00Z', '2026-11-29T11:00:00.000000001Z', { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(4, 1), expectFactors('0.000000001', '0.000000001', '0.000')),
    });

  // ------------------------------------------------------------ malformed timestamp forms

  const tsForm = (name, description, bad, where = 'issued_at') => {
    const good = L('tf-ok', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z');
    const line = L('tf-bad', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z');
    line[where] = bad;
    assert(parseTimestamp(bad) === null, 'form is malformed: ' + bad);
    pre('timestamps', name, description, { body: at([good, line]), expectCode: 'precheck', check: expectLines(2, 1) });
  };
  tsForm('precheck-timestamp-date-only-malformed', 'A date-only issued_at "2026-11-29" is not a parseable timestamp and the line is malformed.', '2026-11-29');
  tsForm('precheck-timestamp-lower-case-t-malformed', 'A lower-case "t" separator makes expires_at unparseable and the line malformed.', '2026-11-29t11:05:00Z', 'expires_at');
  tsForm('precheck-timestamp-lower-case-z-malformed', 'A lower-case "z" suffix makes issued_at unparseable and the line malformed.', '2026-11-29T11:00:00z');
  tsForm('precheck-timestamp-offset-without-colon-malformed', 'An offset written "+0530" without a colon is not accepted and the line is malformed.', '2026-11-29T16:30:00+0530');
  tsForm('precheck-timestamp-space-separator-malformed', 'A space instead of "T" between date and time makes expires_at unparseable and the line malformed.', '2026-11-29 11:05:00Z', 'expires_at');
  tsForm('precheck-timestamp-ten-fraction-digits-malformed', 'Ten fractional digits exceed nanosecond precision and the line is malformed.', '2026-11-29T11:00:00.1234567890Z');
  tsForm('precheck-timestamp-month-13-malformed', 'Month 13 is not a valid month and the line is malformed.', '2026-13-01T11:00:00Z');
  tsForm('precheck-timestamp-february-29-non-leap-malformed', 'February 29 of the non-leap year 2026 is not a valid date and the line is malformed.', '2026-02-29T11:00:00Z');
  tsForm('precheck-timestamp-hour-24-malformed', 'Hour 24 (24:00:00) is not accepted and the line is malformed.', '2026-11-28T24:00:00Z');
  tsForm('precheck-timestamp-leap-second-60-malformed', 'A leap second :60 is not accepted and the line is malformed.', '2026-11-29T10:59:60Z');
  tsForm('precheck-timestamp-offset-24-00-malformed', 'An offset of +24:00 exceeds offset hours 00-23 and the line is malformed.', '2026-11-30T11:05:00+24:00', 'expires_at');
  {
    const forms = [
      '2026-11-29T11:00Z', '2026-11-29T11:00:00', '2026-11-29T11:00:00.Z', '2026-11-29T11:00:00,5Z', '20261129T110000Z',
      '+02026-11-29T11:00:00Z', '26-11-29T11:00:00Z', '2026-11-29T11:60:00Z', '2026-11-29T16:30:00+05:60', '2026-11-00T11:00:00Z',
      '2026-00-29T11:00:00Z', '2026-04-31T11:00:00Z', '2026-W48-7T11:00:00Z', '2026-333T11:00:00Z', ' 2026-11-29T11:00:00Z',
      '2026-11-29T11:00:00Z\n', '2026-11-29T16:30:00+05:30:00', '2026-11-29T11:00:00 Z', '2026-11-29T11:00:00UTC', '2026-11-29T11:00:00+05',
      '２０２６-11-29T11:00:00Z', '2026-11-29T1:00:00Z', '2026-1-29T11:00:00Z', '2026-11-29T11:00:00.-1Z', '2026-11-29T11:00:00Z+00:00',
      '2026-11-29T11:00:00−05:00', '', '1900-02-29T11:00:00Z', '2100-02-29T11:00:00Z',
    ];
    for (const f of forms) assert(parseTimestamp(f) === null, 'other form malformed: ' + JSON.stringify(f));
    pre('timestamps', 'precheck-timestamp-other-forms-malformed',
      'Other non-A-2 forms (no seconds, no offset, empty or comma fraction, basic format, five- or two-digit year, minute 60, offset minutes 60, day 00, month 00, April 31, week and ordinal dates, whitespace, extra fields, fullwidth digits, U+2212 minus, empty string, February 29 of 1900 and 2100) are each malformed.',
      {
        body: at([
          L('tf-ok', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z'),
          ...forms.map((f, i) => L(`tf-${i}`, f, '2026-11-29T11:05:00Z')),
        ]),
        expectCode: 'precheck',
        check: expectLines(forms.length + 1, 1),
      });
  }
  ana('timestamps', 'analyse-timestamp-february-29-leap-years-valid',
    'February 29 of the leap years 2024 and 2000 (divisible by 400) is valid, and a window across February 29, 2028 counts its extra day.',
    {
      body: at([
        L('lp-1', '2024-02-29T00:00:00Z', '2024-02-29T00:01:00Z', { used_at: '2024-02-29T00:00:30Z' }),
        L('lp-2', '2000-02-28T23:59:00Z', '2000-02-29T00:00:00Z', { used_at: null }),
        L('lp-3', '2028-02-28T12:00:00Z', '2028-03-01T12:00:00Z', { used_at: null }),
      ]),
      expectCode: 'report',
      check: expectAll(expectLines(3, 3), expectCensus(1, 1, 1), expectFactors('60', '172800', '57640.000')),
    });

  // ------------------------------------------------------------ as_of and T

  ana('as-of', 'analyse-as-of-equals-expires-expired-unused',
    'With T equal to an expiry the line is EXPIRED-UNUSED (expires_at at or before T) and with expires_at one nanosecond after T it is PENDING.',
    {
      body: at([
        L('t-eq', '2026-11-29T11:00:00Z', '2026-11-29T12:00:00Z', { used_at: null, rail: 'usdc' }),
        L('t-ns', '2026-11-29T11:00:00Z', '2026-11-29T12:00:00.000000001Z', { used_at: null, rail: 'usdc' }),
        L('t-lt', '2026-11-29T11:00:00Z', '2026-11-29T11:59:59.999999999Z', { rail: 'usdc' }),
      ]),
      expectCode: 'report',
      check: expectAll(expectCensus(0, 2, 1), expectRails([0], 0)),
    });
  const clockLog = [
    L('sc-1', '2000-01-01T00:00:00Z', '2000-01-01T00:05:00Z', { used_at: null, rail: 'usdc' }),
    L('sc-2', '2000-01-01T00:00:00Z', '2000-01-01T00:00:30Z', { rail: 'card' }),
    L('sc-3', '9999-12-31T23:00:00Z', '9999-12-31T23:59:59Z', { used_at: null, rail: 'usdc' }),
    L('sc-4', '2000-06-01T00:00:00Z', '2000-06-01T01:00:00Z', { used_at: '2000-06-01T00:30:00Z' }),
  ];
  ana('as-of', 'analyse-as-of-absent-server-clock',
    'Without as_of T is the server clock, printed as evaluation_instant with source server_clock; expiries in 2000 are EXPIRED-UNUSED and in 9999 PENDING at any clock.',
    {
      body: { log: clockLog },
      expectCode: 'report',
      check: expectAll(expectCensus(1, 2, 1), expectInstant(SERVER_CLOCK, 'server_clock')),
    });
  ana('as-of', 'analyse-as-of-null-server-clock',
    'An as_of of null means not supplied, so T is the server clock as when as_of is absent.',
    {
      body: { log: clockLog.slice(0, 3), as_of: null },
      expectCode: 'report',
      check: expectAll(expectCensus(0, 2, 1), expectInstant(SERVER_CLOCK, 'server_clock')),
    });
  ana('as-of', 'analyse-server-clock-usage-not-computable',
    'Without used_at and without as_of the verdict line prints NOT-COMPUTABLE three times and ends with the server clock.',
    {
      body: { log: [L('sn-1', '2000-01-01T00:00:00Z', '2000-01-01T00:05:00Z'), L('sn-2', '9999-01-01T00:00:00Z', '9999-01-01T02:00:00Z')] },
      expectCode: 'report',
      check: expectAll(expectUsageNC, expectInstant(SERVER_CLOCK, 'server_clock')),
    });
  pre('as-of', 'precheck-as-of-absent-accepted',
    'A pre-check without as_of is assessable and carries no evaluation instant.',
    { body: { log: clockLog }, expectCode: 'precheck', check: expectLines(4, 4) });
  const asOfInvalid = (route, name, description, as_of) => {
    assert(parseTimestamp(as_of) === null, 'as_of invalid');
    addCase(route, 'refusals', name, description, { body: { log: annexLog, as_of }, expectCode: 'as_of_invalid' });
  };
  asOfInvalid(OP, 'analyse-as-of-date-only-invalid', 'An as_of that is a date only is refused as_of_invalid.', '2026-11-29');
  asOfInvalid(OP, 'analyse-as-of-empty-string-invalid', 'An empty-string as_of is not "not supplied" and is refused as_of_invalid.', '');
  asOfInvalid('precheck', 'precheck-as-of-number-invalid', 'An as_of given as an epoch number is refused as_of_invalid on the pre-check.', 1764417600);
  asOfInvalid(OP, 'analyse-as-of-boolean-invalid', 'An as_of of false is refused as_of_invalid.', false);

  // ------------------------------------------------------------ timestamp range: years 0000-9999 UTC

  const lowLog = [
    L('lo-1', '0000-01-01T00:00:00Z', '0000-01-01T00:01:00Z', { used_at: '0000-01-01T00:00:00Z' }),
    L('lo-2', '0000-01-01T23:59:00+23:59', '0000-01-01T00:00:00.000000001Z', { used_at: null }),
    L('lo-3', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
  ];
  const highLog = [
    L('hi-1', '9999-12-31T23:00:00Z', '9999-12-31T00:00:59.999999999-23:59', { used_at: null }),
    L('hi-2', '9999-12-31T23:00:00Z', '9999-12-31T23:59:00Z', { used_at: null }),
    L('hi-3', '9999-12-31T23:00:00Z', '9999-12-31T23:59:00.000000001Z', { used_at: null }),
    L('hi-4', '9999-12-31T23:00:00Z', '9999-12-31T23:59:30Z', { used_at: '9999-12-31T23:30:00-00:29' }),
    L('hi-5', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: null }),
  ];
  const asOfInRange = (route, name, description, log, as_of, printed, counts) => {
    assert(parseTimestamp(as_of) !== null && formatInstant(parseTimestamp(as_of)) === printed, 'as_of in range ' + as_of);
    if (route === 'precheck') {
      pre('range', name, description, { body: { log, as_of }, expectCode: 'precheck', check: expectLines(log.length, log.length) });
    } else {
      ana('range', name, description, { body: { log, as_of }, expectCode: 'report', check: expectAll(expectInstant(printed, 'as_of'), expectCensus(...counts)) });
    }
  };
  const asOfOutOfRange = (route, name, description, as_of) => {
    assert(TS_RE.test(as_of) && parseTimestamp(as_of) === null, 'as_of of the A-2 form, outside the range ' + as_of);
    addCase(route, 'range', name, description, { body: { log: lowLog, as_of }, expectCode: 'as_of_invalid' });
  };
  asOfInRange(OP, 'analyse-as-of-lower-end-exact-z',
    'An as_of of exactly 0000-01-01T00:00:00Z, the first instant of the range, is accepted and printed, and lines expiring after it are PENDING.',
    lowLog, '0000-01-01T00:00:00Z', '0000-01-01T00:00:00Z', [1, 0, 2]);
  asOfInRange(OP, 'analyse-as-of-lower-end-exact-plus-2359',
    'An as_of of 0000-01-01T23:59:00+23:59 is exactly the instant 0000-01-01T00:00:00Z, inside the range, and prints as such.',
    lowLog, '0000-01-01T23:59:00+23:59', '0000-01-01T00:00:00Z', [1, 0, 2]);
  asOfInRange('precheck', 'precheck-as-of-lower-end-exact-plus-0100',
    'An as_of of 0000-01-01T01:00:00+01:00, exactly the first instant of year 0000, is accepted on the pre-check.',
    lowLog, '0000-01-01T01:00:00+01:00', '0000-01-01T00:00:00Z');
  asOfInRange(OP, 'analyse-as-of-year-0000-minus-offset-inside',
    'A local time of 0000-01-01T00:00:00 at the negative offset -23:59 is the later instant 0000-01-01T23:59:00Z, inside the range.',
    lowLog, '0000-01-01T00:00:00-23:59', '0000-01-01T23:59:00Z', [1, 1, 1]);
  asOfOutOfRange(OP, 'analyse-as-of-before-year-0000-annex-example-invalid',
    'The ANNEX A-2 example 0000-01-01T00:30:00+01:00 is the instant half an hour before year 0000, not parseable, and refused as_of_invalid.',
    '0000-01-01T00:30:00+01:00');
  asOfOutOfRange('precheck', 'precheck-as-of-before-year-0000-annex-example-invalid',
    'The ANNEX A-2 example 0000-01-01T00:30:00+01:00 as as_of is refused as_of_invalid on the pre-check too.',
    '0000-01-01T00:30:00+01:00');
  asOfOutOfRange(OP, 'analyse-as-of-one-nanosecond-before-year-0000-invalid',
    'An as_of of 0000-01-01T23:58:59.999999999+23:59 is one nanosecond before year 0000 UTC and is refused as_of_invalid.',
    '0000-01-01T23:58:59.999999999+23:59');
  asOfInRange(OP, 'analyse-as-of-upper-end-exact-z',
    'An as_of of exactly 9999-12-31T23:59:59.999999999Z, the last instant of the range, is accepted, and a line expiring at that instant is EXPIRED-UNUSED.',
    highLog, '9999-12-31T23:59:59.999999999Z', '9999-12-31T23:59:59.999999999Z', [1, 4, 0]);
  asOfInRange(OP, 'analyse-as-of-upper-end-exact-minus-2359',
    'An as_of of 9999-12-31T00:00:59.999999999-23:59 is exactly the last instant 9999-12-31T23:59:59.999999999Z and prints as such.',
    highLog, '9999-12-31T00:00:59.999999999-23:59', '9999-12-31T23:59:59.999999999Z', [1, 4, 0]);
  asOfInRange('precheck', 'precheck-as-of-upper-end-exact-minus-0100',
    'An as_of of 9999-12-31T22:59:59.999999999-01:00, exactly the last instant of year 9999, is accepted on the pre-check.',
    highLog, '9999-12-31T22:59:59.999999999-01:00', '9999-12-31T23:59:59.999999999Z');
  asOfInRange(OP, 'analyse-as-of-annex-example-9999-minus-0029',
    'The ANNEX A-2 example 9999-12-31T23:30:00-00:29 is the instant 9999-12-31T23:59:00Z, so an expiry at it is EXPIRED-UNUSED and one nanosecond later PENDING.',
    highLog, '9999-12-31T23:30:00-00:29', '9999-12-31T23:59:00Z', [1, 2, 2]);
  asOfInRange(OP, 'analyse-as-of-year-9999-plus-offset-inside',
    'A local time of 9999-12-31T23:59:59.999999999 at the positive offset +23:59 is the earlier instant 9999-12-31T00:00:59.999999999Z, inside the range.',
    highLog, '9999-12-31T23:59:59.999999999+23:59', '9999-12-31T00:00:59.999999999Z', [1, 1, 3]);
  asOfOutOfRange(OP, 'analyse-as-of-one-nanosecond-after-year-9999-invalid',
    'An as_of of 9999-12-31T23:00:00-01:00 is the instant one nanosecond after 9999-12-31T23:59:59.999999999Z and is refused as_of_invalid.',
    '9999-12-31T23:00:00-01:00');
  asOfOutOfRange('precheck', 'precheck-as-of-one-nanosecond-after-year-9999-invalid',
    'An as_of of 9999-12-31T00:01:00-23:59, one nanosecond after year 9999 UTC, is refused as_of_invalid on the pre-check.',
    '9999-12-31T00:01:00-23:59');
  {
    const rangeLog = [
      L('yr-0', '0000-01-01T00:30:00+01:00', '0000-01-01T02:00:00Z', { used_at: null, rail: 'usdc' }),
      L('yr-1', '0000-01-01T23:58:59.999999999+23:59', '0000-01-01T00:01:00Z', { used_at: null }),
      L('yr-2', '0000-01-01T23:59:00+23:59', '0000-01-01T00:01:00Z', { used_at: null, rail: 'usdc' }),
      L('yr-3', '9999-12-31T22:00:00Z', '9999-12-31T23:00:00-01:00', { used_at: null, rail: 'card' }),
      L('yr-4', '9999-12-31T22:00:00Z', '9999-12-31T00:00:59.999999999-23:59', { used_at: '9999-12-31T23:30:00-00:29', rail: 'card' }),
      L('yr-5', '2026-11-29T11:00:00Z', '2026-11-29T11:05:00Z', { used_at: '0000-01-01T00:30:00+01:00' }),
    ];
    ana('range', 'analyse-line-timestamps-outside-years-0000-9999-malformed',
      'Lines whose issued_at offset carries it before year 0000 (the ANNEX example, or by one nanosecond), whose expires_at lies one nanosecond after year 9999, or whose used_at is before year 0000 are malformed, so the usdc group is named by line 2 and card by line 4.',
      {
        body: at(rangeLog),
        expectCode: 'report',
        check: expectAll(expectLines(6, 2), expectCensus(1, 1, 0), expectRails([2, 4], 0), expectGroupSizes([1, 1])),
      });
    pre('range', 'precheck-line-timestamps-outside-years-0000-9999-malformed',
      'The same log on the pre-check counts the four lines with an instant outside years 0000-9999 UTC as malformed.',
      { body: at(rangeLog), expectCode: 'precheck', check: expectLines(6, 2) });
    addCase(OP, 'range', 'analyse-only-line-before-year-0000-no-valid-lines',
      'A log whose only line has issued_at 0000-01-01T00:30:00+01:00 (before year 0000 UTC) has no valid line and is refused no_valid_lines.',
      { body: at([rangeLog[0]]), expectCode: 'no_valid_lines' });
  }
  tsForm('precheck-timestamp-issued-at-offset-before-year-0000-malformed',
    'An issued_at of 0000-01-01T00:30:00+01:00, whose offset carries it before year 0000 UTC, is not parseable and the line is malformed.',
    '0000-01-01T00:30:00+01:00');
  tsForm('precheck-timestamp-expires-at-offset-after-year-9999-malformed',
    'An expires_at of 9999-12-31T23:00:00-01:00, whose offset carries it past year 9999 UTC, is not parseable and the line is malformed.',
    '9999-12-31T23:00:00-01:00', 'expires_at');

  // ------------------------------------------------------------ refusals

  const refuse = (route, name, description, req) => addCase(route, 'refusals', name, description, req);
  refuse(OP, 'analyse-body-not-json', 'A body that is not JSON text is refused body_not_object.',
    { body_text: 'log=[]&as_of=2026-11-29T12:00:00Z', expectCode: 'body_not_object' });
  refuse('precheck', 'precheck-body-truncated-json', 'A truncated JSON text is refused body_not_object on the pre-check.',
    { body_text: '{"log":[{"challenge_id":"a","issued_at":"2026-11-29T11:00:00Z"', expectCode: 'body_not_object' });
  refuse(OP, 'analyse-body-empty', 'An empty request body is refused body_not_object.', { body_text: '', expectCode: 'body_not_object' });
  refuse(OP, 'analyse-body-trailing-garbage', 'A JSON object followed by more text is not one JSON value and is refused body_not_object.',
    { body_text: JSON.stringify(at(annexLog)) + ' []', expectCode: 'body_not_object' });
  refuse(OP, 'analyse-body-array-of-valid-log', 'A body that is the log array itself rather than an object is refused body_not_object.',
    { body: annexLog, expectCode: 'body_not_object' });
  refuse('precheck', 'precheck-body-null', 'A JSON null body is refused body_not_object on the pre-check.', { body: null, expectCode: 'body_not_object' });
  refuse(OP, 'analyse-log-missing', 'An object without log is refused log_required.', { body: { as_of: T0, lines: annexLog }, expectCode: 'log_required' });
  refuse(OP, 'analyse-log-null', 'A log of null is refused log_required.', { body: { log: null }, expectCode: 'log_required' });
  refuse('precheck', 'precheck-log-object', 'A log that is an object rather than an array is refused log_required on the pre-check.',
    { body: { log: { 0: annexLog[0] } }, expectCode: 'log_required' });
  refuse(OP, 'analyse-log-empty', 'An empty log is refused log_empty.', { body: { log: [], as_of: T0 }, expectCode: 'log_empty' });
  refuse('precheck', 'precheck-log-empty', 'An empty log is refused log_empty on the pre-check.', { body: { log: [] }, expectCode: 'log_empty' });
  refuse(OP, 'analyse-no-valid-lines', 'A log whose every line is malformed is refused no_valid_lines with the submitted and malformed line counts.',
    { body: at([null, L('nv', '2026-11-29', '2026-11-29T11:05:00Z'), annexMalformed]), expectCode: 'no_valid_lines' });
  refuse('precheck', 'precheck-no-valid-lines',
    'A log of one non-object line and two lines sharing an id whose expiry is not after issue or unparseable is refused no_valid_lines with its counts on the pre-check.',
    { body: { log: ['x', L('q', '2026-11-29T11:00:00Z', '2026-11-29T11:00:00Z'), L('q', '2026-11-29T11:00:00Z', 'soon')] }, expectCode: 'no_valid_lines' });
  refuse(OP, 'analyse-order-annex-a3-example', 'The ANNEX A-3 example {"log": [], "as_of": "yesterday"} is refused as_of_invalid, not log_empty.',
    { body_text: '{"log": [], "as_of": "yesterday"}', expectCode: 'as_of_invalid' });
  refuse(OP, 'analyse-order-log-required-before-as-of-invalid', 'A missing log with an invalid as_of is refused log_required, the earlier rule.',
    { body: { as_of: 'yesterday' }, expectCode: 'log_required' });
  refuse('precheck', 'precheck-order-as-of-invalid-before-no-valid-lines', 'An invalid as_of with only malformed lines is refused as_of_invalid before no_valid_lines.',
    { body: { log: [null, 5], as_of: 'tomorrow' }, expectCode: 'as_of_invalid' });

  // ------------------------------------------------------------ body cap (host pre-gate)

  {
    const rng = makeRng('lifecycle-analytics-corpus/v1 cap');
    const lines = [];
    for (let i = 0; lines.length < 1200; i++) {
      lines.push(L(`cap-${i}-${rng.u32().toString(36)}`, '2026-11-29T11:00:00Z', i % 2 ? '2026-11-29T11:05:00Z' : '2026-11-29T12:05:00Z',
        i % 3 ? { used_at: null, rail: i % 5 ? 'usdc' : 'card' } : { used_at: '2026-11-29T11:00:01Z' }));
    }
    const compact = JSON.stringify({ log: lines, as_of: T0 });
    const n = utf8Length(compact);
    assert(n < CAP && n > CAP / 2, 'body-cap base fits: ' + n);
    const exact = compact + ' '.repeat(CAP - n);
    const over = exact + ' ';
    assert(utf8Length(exact) === CAP && utf8Length(over) === CAP + 1, 'body-cap sizes');
    pre('cap', 'precheck-body-262144-bytes-accepted',
      'A pre-check body of exactly 262,144 bytes (a compact object padded with spaces) passes the body cap and is assessable.',
      { body_text: exact, expectCode: 'precheck', check: expectLines(1200, 1200) });
    ana('cap', 'analyse-body-262144-bytes-accepted',
      'An analyse body of exactly 262,144 bytes passes the body cap and is analysed.',
      { body_text: exact, expectCode: 'report' });
    pre('cap', 'precheck-body-262145-bytes-refused',
      'A pre-check body of 262,145 bytes (one over the cap) is refused 413 body_bytes_cap naming the cap.',
      { body_text: over, expectCode: 'body_bytes_cap' });
    ana('cap', 'analyse-body-262145-bytes-refused',
      'An analyse body of 262,145 bytes is refused 413 body_bytes_cap before parsing or payment.',
      { body_text: over, expectCode: 'body_bytes_cap' });
    ana('cap', 'analyse-over-cap-not-json-refused-413',
      'A body over the cap that is not JSON is refused body_bytes_cap, not body_not_object, since the cap is checked before parsing.',
      { body_text: 'x'.repeat(CAP + 100), expectCode: 'body_bytes_cap' });
  }

  // ------------------------------------------------------------ seeded mixed logs

  {
    const rng = makeRng('lifecycle-analytics-corpus/v1 mixed');
    const pick = (arr) => arr[rng.int(arr.length)];
    const OFFSETS = [0, 0, 0, 330, -480, 60, -300, 345, -210, 1439, -1439, 600];
    const WINDOWS = [1n, S(30), S(60), S(60) + 1n, S(120), S(300), S(300) + 1n, S(600), S(900), S(900) + 1n, S(1800), S(3600), S(3600) + 1n, S(86400), 1_500_000_000n];
    const RAILS = ['usdc', 'card', 'USDC', 'sol', 'é', 'e\u0301'];
    const write = (ns, negZeroOK = true) => {
      const digits = rng.int(4) === 0 ? 0 : 9 - rng.int(4) * 3; // 0, 3, 6 or 9 digits
      const step = 10n ** BigInt(9 - digits);
      const rounded = floorDiv(ns, step) * step;
      const off = pick(OFFSETS);
      return formatLocal(rounded, off, digits, negZeroOK && off === 0 && rng.int(6) === 0);
    };
    const log = [];
    for (let i = 0; i < 240; i++) {
      const id = `mix-${rng.int(200)}`;
      const issued = T0ns - S(rng.int(7200)) - BigInt(rng.int(1_000_000_000));
      let w = pick(WINDOWS);
      if (rng.int(4) === 0) w += BigInt(rng.int(1_000_000));
      const line = { challenge_id: id, issued_at: write(issued), expires_at: write(issued + w) };
      const u = rng.int(10);
      if (u < 4) line.used_at = write(issued + (w * BigInt(rng.int(1001))) / 1000n);
      else if (u < 6) line.used_at = null;
      else if (u === 6) line.used_at = write(issued + w + S(1));
      const r = rng.int(8);
      if (r < 5) line.rail = RAILS[r];
      else if (r === 5) line.rail = pick([null, '', 3]);
      if (rng.int(10) === 0) line.status = pick(['used', 'expired', 'pending']);
      if (rng.int(12) === 0) line.wallet = 'W' + rng.u32().toString(16);
      const bad = rng.int(25);
      if (bad === 0) line.issued_at = line.issued_at.replace('T', ' ');
      else if (bad === 1) line.expires_at = line.issued_at;
      else if (bad === 2) delete line.challenge_id;
      log.push(bad === 3 ? [line] : line);
    }
    const asOf = formatLocal(T0ns - S(1800), 330, 9);
    pre('mixed', 'precheck-seeded-mixed-log',
      'A seeded pseudo-random log of 240 lines mixing offsets, fraction lengths, windows, duplicates, rails and malformations reports its line counts.',
      { body: { log, as_of: asOf }, expectCode: 'precheck' });
    ana('mixed', 'analyse-seeded-mixed-log',
      'The same seeded 240-line log analysed at an as_of with offset and nine fractional digits exercises every rule together.',
      {
        body: { log, as_of: asOf },
        expectCode: 'report',
        check: (a, n) => {
          assert(a.lines.malformed > 20 && a.lines.valid > 100, `case ${n}: mixed log spread ${JSON.stringify(a.lines)}`);
          assert(a.census.used > 0 && a.census.expired_unused > 0 && a.census.pending > 0, `case ${n}: census spread`);
          assert(criteria.window_buckets.every((b) => a.expiry_windows[b] > 0), `case ${n}: every bucket used`);
          assert(a.per_rail.groups.length === 5 && a.per_rail.rail_absent_lines > 0, `case ${n}: rail spread`);
        },
      });
  }

  // ------------------------------------------------------------ uncovered routes

  addCase(`/${service}/verify`, 'not-covered', 'post-verify-not-covered',
    'A POST to /lifecycle-analytics/verify, an op this service does not offer, answers 404 with the static body NOT COVERED.',
    { body: at(annexLog), expectCode: 'NOT COVERED' });

  return { cases, tally };
}

// ---------------------------------------------------------------- self-tests

// The ANNEX's own examples, checked against this implementation before any
// case is written, plus the timestamp code against node's Date where Date is
// exact (millisecond instants), and the refusal table against the ANNEX text.
function selfTest({ validate, report, precheck, verdictLine, criteria, annexText }) {
  // example and printed forms.
  assert(parseTimestamp('2026-11-29T17:30:00.000000001+05:30') === parseTimestamp('2026-11-29T12:00:00.000000001Z'), 'A-2 example');
  assert(formatInstant(parseTimestamp('2026-11-29T17:30:00.000000001+05:30')) === '2026-11-29T12:00:00.000000001Z', 'A-2 printed ns');
  assert(formatInstant(parseTimestamp('2026-11-29T12:00:00.50Z')) === '2026-11-29T12:00:00.5Z', 'A-2 printed .5');
  assert(formatInstant(parseTimestamp('2026-11-29T12:00:00.000-00:00')) === '2026-11-29T12:00:00Z', 'A-2 printed whole');
  for (const bad of ['2026-11-29', '2026-11-29t12:00:00Z', '2026-11-29T12:00:00z', '2026-11-29T12:00:00+0530', '2026-11-29 12:00:00Z',
    '2026-11-29T12:00:00.1234567890Z', '2026-13-01T00:00:00Z', '2023-02-29T00:00:00Z', '2026-11-29T24:00:00Z', '2026-11-29T23:59:60Z',
    '2026-11-29T12:00:00+24:00', '2026-11-29T12:00:00+05:60', null, 5, undefined]) {
    assert(parseTimestamp(bad) === null, 'A-2 malformed ' + JSON.stringify(bad));
  }
  assert(parseTimestamp('2024-02-29T00:00:00Z') !== null && parseTimestamp('2000-02-29T00:00:00Z') !== null, 'leap years');
  assert(parseTimestamp('0000-01-01T00:00:00Z') === BigInt(Date.parse('0000-01-01T00:00:00Z')) * 1_000_000n, 'year 0000');
  // A-2 range: the instant itself lies in years 0000-9999 UTC; the ANNEX's
  // own examples, checked as printed in the ANNEX text.
  for (const ex of ['`0000-01-01T00:00:00Z`', '`9999-12-31T23:59:59.999999999Z`', '`0000-01-01T00:30:00+01:00`',
    '`9999-12-31T23:30:00-00:29`', '`9999-12-31T23:59:00Z`']) assert(annexText.includes(ex), 'A-2 range example in the ANNEX ' + ex);
  assert(parseTimestamp('0000-01-01T00:30:00+01:00') === null, 'A-2 range example before year 0000');
  assert(parseTimestamp('9999-12-31T23:30:00-00:29') === parseTimestamp('9999-12-31T23:59:00Z'), 'A-2 range example 9999');
  assert(parseTimestamp('9999-12-31T23:59:59.999999999Z') === BigInt(Date.parse('9999-12-31T23:59:59.999Z')) * 1_000_000n + 999_999n, 'A-2 upper end');
  assert(parseTimestamp('0000-01-01T23:59:00+23:59') === parseTimestamp('0000-01-01T00:00:00Z'), 'A-2 lower end at +23:59');
  assert(parseTimestamp('0000-01-01T23:58:59.999999999+23:59') === null, 'A-2 one nanosecond before year 0000');
  assert(parseTimestamp('9999-12-31T00:00:59.999999999-23:59') === parseTimestamp('9999-12-31T23:59:59.999999999Z'), 'A-2 upper end at -23:59');
  assert(parseTimestamp('9999-12-31T23:00:00-01:00') === null, 'A-2 one nanosecond after year 9999');
  assert(parseTimestamp('0000-01-01T00:00:00-23:59') !== null && parseTimestamp('9999-12-31T23:59:59.999999999+23:59') !== null, 'A-2 inward offsets');
  // Against node's Date at millisecond precision, years 0000-9999, all offsets.
  const rng = makeRng('settlement-evidence selftest');
  for (let i = 0; i < 20000; i++) {
    const ms = (rng.u32() * 65536 + (rng.u32() & 0xffff)) % 315537897600000 - 62167219200000; // [0000-01-01, 9999-12-31]
    const ns = BigInt(ms) * 1_000_000n;
    const iso = new Date(ms).toISOString();
    assert(parseTimestamp(iso) === ns, 'parse vs Date ' + iso);
    assert(formatInstant(ns) === iso.replace(/\.000Z$/, 'Z').replace(/(\.\d*?)0+Z$/, '$1Z'), 'format vs Date ' + iso);
    const off = (rng.int(2879) - 1439);
    const c = civilOf(ns, off);
    if (c.y < 0 || c.y > 9999) continue;
    const local = formatLocal(ns, off, 3);
    assert(parseTimestamp(local) === ns && BigInt(Date.parse(local)) * 1_000_000n === ns, 'local round trip ' + local);
    const extra = BigInt(rng.int(1_000_000));
    assert(parseTimestamp(formatLocal(ns + extra, off, 9)) === ns + extra, 'ns round trip');
  }
  // A-6 formatting examples.
  assert(secondsExact(60n * NS_PER_S) === '60' && secondsExact(60_500_000_000n) === '60.5' && secondsExact(1n) === '0.000000001', 'A-6 exact');
  assert(meanSeconds3(4020n * NS_PER_S, 4) === '1005.000' && meanSeconds3(1_000_000n, 1) === '0.001' && meanSeconds3(61n * NS_PER_S, 3) === '20.333', 'A-6 mean');
  assert(meanSeconds3(500_000n, 1) === '0.001' && meanSeconds3(499_999n, 1) === '0.000' && meanSeconds3(3_001_000_000n, 2) === '1.501', 'A-6 half up');

  // the pre-check and report examples, member for member.
  const annexLog = [
    { challenge_id: 'c-2', issued_at: '2026-11-29T10:00:00Z', expires_at: '2026-11-29T10:01:40Z', used_at: '2026-11-29T10:00:50Z', rail: 'usdc' },
    { challenge_id: 'c-5', issued_at: '2026-11-29T11:00:00Z', expires_at: '2026-11-29T10:00:00Z', rail: 'card' },
    { challenge_id: 'c-1', issued_at: '2026-11-29T11:00:00Z', expires_at: '2026-11-29T11:01:00Z', used_at: '2026-11-29T11:00:30Z', rail: 'card' },
    { challenge_id: 'c-3', issued_at: '2026-11-29T09:00:00Z', expires_at: '2026-11-29T09:04:20Z', used_at: null, rail: 'usdc' },
    { challenge_id: 'c-4', issued_at: '2026-11-29T11:30:00Z', expires_at: '2026-11-29T12:30:00Z' },
  ];
  const v = validate({ log: annexLog, as_of: '2026-11-29T12:00:00Z' });
  const blocks = [...annexText.matchAll(/```json\n([\s\S]*?)\n```/g)].map((m) => m[1]);
  assert(blocks.length === 2, 'ANNEX A-1 has the pre-check and report blocks');
  const fillSentences = (text) => JSON.parse(text
    .replace('"<criteria disclosure_sentence>"', JSON.stringify(criteria.disclosure_sentence))
    .replace('"<criteria honesty_line>"', JSON.stringify(criteria.honesty_line))
    .replace('"<criteria retention>"', JSON.stringify(criteria.retention))
    .replace('"<criteria reasons_line>"', JSON.stringify(criteria.reasons_line)));
  assert(deepEqual(precheck(v), fillSentences(blocks[0])), 'ANNEX A-1 pre-check example');
  assert(JSON.stringify(report(v)) === JSON.stringify(fillSentences(blocks[1])), 'ANNEX A-1 report example (members and order)');

  // A-8 example: lines 0 and 3 usdc, line 1 card -> first_line 0 (two
  // lines) then first_line 1 (one line); line 2 (here rail-absent, then
  // malformed) names nothing either way. No label is printed.
  assert(annexText.replace(/\s+/g, ' ').includes('lines 0 and 3 carry `"rail": "usdc"` and line 1 `"rail": "card"` prints two groups, `first_line` 0 (two lines) then `first_line` 1 (one line)'),
    'A-8 example as printed in the ANNEX');
  for (const line2 of [{ challenge_id: 'a8-2', issued_at: '2026-11-29T11:00:00Z', expires_at: '2026-11-29T11:05:00Z' }, null]) {
    const a8 = report(validate({ as_of: '2026-11-29T12:00:00Z', log: [
      { challenge_id: 'a8-0', issued_at: '2026-11-29T11:00:00Z', expires_at: '2026-11-29T11:05:00Z', rail: 'usdc' },
      { challenge_id: 'a8-1', issued_at: '2026-11-29T11:00:00Z', expires_at: '2026-11-29T11:05:00Z', rail: 'card' },
      line2,
      { challenge_id: 'a8-3', issued_at: '2026-11-29T11:00:00Z', expires_at: '2026-11-29T11:05:00Z', rail: 'usdc' },
    ] }));
    assert(deepEqual(a8.per_rail.groups.map((g) => [g.first_line, g.issued]), [[0, 2], [1, 1]]), 'A-8 example groups');
    assert(!/usdc|card/.test(JSON.stringify(a8)), 'A-8 example prints no label');
  }

  // A-4 example.
  const a4 = validate({ log: [
    { challenge_id: 'a', issued_at: '2026-11-29T11:00:00Z', expires_at: '2026-11-29T10:00:00Z' },
    { challenge_id: 'a', issued_at: '2026-11-29T11:00:00Z', expires_at: '2026-11-29T12:00:00Z' },
    { challenge_id: 'a', issued_at: '2026-11-29T11:00:00Z', expires_at: '2026-11-29T12:00:00Z' },
  ] });
  assert(deepEqual(a4.lines, { submitted: 3, valid: 1, malformed: 2 }), 'A-4 example');
  // A-3 example.
  assert(validate(JSON.parse('{"log": [], "as_of": "yesterday"}')).error.code === 'as_of_invalid', 'A-3 example');

  // A-7 example, as printed in the ANNEX (which wraps it over lines).
  const nc = { value: criteria.not_computable_token, reason: REASON_USAGE };
  const a7 = verdictLine({ issued: 3, used: nc, expired_unused: nc, pending: nc }, '2026-11-29T12:00:00Z');
  assert(annexText.replace(/\s+/g, ' ').includes('`' + a7 + '`'), 'A-7 verdict line as printed in the ANNEX');
  assert(annexText.includes('`' + REASON_USAGE + '`') && annexText.includes('`' + REASON_RAIL + '`'), 'A-1 reasons');

  // A-3 table: every code, status, message and fact list as the ANNEX prints them.
  const rows = [...annexText.matchAll(/^\| (?:—|\d+) \| `([a-z_0-9]+)` \| (\d{3}) \| `([^`]+)` \| ([^|]*)\|$/gm)];
  assert(rows.length === Object.keys(REFUSALS).length, 'ANNEX refusal table row count');
  rows.forEach((m, i) => {
    const code = m[1];
    assert(Object.keys(REFUSALS)[i] === code, 'ANNEX refusal order ' + code);
    const facts = [...m[4].matchAll(/`([a-z_]+)`/g)].map((x) => x[1]);
    assert(REFUSALS[code].status === Number(m[2]) && REFUSALS[code].message === m[3] && deepEqual(facts, REFUSALS[code].facts),
      'ANNEX refusal text ' + code);
  });
}
