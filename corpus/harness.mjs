#!/usr/bin/env node
// harness.mjs — the published corpus harness (node standard library only).
//
// For every corpus/*/corpus.json (or the files named with --corpus):
//   1. recompute the pin (SHA-256 of the RFC 8785 JCS serialization of the
//      corpus object without `sha256`); it must equal the file's `sha256` and
//      the local criteria document's corpus.sha256;
//   2. GET /{service}/criteria must return the local criteria file byte for byte;
//   3. GET /keys gives the JWKS (Ed25519 OKP keys with kid);
//   4. run every case, each request from its own loopback source address, with
//      a fresh well-formed caller on pre-checks whose body is a JSON object;
//   5. check status, signature (Ed25519 over the JCS bytes of the answer
//      without `signature`), issued_at format, placeholders, corpus pin, and
//      deep equality with the expected answer; where the expectation carries
//      the `<server clock>` placeholder, the answer's evaluation_instant must
//      be YYYY-MM-DDTHH:MM:SSZ and lie between the request's send time
//      (truncated to the second) and its receipt, and is substituted for it;
//   6. print one line per failure and finally `N passed, M failed`.
//
// Usage:
//   node corpus/harness.mjs --spawn bin/assay
//   node corpus/harness.mjs --url http://127.0.0.1:8402 [--corpus corpus/x/corpus.json ...]
// Exit status: 0 when everything passed, 1 on any failure or when the host
// cannot be reached, 2 on bad usage.

import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { createHash, createPublicKey, verify as cryptoVerify, randomBytes } from 'node:crypto';
import { readFileSync, readdirSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const CHECK_END = '<check-end UTC>';
const PIN = '<pin>';
const SERVER_CLOCK = '<server clock>';
const ISSUED_AT_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const REQUEST_TIMEOUT_MS = 60_000;
const HEALTH_TIMEOUT_MS = 30_000;

const harnessDir = path.dirname(fileURLToPath(import.meta.url));

// ---------------------------------------------------------------- arguments

function usage(msg) {
  if (msg) console.error(msg);
  console.error('usage: node corpus/harness.mjs (--spawn <assay binary> | --url <base url>) [--corpus <corpus.json>]...');
  process.exit(2);
}

const opts = { spawn: null, url: null, corpus: [] };
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => { if (i + 1 >= argv.length) usage(`${a} needs a value`); return argv[++i]; };
    if (a === '--spawn') opts.spawn = val();
    else if (a === '--url') opts.url = val();
    else if (a === '--corpus') opts.corpus.push(val());
    else if (a === '-h' || a === '--help') usage();
    else usage(`unknown argument ${a}`);
  }
  if (opts.spawn && opts.url) usage('give --spawn or --url, not both');
  if (!opts.spawn && !opts.url) opts.url = 'http://127.0.0.1:8402';
}

// ---------------------------------------------------------------- JCS (RFC 8785)

function jcs(value) {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean': return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new Error('non-finite number');
      return JSON.stringify(value); // ECMAScript number serialization
    case 'string': return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) return '[' + value.map(jcs).join(',') + ']';
      const keys = Object.keys(value).sort(); // UTF-16 code unit order
      return '{' + keys.map((k) => JSON.stringify(k) + ':' + jcs(value[k])).join(',') + '}';
    }
    default: throw new Error(`cannot canonicalize ${typeof value}`);
  }
}

const sha256Hex = (s) => createHash('sha256').update(Buffer.from(s, 'utf8')).digest('hex');
const isPlainObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);

// ---------------------------------------------------------------- base58 caller

const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
function base58(bytes) {
  const digits = [0];
  for (const byte of bytes) {
    let carry = byte;
    for (let j = 0; j < digits.length; j++) {
      carry += digits[j] << 8;
      digits[j] = carry % 58;
      carry = (carry / 58) | 0;
    }
    while (carry > 0) { digits.push(carry % 58); carry = (carry / 58) | 0; }
  }
  let out = '';
  for (let k = 0; k < bytes.length && bytes[k] === 0; k++) out += '1';
  if (digits.length === 1 && digits[0] === 0) return out;
  for (let q = digits.length - 1; q >= 0; q--) out += B58[digits[q]];
  return out;
}
const freshCaller = () => base58(randomBytes(32));

// ---------------------------------------------------------------- HTTP

let loopbackTarget = false;
// Start at a random point so successive runs against one long-running host
// do not reuse the same sequence of source addresses.
let nextSource = randomBytes(2).readUInt16BE(0) % (254 * 254);
// A new loopback source address per request: 127.0.x.y, x and y in 1..254.
function nextLoopbackSource() {
  const n = nextSource++;
  const x = 1 + (Math.floor(n / 254) % 254);
  const y = 1 + (n % 254);
  return `127.0.${x}.${y}`;
}

function httpRequest(base, method, urlPath, body, { localAddress, headers = {} } = {}) {
  return new Promise((resolve, reject) => {
    const u = new URL(urlPath, base);
    const mod = u.protocol === 'https:' ? https : http;
    const h = { ...headers };
    if (body) h['Content-Length'] = String(body.length);
    const req = mod.request({
      protocol: u.protocol,
      hostname: u.hostname === 'localhost' ? '127.0.0.1' : u.hostname.replace(/^\[|\]$/g, ''),
      port: u.port || (u.protocol === 'https:' ? 443 : 80),
      path: u.pathname + u.search,
      method,
      headers: h,
      agent: false,
      localAddress,
    }, (res) => {
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(parts) }));
      res.on('error', reject);
    });
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

// ---------------------------------------------------------------- reporting helpers

function showValue(v) {
  if (v === undefined) return '<absent>';
  if (v === null || typeof v === 'number' || typeof v === 'boolean') return JSON.stringify(v);
  if (typeof v === 'string') return v.length <= 64 && !v.includes(CHECK_END) ? JSON.stringify(v) : `<string, ${v.length} chars>`;
  if (Array.isArray(v)) return `<array, ${v.length} items>`;
  return '<object>';
}
const isShortScalar = (v) => v === null || typeof v === 'number' || typeof v === 'boolean' || (typeof v === 'string' && v.length <= 64);

// Values are printed only when the expected side is a short scalar (and the
// actual side too); otherwise only their shape. Request bodies are never printed.
function describeDiff(p, expected, actual) {
  if (isShortScalar(expected)) {
    const act = isShortScalar(actual) ? JSON.stringify(actual) : showValue(actual);
    return `${p}: expected ${JSON.stringify(expected)}, actual ${act}`;
  }
  if (typeof expected === 'string' && typeof actual === 'string') {
    let i = 0;
    while (i < expected.length && i < actual.length && expected[i] === actual[i]) i++;
    return `${p}: expected <string, ${expected.length} chars>, actual <string, ${actual.length} chars>, first difference at character ${i}`;
  }
  const shape = (v) => (v === undefined ? '<absent>' : v === null ? 'null' : Array.isArray(v) ? `<array, ${v.length} items>` : typeof v === 'string' ? `<string, ${v.length} chars>` : typeof v === 'object' ? '<object>' : `<${typeof v}>`);
  return `${p}: expected ${shape(expected)}, actual ${shape(actual)}`;
}

const keyPath = (p, k) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? `${p}.${k}` : `${p}[${JSON.stringify(k)}]`);

// First difference between expected and actual (member order ignored, array
// order kept, numbers by value, no missing and no extra members); null if equal.
function firstDiff(expected, actual, p = '$') {
  if (expected === actual) return null;
  const kind = (v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
  if (kind(expected) !== kind(actual)) return describeDiff(p, expected, actual);
  if (Array.isArray(expected)) {
    const n = Math.min(expected.length, actual.length);
    for (let i = 0; i < n; i++) {
      const d = firstDiff(expected[i], actual[i], `${p}[${i}]`);
      if (d) return d;
    }
    if (expected.length !== actual.length) return `${p}: expected ${expected.length} items, actual ${actual.length} items`;
    return null;
  }
  if (typeof expected === 'object') {
    for (const k of Object.keys(expected).sort()) {
      if (!hasOwn(actual, k)) return `${keyPath(p, k)}: missing member (expected ${showValue(expected[k])})`;
      const d = firstDiff(expected[k], actual[k], keyPath(p, k));
      if (d) return d;
    }
    for (const k of Object.keys(actual).sort()) {
      if (!hasOwn(expected, k)) return `${keyPath(p, k)}: unexpected member`;
    }
    return null;
  }
  return describeDiff(p, expected, actual);
}

// Replace the placeholders of the expected answer with the observed values
// (serverClock is null when the expectation carries no <server clock>).
function substitute(v, issuedAt, pin, serverClock = null) {
  if (typeof v === 'string') {
    if (v === PIN) return pin;
    let s = v.split(CHECK_END).join(issuedAt);
    if (serverClock !== null) s = s.split(SERVER_CLOCK).join(serverClock);
    return s;
  }
  if (Array.isArray(v)) return v.map((x) => substitute(x, issuedAt, pin, serverClock));
  if (isPlainObject(v)) {
    const o = {};
    for (const k of Object.keys(v)) o[k] = substitute(v[k], issuedAt, pin, serverClock);
    return o;
  }
  return v;
}

// Whether any string (member value or array item) of v contains the placeholder.
function carries(v, placeholder) {
  if (typeof v === 'string') return v.includes(placeholder);
  if (Array.isArray(v)) return v.some((x) => carries(x, placeholder));
  if (isPlainObject(v)) return Object.keys(v).some((k) => carries(v[k], placeholder));
  return false;
}

// The host clock an answer printed as evaluation_instant: whole seconds, UTC,
// a real calendar instant, not before the request left (truncated to the
// second) and not after its answer arrived. Returns {value} or {error}.
function serverClockOf(answer, sentAtMs, receivedAtMs) {
  const v = answer.evaluation_instant;
  if (typeof v !== 'string' || !ISSUED_AT_RE.test(v)) return { error: '$.evaluation_instant: not YYYY-MM-DDTHH:MM:SSZ (the <server clock> placeholder)' };
  const ms = Date.parse(v);
  if (!Number.isFinite(ms) || new Date(ms).toISOString() !== v.replace(/Z$/, '.000Z')) return { error: '$.evaluation_instant: not a valid UTC instant' };
  const lower = Math.floor(sentAtMs / 1000) * 1000;
  if (ms < lower || ms > receivedAtMs) return { error: '$.evaluation_instant: not between the request\'s send time (truncated to the second) and its receipt' };
  return { value: v };
}

// ---------------------------------------------------------------- keys

function loadKeys(jwks) {
  const keys = new Map();
  if (!isPlainObject(jwks) || !Array.isArray(jwks.keys)) return keys;
  for (const k of jwks.keys) {
    if (!isPlainObject(k) || k.kty !== 'OKP' || k.crv !== 'Ed25519' || typeof k.kid !== 'string' || typeof k.x !== 'string') continue;
    try {
      keys.set(k.kid, createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: k.x }, format: 'jwk' }));
    } catch { /* unusable key: not listed */ }
  }
  return keys;
}

// ---------------------------------------------------------------- one case

async function runCase(base, c, pin, keys) {
  const req = c.request || {};
  const method = req.method || 'POST';
  let body = null;
  if (hasOwn(req, 'body_text')) {
    body = Buffer.from(req.body_text, 'utf8');
  } else if (hasOwn(req, 'body')) {
    let b = req.body;
    if (/\/precheck$/.test(req.path) && isPlainObject(b) && !hasOwn(b, 'caller')) b = { ...b, caller: freshCaller() };
    body = Buffer.from(JSON.stringify(b), 'utf8');
  }
  const headers = body !== null ? { 'Content-Type': 'application/json' } : {};
  let res;
  const sentAtMs = Date.now();
  try {
    res = await httpRequest(base, method, req.path, body, { headers, localAddress: loopbackTarget ? nextLoopbackSource() : undefined });
  } catch (e) {
    return `request failed: ${e.code || e.message}`;
  }
  const receivedAtMs = Date.now();
  const exp = c.expect || {};
  if (res.status !== exp.status) {
    let extra = '';
    try {
      const a = JSON.parse(res.body.toString('utf8'));
      if (a && a.error && typeof a.error.code === 'string' && /^[a-z0-9_]{1,64}$/.test(a.error.code)) extra = ` (error.code ${a.error.code})`;
    } catch { /* not JSON */ }
    return `status: expected ${exp.status}, actual ${res.status}${extra}`;
  }
  if (hasOwn(exp, 'body_text')) {
    const text = res.body.toString('utf8');
    if (text === exp.body_text) return null;
    return describeDiff('body_text', exp.body_text, text);
  }
  let answer;
  try {
    answer = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(res.body));
  } catch {
    return 'answer: not a JSON text';
  }
  if (!isPlainObject(answer)) return 'answer: not a JSON object';

  // Signature.
  const sig = answer.signature;
  if (!isPlainObject(sig)) return '$.signature: missing or not an object';
  if (sig.alg !== 'Ed25519') return describeDiff('$.signature.alg', 'Ed25519', sig.alg);
  if (typeof sig.key_id !== 'string' || !keys.has(sig.key_id)) return '$.signature.key_id: not a key listed in GET /keys';
  if (typeof sig.value !== 'string' || !/^[A-Za-z0-9_-]+$/.test(sig.value)) return '$.signature.value: not base64url without padding';
  const sigBytes = Buffer.from(sig.value, 'base64url');
  if (sigBytes.length !== 64 || sigBytes.toString('base64url') !== sig.value) return '$.signature.value: not a 64-byte base64url (unpadded) value';
  const { signature: _sig, ...unsigned } = answer;
  let signed;
  try { signed = Buffer.from(jcs(unsigned), 'utf8'); } catch (e) { return `answer: cannot canonicalize (${e.message})`; }
  if (!cryptoVerify(null, signed, keys.get(sig.key_id), sigBytes)) return '$.signature: does not verify over the JCS bytes of the answer';

  // The host's build member names its plugin binaries by digest: signed,
  // but the host's, not the criteria's measurement, so no case expects it.
  delete unsigned.build;

  // issued_at and the pin.
  const issuedAt = answer.issued_at;
  if (typeof issuedAt !== 'string' || !ISSUED_AT_RE.test(issuedAt)) return '$.issued_at: not YYYY-MM-DDTHH:MM:SSZ';
  if (!isPlainObject(answer.corpus) || answer.corpus.sha256 !== pin) return '$.corpus.sha256: not the corpus pin';

  // A pre-check answer's free_tier is the host's count of the caller's free
  // allowance, not a measurement (no corpus expects it): its form is
  // checked, then it is left out of the comparison.
  if (hasOwn(unsigned, 'free_tier') && String(req.path).endsWith('/precheck')) {
    const err = freeTierError(unsigned.free_tier, issuedAt);
    if (err) return err;
    delete unsigned.free_tier;
  }
  // sign_in is the host's sign-in-with-x challenge for the caller's next
  // pre-check: the host's, not a measurement
  if (hasOwn(unsigned, 'sign_in') && String(req.path).endsWith('/precheck')) {
    const si = unsigned.sign_in;
    if (!isPlainObject(si) || !isPlainObject(si.info) || !Array.isArray(si.supportedChains) || si.supportedChains.length === 0) {
      return '$.sign_in: not a sign-in-with-x challenge (info, supportedChains)';
    }
    delete unsigned.sign_in;
  }

  // Deep equality with the placeholders substituted.
  if (!hasOwn(exp, 'answer')) return 'corpus case has neither expect.answer nor expect.body_text';
  let serverClock = null;
  if (carries(exp.answer, SERVER_CLOCK)) {
    const sc = serverClockOf(answer, sentAtMs, receivedAtMs);
    if (sc.error) return sc.error;
    serverClock = sc.value;
  }
  return firstDiff(substitute(exp.answer, issuedAt, pin, serverClock), unsigned);
}

// freeTierError checks a free_tier member: per_day >= 1, remaining in
// 0..per_day, min_interval_ms >= 0 (integers), resets_at the 00:00:00Z
// instant after issued_at (a minute's leeway across midnight).
function freeTierError(ft, issuedAt) {
  // counted ("wallet" or "address": whose allowance this is) comes from
  // hosts that prove callers' wallets with sign-in-with-x
  const keys = isPlainObject(ft) ? Object.keys(ft).filter((k) => k !== 'counted').sort().join(',') : '';
  if (keys !== 'min_interval_ms,per_day,remaining,resets_at') return '$.free_tier: not an object of per_day, remaining, resets_at, min_interval_ms and (optional) counted';
  if (hasOwn(ft, 'counted') && ft.counted !== 'wallet' && ft.counted !== 'address') return '$.free_tier.counted: not "wallet" or "address"';
  const int = (v) => Number.isSafeInteger(v);
  if (!int(ft.per_day) || !int(ft.remaining) || !int(ft.min_interval_ms) || ft.per_day < 1 || ft.remaining < 0 || ft.remaining > ft.per_day || ft.min_interval_ms < 0) {
    return '$.free_tier: per_day, remaining or min_interval_ms out of range';
  }
  const at = Date.parse(issuedAt);
  const resets = typeof ft.resets_at === 'string' && /^\d{4}-\d{2}-\d{2}T00:00:00Z$/.test(ft.resets_at) ? Date.parse(ft.resets_at) : NaN;
  if (!(resets >= at - 60_000 && resets - at <= 86_400_000)) return '$.free_tier.resets_at: not the 00:00 UTC after issued_at';
  return null;
}

// ---------------------------------------------------------------- corpus files

function corpusFiles() {
  if (opts.corpus.length) return opts.corpus.map((f) => path.resolve(f));
  const out = [];
  for (const d of readdirSync(harnessDir).sort()) {
    const f = path.join(harnessDir, d, 'corpus.json');
    if (statSync(path.join(harnessDir, d)).isDirectory() && existsSync(f)) out.push(f);
  }
  return out;
}

function loadCorpus(file) {
  const corpus = JSON.parse(readFileSync(file, 'utf8'));
  const name = path.basename(path.dirname(file)); // corpus/<criteria-name>/corpus.json
  const criteriaPath = path.resolve(path.dirname(file), '..', '..', 'criteria', name, 'criteria.json');
  const { sha256: declared, ...rest } = corpus;
  const pin = sha256Hex(jcs(rest));
  return { file, name, corpus, pin, declared, criteriaPath };
}

// ---------------------------------------------------------------- spawn mode

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

async function startHost(binary) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'assay-harness-'));
  const port = await freePort();
  const child = spawn(binary, ['serve', '--listen', `127.0.0.1:${port}`, '--data-dir', dataDir, '--payments', 'off'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  const keep = (d) => { tail = (tail + d.toString('utf8')).slice(-8000); };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exited = null;
  const exitPromise = new Promise((resolve) => child.on('exit', (code, signal) => { exited = { code, signal }; resolve(exited); }));
  child.on('error', (e) => { exited = { error: e.message }; });
  const host = {
    base: `http://127.0.0.1:${port}`,
    async stop() {
      if (!exited) {
        child.kill('SIGTERM');
        const t = setTimeout(() => { if (!exited) child.kill('SIGKILL'); }, 10_000);
        await exitPromise;
        clearTimeout(t);
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
    tail: () => tail,
    exitedEarly: () => exited,
  };
  cleanup = () => host.stop();
  // the host listens at once and proves each family before it serves it:
  // the cases go once its start is over (/readyz names nothing starting),
  // whatever the outcome (a family it did not serve fails its cases here)
  const deadline = Date.now() + HEALTH_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (exited) break;
    try {
      const r = await httpRequest(host.base, 'GET', '/readyz', null);
      const ready = JSON.parse(r.body.toString('utf8'));
      if (r.status === 200 || !(ready.starting && ready.starting.length)) return host;
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  const why = exited ? `exited (${JSON.stringify(exited)})` : `its start not over (/readyz) within ${HEALTH_TIMEOUT_MS / 1000} s`;
  await host.stop();
  throw new Error(`host ${why}\n--- host output (tail) ---\n${tail}`);
}

let cleanup = null;
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, async () => { if (cleanup) await cleanup(); process.exit(130); });
}

// ---------------------------------------------------------------- main

async function main() {
  const corpora = corpusFiles().map(loadCorpus);
  const totalCases = corpora.reduce((n, c) => n + (Array.isArray(c.corpus.cases) ? c.corpus.cases.length : 0), 0);
  let passed = 0, failed = 0;
  const fail = (label, msg) => { failed++; console.log(`FAIL ${label}: ${msg}`); };

  let host = null;
  let base = opts.url;
  if (opts.spawn) {
    try {
      host = await startHost(opts.spawn);
    } catch (e) {
      console.log(`host did not start: ${e.message}`);
      console.log(`0 passed, ${totalCases} failed`);
      return 1;
    }
    base = host.base;
  }
  try {
    const u = new URL(base);
    loopbackTarget = u.hostname === 'localhost' || /^127\./.test(u.hostname);
    if (!loopbackTarget) console.log(`note: ${u.hostname} is not a loopback address; requests use the default source address`);

    // GET /keys
    let keys = new Map();
    try {
      const r = await httpRequest(base, 'GET', '/keys', null);
      if (r.status !== 200) fail('keys', `GET /keys answered ${r.status}`);
      else {
        try { keys = loadKeys(JSON.parse(r.body.toString('utf8'))); } catch { fail('keys', 'GET /keys is not JSON'); }
        if (!keys.size) fail('keys', 'GET /keys lists no Ed25519 OKP key with a kid');
      }
    } catch (e) {
      console.log(`host unreachable at ${base}: ${e.code || e.message}`);
      console.log(`0 passed, ${totalCases} failed`);
      return 1;
    }

    for (const c of corpora) {
      const service = c.corpus.service;
      // 1. The pin.
      if (c.declared !== c.pin) fail(`${c.name}/pin`, 'the corpus file\'s sha256 is not the pin of its contents');
      let localCriteria = null;
      try {
        localCriteria = readFileSync(c.criteriaPath);
        const doc = JSON.parse(localCriteria.toString('utf8'));
        if (!doc.corpus || doc.corpus.sha256 !== c.pin) fail(`${c.name}/pin`, 'the local criteria document\'s corpus.sha256 is not the corpus pin');
        if (!doc.corpus || doc.corpus.id !== c.corpus.id) fail(`${c.name}/pin`, 'the local criteria document\'s corpus.id is not the corpus id');
      } catch (e) {
        fail(`${c.name}/pin`, `cannot read the local criteria document ${path.relative(process.cwd(), c.criteriaPath)} (${e.code || e.message})`);
      }
      // 2. The served criteria, byte for byte.
      try {
        const r = await httpRequest(base, 'GET', `/${service}/criteria`, null);
        if (r.status !== 200) fail(`${c.name}/criteria`, `GET /${service}/criteria answered ${r.status}`);
        else if (localCriteria && !r.body.equals(localCriteria)) fail(`${c.name}/criteria`, `GET /${service}/criteria differs from the local criteria file (${r.body.length} vs ${localCriteria.length} bytes)`);
      } catch (e) {
        fail(`${c.name}/criteria`, `GET /${service}/criteria failed: ${e.code || e.message}`);
      }
      // 4-5. The cases.
      for (const k of c.corpus.cases || []) {
        let diff;
        const began = process.hrtime.bigint();
        try { diff = await runCase(base, k, c.pin, keys); } catch (e) { diff = `harness error: ${e.message}`; }
        // the time tells a hang (a deadline) from a wrong answer
        const ms = Number((process.hrtime.bigint() - began) / 1_000_000n);
        if (diff) fail(`${c.name}/${k.name}`, `${diff} (after ${ms} ms)`);
        else passed++;
      }
    }
  } finally {
    if (host) {
      if (host.exitedEarly()) fail('host', `the spawned host exited during the run (${JSON.stringify(host.exitedEarly())})\n--- host output (tail) ---\n${host.tail()}`);
      // the host's log holds no submitted content (its custody rule), so a
      // failed run prints it: CI keeps nothing else to diagnose from
      else if (failed > 0) console.log(`--- host output (tail) ---\n${host.tail()}`);
      await host.stop();
    }
    cleanup = null;
  }
  console.log(`${passed} passed, ${failed} failed`);
  return failed > 0 ? 1 : 0;
}

main().then((code) => process.exit(code), (e) => {
  console.log(`harness error: ${e.stack || e.message}`);
  console.log('0 passed, 1 failed');
  process.exit(1);
});
