// context-composition/v1 corpus cases and their expected answers — PART 1.
//
// Written from criteria/context-composition/criteria.json, the family's
// ANNEX.md (C-1 to C-11), docs/context-audit-formats.md (facts about the real
// Letta files) and the three public Letta fixtures alone. This module
// implements on its own: the envelope rules and their order (ANNEX C-2), the
// three adapters (C-8), entries = blocks and the entry caps, EM-1 (C-3),
// axis C (C-4, C-5), axis P as far as the pre-check needs it (C-9), and the
// pre-check answer (C-6, C-10). It never calls the Go engine.
//
// Part 1 emits no case whose expected answer is a 200 report on the paid
// route: every /context-audit/audit case is a refusal (400) or a
// could-not-measure answer (422). A case that would need a rule neither the
// criteria nor the ANNEX decide throws `Undecided` here instead of guessing.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  jcs, sha256Hex, utf8Length, makeRng, base58, b64encode, b64decodeStrict, assert, deepEqual, commonMembers } from './lib.mjs';

export const criteriaName = 'context-composition';

const CHECK_END = '<check-end UTC>';
const PIN = '<pin>';
// A well-formed caller the generator assumes when it sizes a pre-check body
// sent as a JSON object (the harness injects a fresh base58 address).
const SIZING_CALLER = '1'.repeat(44);

const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
const isPlainObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const nonEmptyString = (v) => typeof v === 'string' && v.length > 0;

class Undecided extends Error {}
function undecided(what) { throw new Undecided('rule not decided by the criteria or the ANNEX: ' + what); }

// ANNEX C-2, in rule order: code -> status and static message. R-6 is the
// host's (message not published here), so no case uses it.
const RULES = [
  ['body_bytes_cap', 413, 'request body exceeds the published cap'],
  ['malformed_body', 400, 'request body is not a JSON object'],
  ['envelope_version_not_supported', 400, 'envelope_version is not context-composition-envelope/1'],
  ['format_not_accepted', 400, 'declared_format_id is not an accepted format'],
  ['record_required', 400, 'record is missing or ambiguous'],
  ['stated_counts_invalid', 400, 'harness_stated_counts is not an object or is over its cap'],
  ['record_does_not_parse_as_declared_format', 400, 'the record does not parse as the declared format'],
  ['caller_invalid', 400, null],
  ['too_many_entries', 422, 'the record has more entries than the published cap'],
  ['entry_too_large', 422, 'an entry\'s adapted text exceeds the published cap'],
  ['zero_entries', 422, 'the record has no entries'],
  ['nothing_assessable', 422, 'no entry carries a textual payload'],
];
const RULE = Object.fromEntries(RULES.map(([code, status, message]) => [code, { status, message }]));

const KNOWN_MEMBERS = new Set([
  'envelope_version', 'declared_format_id', 'declared_format_version', 'record',
  'harness_stated_counts', 'criteria_ack', 'caller',
]);

// ============================================================== strict JSON with raw spans
//
// RFC 8259 parser that keeps each value's [start, end) span in the source
// text: the stated-counts cap is measured on the member's raw text (C-2) and
// the Letta json_schema text keeps every token as submitted (C-8).

class JsonError extends Error {}

function parseJson(text) {
  let i = 0;
  const n = text.length;
  const fail = () => { throw new JsonError('invalid JSON'); };
  const ws = () => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++; else break;
    }
  };
  const NUM = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
  function str() {
    const start = i;
    i++; // opening quote
    let out = '';
    let seg = i;
    for (;;) {
      if (i >= n) fail();
      const c = text.charCodeAt(i);
      if (c === 0x22) { out += text.slice(seg, i); i++; return { t: 'string', v: out, start, end: i }; }
      if (c < 0x20) fail();
      if (c === 0x5c) {
        out += text.slice(seg, i);
        const e = text[i + 1];
        if (e === 'u') {
          const h = text.slice(i + 2, i + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(h)) fail();
          out += String.fromCharCode(parseInt(h, 16));
          i += 6;
        } else {
          const map = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
          if (!hasOwn(map, e)) fail();
          out += map[e];
          i += 2;
        }
        seg = i;
        continue;
      }
      i++;
    }
  }
  function value() {
    ws();
    if (i >= n) fail();
    const start = i;
    const c = text[i];
    if (c === '{') {
      i++;
      const m = new Map();
      ws();
      if (text[i] === '}') { i++; return { t: 'object', m, start, end: i }; }
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        const k = str().v;
        ws();
        if (text[i] !== ':') fail();
        i++;
        const v = value();
        m.set(k, v);
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') { i++; return { t: 'object', m, start, end: i }; }
        fail();
      }
    }
    if (c === '[') {
      i++;
      const a = [];
      ws();
      if (text[i] === ']') { i++; return { t: 'array', a, start, end: i }; }
      for (;;) {
        a.push(value());
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') { i++; return { t: 'array', a, start, end: i }; }
        fail();
      }
    }
    if (c === '"') return str();
    for (const [lit, v] of [['true', true], ['false', false], ['null', null]]) {
      if (text.startsWith(lit, i)) { i += lit.length; return { t: 'lit', v, start, end: i }; }
    }
    NUM.lastIndex = i;
    const mm = NUM.exec(text);
    if (!mm || mm[0].length === 0) fail();
    i += mm[0].length;
    return { t: 'number', v: Number(mm[0]), raw: mm[0], start, end: i };
  }
  const root = value();
  ws();
  if (i !== n) fail();
  return root;
}

function plain(node) {
  switch (node.t) {
    case 'object': {
      const o = {};
      for (const [k, v] of node.m) {
        if (!k.isWellFormed()) undecided('lone surrogate in a member name');
        Object.defineProperty(o, k, { value: plain(v), enumerable: true, writable: true, configurable: true });
      }
      return o;
    }
    case 'array': return node.a.map(plain);
    case 'string':
      if (!node.v.isWellFormed()) undecided('lone surrogate in a string');
      return node.v;
    default: return node.v;
  }
}

// Remove insignificant whitespace from a JSON text, every token unchanged (C-8).
function compactJsonText(raw) {
  let out = '';
  let inStr = false;
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i];
    if (inStr) {
      out += ch;
      if (ch === '\\') { out += raw[i + 1]; i++; } else if (ch === '"') inStr = false;
    } else if (ch === '"') {
      inStr = true;
      out += ch;
    } else if (ch !== ' ' && ch !== '\t' && ch !== '\n' && ch !== '\r') {
      out += ch;
    }
  }
  return out;
}

function tryParse(text) {
  try { return parseJson(text); } catch (e) { if (e instanceof JsonError) return null; throw e; }
}

// ============================================================== EM-1 (C-3)

const codePoints = (s) => { let k = 0; for (const _ of s) k++; return k; }; // eslint-disable-line no-unused-vars -- counts code points, not UTF-16 units
const nfcC = (text) => codePoints(text.normalize('NFC'));
const em1 = (C) => (C === 0 ? 0 : Math.ceil(C / 4));
const est = (n) => `est:~${n}`;

// 100 × part / T, rounded half up to 2 decimals, exact integer arithmetic.
function shareText(part, T) {
  if (T === 0) return { value: 'NOT-ASSESSABLE', reason: 'zero denominator' };
  const q = (20000n * BigInt(part) + BigInt(T)) / (2n * BigInt(T));
  const s = q.toString().padStart(3, '0');
  return `est:~${s.slice(0, -2)}.${s.slice(-2)}%`;
}

// ============================================================== axis C (C-4, C-5)

const WS4 = new Set([' ', '\t', '\n', '\r']);
const trim4 = (s) => {
  let a = 0, b = s.length;
  while (a < b && WS4.has(s[a])) a++;
  while (b > a && WS4.has(s[b - 1])) b--;
  return s.slice(a, b);
};
const splitLines = (s) => s.split(/\r\n|\r|\n/);
const nonEmptyLine = (l) => [...l].some((ch) => !WS4.has(ch));

const isStdOnly = (c) => c === '+' || c === '/';
const isUrlOnly = (c) => c === '-' || c === '_';
const isAlnum = (c) => /^[A-Za-z0-9]$/.test(c);

// Base64 segments of C-5 over the (NFC) text: [{start, text, alphabet, qualifies}].
function base64Segments(t) {
  const segs = [];
  let i = 0;
  while (i < t.length) {
    const c = t[i];
    if (!(isAlnum(c) || isStdOnly(c) || isUrlOnly(c))) { i++; continue; }
    const start = i;
    let kind = null;
    while (i < t.length) {
      const d = t[i];
      if (isAlnum(d)) { i++; continue; }
      if (isStdOnly(d)) { if (kind === 'url') break; kind = 'std'; i++; continue; }
      if (isUrlOnly(d)) { if (kind === 'std') break; kind = 'url'; i++; continue; }
      break;
    }
    let pad = 0;
    while (pad < 2 && t[i] === '=') { i++; pad++; }
    const text = t.slice(start, i);
    const alphabet = kind === 'url' ? 'url-safe' : 'standard';
    let qualifies = false;
    if (text.length >= 40 && text.length % 4 === 0) {
      const std = alphabet === 'url-safe' ? text.replace(/-/g, '+').replace(/_/g, '/') : text;
      const dec = b64decodeStrict(std);
      qualifies = dec !== null && dec.length >= 30;
    }
    segs.push({ start, text, alphabet, qualifies });
  }
  return segs;
}

const LOG_LINE = /^\[?[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}/;

function rawExportTest(t, C) {
  const lines = splitLines(t).filter(nonEmptyLine);
  if (lines.length > 0) {
    const first = trim4(lines[0]);
    if (first.startsWith('BEGIN EXPORT') || first.startsWith('BEGIN RAW') || first.startsWith('BEGIN LOG')) return true;
    const matching = lines.filter((l) => LOG_LINE.test(l)).length;
    if (5 * matching >= 4 * lines.length) return true;
  }
  const node = tryParse(trim4(t));
  if (node && C >= 200) {
    if (node.t === 'object' && node.m.size >= 10) return true;
    if (node.t === 'array' && node.a.length >= 10) return true;
  }
  return false;
}

function classifyC(text) {
  if (text === null) return 'C-UNK';
  const t = text.normalize('NFC');
  const C = codePoints(t);
  if (C === 0) return 'C-EMPTY';
  const blobChars = base64Segments(t).filter((s) => s.qualifies).reduce((k, s) => k + s.text.length, 0);
  if (10 * blobChars >= 9 * C) return 'C-BLOB';
  if (rawExportTest(t, C)) return 'C-RAW';
  const node = tryParse(trim4(t));
  if (node && (node.t === 'object' || node.t === 'array')) return 'C-STRUCT';
  const tr = trim4(t);
  const tl = splitLines(tr);
  // A fenced block: first line ``` plus an optional info string, last line exactly ```.
  if (tl.length >= 2 && /^```[^`]*$/.test(tl[0]) && tl[tl.length - 1] === '```') return 'C-CODE';
  const ne = splitLines(t).filter(nonEmptyLine);
  if (ne.length > 0 && 2 * ne.filter((l) => l.startsWith('    ') || l.startsWith('\t')).length >= ne.length) return 'C-CODE';
  return 'C-TEXT';
}

// The four content tests of C-4 evaluated independently (M01's axis-C
// conflict count needs every one that holds, not only the first). The text
// is the block's text; every test runs on its NFC form (C-5).
function cTests(text) {
  const t = text.normalize('NFC');
  const C = codePoints(t);
  const segs = base64Segments(t).filter((s) => s.qualifies);
  const blobChars = segs.reduce((k, s) => k + s.text.length, 0);
  const tr = trim4(t);
  const node = tryParse(tr);
  const tl = splitLines(tr);
  const fenced = tl.length >= 2 && /^```[^`]*$/.test(tl[0]) && tl[tl.length - 1] === '```';
  const ne = splitLines(t).filter(nonEmptyLine);
  const indented = ne.length > 0 && 2 * ne.filter((l) => l.startsWith('    ') || l.startsWith('\t')).length >= ne.length;
  return {
    C, segs,
    blob: C > 0 && 10 * blobChars >= 9 * C,
    raw: rawExportTest(t, C),
    struct: node !== null && (node.t === 'object' || node.t === 'array'),
    code: fenced || indented,
  };
}

// ============================================================== M08 / M09 normalisation (C-12)

// Unicode White_Space, as C-12 lists it (not JavaScript's \s, which has
// U+FEFF and lacks U+0085).
const WHITE_SPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680,
  0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a,
  0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);
const isWS = (ch) => WHITE_SPACE.has(ch.codePointAt(0));

// N(s): NFC, CRLF/CR to LF, trim, internal whitespace runs to one space, case kept.
function normN(text) {
  const t = text.normalize('NFC').replace(/\r\n|\r/g, '\n');
  let out = '';
  let gap = false;
  for (const ch of t) {
    if (isWS(ch)) { gap = out.length > 0; continue; }
    if (gap) out += ' ';
    gap = false;
    out += ch;
  }
  return out;
}

// Per code point simple lowercase mapping (Go's unicode.ToLower). JavaScript's
// toLowerCase applied to one code point at a time agrees except on U+0130,
// whose full mapping is two code points (C-12); applying it to a whole string
// would also bring in the context-dependent final sigma, which a per-code-point
// mapping never applies.
function lowerSimple(s) {
  let out = '';
  for (const ch of s) {
    if (ch === '\u0130') { out += 'i'; continue; }
    const l = ch.toLowerCase();
    assert([...l].length === 1, 'simple lowercase is one code point for ' + ch.codePointAt(0).toString(16));
    out += l;
  }
  return out;
}

const STRIP = new Set([...'.,;:!?()[]{}', '"', "'", '\u2018', '\u2019', '\u201c', '\u201d', '`']);
function m09Tokens(n) {
  const toks = [];
  for (const w of lowerSimple(n).split(' ')) {
    const cps = [...w];
    let a = 0, b = cps.length;
    while (a < b && STRIP.has(cps[a])) a++;
    while (b > a && STRIP.has(cps[b - 1])) b--;
    if (b > a) toks.push(cps.slice(a, b).join(''));
  }
  return toks;
}
function shingles(toks) {
  const s = new Set();
  for (let i = 0; i + 3 <= toks.length; i++) s.add(toks[i] + ' ' + toks[i + 1] + ' ' + toks[i + 2]);
  return s;
}

// ============================================================== stated counts (C-8, C-10, C-12, C-13)

const INT64_MIN = -(2n ** 63n), INT64_MAX = 2n ** 63n - 1n;
const MAX_STATED = 999999999999999n;
// A harness_stated_counts figure is valid when its JSON number literal is a
// non-negative integer without sign, fraction or exponent, at most 15 digits.
const validHarnessFigure = (node) => node.t === 'number' && /^(0|[1-9][0-9]{0,14})$/.test(node.raw);
// A generic stated_tokens / stated_total is carried when it is a JSON integer
// (no fraction, no exponent) within int64; null when it is not (R-5).
function carriedInteger(node) {
  if (node.t !== 'number' || !/^-?(0|[1-9][0-9]*)$/.test(node.raw)) return null;
  const v = BigInt(node.raw);
  if (v < INT64_MIN || v > INT64_MAX) return null;
  if (node.raw === '-0') undecided('a generic stated integer written -0');
  return { value: v, valid: v >= 0n && v <= MAX_STATED };
}

// ============================================================== adapters (C-8)
//
// SessionRecord: {level, messages: [{role_raw, schema, blocks: [block]}]};
// block: {role_raw, kind_raw, name, has_args, source, text (string | null =
// non-serialisable), stated_tokens, schema, retr}. Schema pseudo-message first.

const mkBlock = (o) => ({
  role_raw: undefined, kind_raw: undefined, name: undefined, has_args: false, source: undefined,
  text: null, stated_tokens: undefined, schema: false, retr: false, ...o,
});

// ---------------------------------------------------------------- letta-af (L2)

const PACKED_TYPES = new Set(['user_message', 'heartbeat', 'login', 'system_alert']);
const RETRIEVAL_TOOLS = new Set(['archival_memory_search', 'conversation_search']);

// Shape stage: R-4 (agents[] length) and the top-level R-5 tests. The record
// may be a JSON string holding the file: unwrapped exactly once.
function lettaShape(recordNode, bodyText) {
  let node = recordNode;
  let src = bodyText;
  let wasString = false;
  if (node.t === 'string') {
    const inner = tryParse(node.v);
    if (!inner) return { r5: true };
    node = inner;
    src = recordNode.v;
    wasString = true;
  }
  if (node.t !== 'object') return { r5: true };
  const agents = node.m.get('agents');
  const messages = node.m.get('messages');
  if (agents && agents.t === 'array') {
    if (messages && messages.t === 'array') undecided('letta record with both an agents array and a root messages array');
    if (agents.a.length !== 1) return { r4: true };
    return { shape: 'current', node, src, wasString };
  }
  if (messages && messages.t === 'array') return { shape: 'old', node, src, wasString };
  return { r5: true };
}

const RFC3339 = /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$/;
function instantNs(s) {
  const m = typeof s === 'string' ? RFC3339.exec(s) : null;
  if (!m) undecided('letta message without an RFC 3339 created_at');
  const [y, mo, d, h, mi, se] = m.slice(1, 7).map(Number);
  // days from civil (proleptic Gregorian)
  const yy = mo <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  const days = era * 146097 + doe - 719468;
  let ns = (BigInt(days) * 86400n + BigInt(h * 3600 + mi * 60 + se)) * 1000000000n;
  if (m[7]) ns += BigInt((m[7].slice(1) + '000000000').slice(0, 9));
  if (m[8] !== 'Z') {
    const sign = m[8][0] === '+' ? 1n : -1n;
    const off = BigInt(Number(m[8].slice(1, 3)) * 3600 + Number(m[8].slice(4, 6)) * 60) * 1000000000n;
    ns -= sign * off;
  }
  return ns;
}

function lettaAdapt(sh) {
  const root = plain(sh.node);
  const agentNode = sh.shape === 'current' ? sh.node.m.get('agents').a[0] : sh.node;
  if (agentNode.t !== 'object') undecided('letta agent that is not an object');
  const agent = plain(agentNode);
  if (!Array.isArray(agent.messages)) undecided('letta agent without a messages array');
  const fileMessages = agent.messages;

  // Tool definitions -> one schema pseudo-message, placed first.
  const toolsNode = sh.node.m.get('tools');
  let toolNodes = [];
  if (toolsNode !== undefined) {
    if (toolsNode.t === 'lit' && toolsNode.v === null) toolNodes = [];
    else if (toolsNode.t === 'array') toolNodes = toolsNode.a;
    else undecided('letta tools that are not an array');
  }
  let selectedTools = toolNodes;
  if (hasOwn(agent, 'tool_ids') && agent.tool_ids !== null) {
    if (!Array.isArray(agent.tool_ids)) undecided('letta tool_ids that are not an array');
    const ids = agent.tool_ids;
    selectedTools = toolNodes.filter((t) => t.t === 'object' && t.m.get('id') && ids.includes(plain(t.m.get('id'))));
    for (const id of ids) {
      if (toolNodes.filter((t) => t.t === 'object' && t.m.get('id') && plain(t.m.get('id')) === id).length !== 1) undecided('tool_ids entry matching no tool, or several');
    }
  }
  const schemaBlocks = selectedTools.map((t) => {
    if (t.t !== 'object') undecided('letta tool that is not an object');
    const js = t.m.get('json_schema');
    if (!js || js.t !== 'object') undecided('letta tool without a json_schema object');
    const nameNode = t.m.get('name');
    return mkBlock({
      kind_raw: 'tool_definition', name: nameNode ? plain(nameNode) : undefined, schema: true,
      text: compactJsonText(sh.src.slice(js.start, js.end)),
    });
  });

  // In-context selection and order.
  for (const m of fileMessages) if (!isPlainObject(m)) undecided('letta message that is not an object');
  let selected; // indices into fileMessages, in adapted order
  const hasFlags = fileMessages.some((m) => hasOwn(m, 'in_context'));
  if (sh.shape === 'current') {
    if (hasOwn(agent, 'in_context_message_ids') && agent.in_context_message_ids !== null) {
      const ids = agent.in_context_message_ids;
      if (!Array.isArray(ids)) undecided('in_context_message_ids that is not an array');
      if (new Set(ids).size !== ids.length) undecided('duplicate in_context_message_ids');
      selected = ids.map((id) => {
        const hits = fileMessages.map((m, k) => (m.id === id ? k : -1)).filter((k) => k >= 0);
        if (hits.length !== 1) undecided('in_context_message_ids entry matching no message, or several');
        return hits[0];
      });
    } else {
      if (hasFlags) undecided('current-shape in_context flags without in_context_message_ids');
      // C-8 gives the order of in_context_message_ids and of the older shape
      // only; a current-shape agent without the list has no decided order.
      if (fileMessages.length > 1) undecided('order of a current-shape agent without in_context_message_ids');
      selected = fileMessages.map((_, k) => k);
    }
  } else {
    let pool = fileMessages.map((_, k) => k);
    if (hasFlags) {
      if (!fileMessages.every((m) => typeof m.in_context === 'boolean')) undecided('in_context flags missing on some messages');
      pool = pool.filter((k) => fileMessages[k].in_context === true);
    } else if (pool.length > 1) {
      undecided('older-shape order without in-context flags');
    }
    // "The in-context system message" when several are in context is not
    // decided (the order of every later block depends on it).
    const systems = pool.filter((k) => lettaRole(fileMessages[k]) === 'system');
    if (systems.length > 1) undecided('older shape with several in-context system messages');
    const sysPos = systems[0];
    const rest = pool.filter((k) => k !== sysPos);
    const keyed = rest.map((k) => ({ k, t: instantNs(fileMessages[k].created_at) }));
    keyed.sort((a, b) => (a.t < b.t ? -1 : a.t > b.t ? 1 : a.k - b.k));
    selected = (sysPos === undefined ? [] : [sysPos]).concat(keyed.map((x) => x.k));
  }

  // Retrieval links: call id -> function name, over the whole file.
  const callName = new Map();
  for (const m of fileMessages) {
    if (typeof m.message_type === 'string') {
      // API view: a tool_call_message names its call in tool_call.tool_call_id.
      if (m.message_type === 'tool_call_message' && isPlainObject(m.tool_call) && typeof m.tool_call.tool_call_id === 'string') {
        callName.set(m.tool_call.tool_call_id, m.tool_call.name);
      }
      continue;
    }
    if (Array.isArray(m.tool_calls)) {
      for (const tc of m.tool_calls) {
        if (isPlainObject(tc) && typeof tc.id === 'string' && isPlainObject(tc.function)) callName.set(tc.id, tc.function.name);
      }
    }
  }

  const messages = [];
  if (schemaBlocks.length > 0) messages.push({ role_raw: undefined, schema: true, blocks: schemaBlocks });
  for (const k of selected) {
    const m = fileMessages[k];
    if (typeof m.message_type === 'string') {
      messages.push(lettaApiMessage(m, callName));
      continue;
    }
    if (typeof m.role !== 'string') undecided('letta message role that is not a string');
    const role = m.role;
    const blocks = [];
    const content = m.content === undefined || m.content === null ? [] : m.content;
    if (!Array.isArray(content)) undecided('letta content that is not an array');
    const textParts = [];
    for (const part of content) {
      const b = lettaPart(part, role);
      if (b.text !== null) textParts.push(b.text);
      blocks.push(b);
    }
    const calls = m.tool_calls === undefined || m.tool_calls === null ? [] : m.tool_calls;
    if (!Array.isArray(calls)) undecided('letta tool_calls that is not an array');
    for (const tc of calls) {
      if (!isPlainObject(tc) || !isPlainObject(tc.function) || typeof tc.function.arguments !== 'string') undecided('letta tool call without string arguments');
      blocks.push(mkBlock({ role_raw: role, kind_raw: 'tool_call', name: tc.function.name, has_args: true, text: tc.function.arguments }));
    }
    const returns = m.tool_returns === undefined || m.tool_returns === null ? [] : m.tool_returns;
    if (!Array.isArray(returns)) undecided('letta tool_returns that is not an array');
    for (const tr of returns) {
      if (!isPlainObject(tr) || typeof tr.func_response !== 'string') undecided('letta tool return without a string func_response');
      if (textParts.includes(tr.func_response)) continue; // counted once (C-8)
      const linked = typeof tr.tool_call_id === 'string' ? callName.get(tr.tool_call_id) : undefined;
      blocks.push(mkBlock({ role_raw: role, kind_raw: 'tool_return', text: tr.func_response, retr: RETRIEVAL_TOOLS.has(linked) }));
    }
    if (role === 'tool') {
      const linked = typeof m.name === 'string' ? m.name : (typeof m.tool_call_id === 'string' ? callName.get(m.tool_call_id) : undefined);
      for (const b of blocks) if (b.kind_raw !== 'tool_return') b.retr = RETRIEVAL_TOOLS.has(linked);
    }
    messages.push({ role_raw: role, schema: false, blocks });
  }
  return {
    level: 'L2', messages, record_was_json_string: sh.wasString,
    messages_left_out: fileMessages.length - selected.length, root,
  };
}

// The role a letta message is measured under: its message_type's (API view,
// C-8) or its stored role.
const API_ROLES = {
  system_message: 'system', user_message: 'user', assistant_message: 'assistant',
  reasoning_message: 'assistant', hidden_reasoning_message: 'assistant', tool_call_message: 'assistant',
  tool_return_message: 'tool',
};
function lettaRole(m) {
  if (typeof m.message_type === 'string') return hasOwn(API_ROLES, m.message_type) ? API_ROLES[m.message_type] : m.message_type;
  return m.role;
}

// A content[] part under the general rule: a string text is a text block whose
// kind_raw is the part's type (or the packed type); any other part is non-serialisable.
function lettaPart(part, role) {
  if (!isPlainObject(part)) undecided('letta content part that is not an object');
  if (typeof part.text !== 'string') return mkBlock({ role_raw: role, kind_raw: part.type, text: null });
  let kind = part.type;
  const pk = tryParse(part.text);
  if (pk && pk.t === 'object' && pk.m.get('type') && pk.m.get('type').t === 'string' && PACKED_TYPES.has(pk.m.get('type').v)) {
    kind = pk.m.get('type').v;
  }
  return mkBlock({ role_raw: role, kind_raw: kind, text: part.text });
}

// One message of the API view (C-8).
function lettaApiMessage(m, callName) {
  const type = m.message_type;
  const role = lettaRole(m);
  for (const k of ['tool_calls', 'tool_returns']) {
    if (Array.isArray(m[k]) && m[k].length > 0) undecided(`an API-view message that also carries ${k}`);
  }
  let blocks;
  switch (type) {
    case 'system_message':
    case 'user_message':
    case 'assistant_message':
      if (typeof m.content === 'string') {
        // A string content has no part type; kind_raw is undecided and
        // unobservable for these roles unless the text is packed.
        const pk = tryParse(m.content);
        if (pk && pk.t === 'object') undecided('packed JSON as an API-view string content');
        blocks = [mkBlock({ role_raw: role, kind_raw: undefined, text: m.content })];
      } else if (Array.isArray(m.content)) {
        blocks = m.content.map((p) => lettaPart(p, role));
      } else {
        undecided('API-view content that is neither a string nor a list of parts');
      }
      break;
    case 'reasoning_message':
      if (typeof m.reasoning !== 'string') undecided('reasoning_message without a string reasoning');
      blocks = [mkBlock({ role_raw: role, kind_raw: 'reasoning', text: m.reasoning })];
      break;
    case 'hidden_reasoning_message':
      blocks = [mkBlock({ role_raw: role, kind_raw: 'reasoning', text: null })];
      break;
    case 'tool_call_message': {
      const tc = m.tool_call;
      if (!isPlainObject(tc) || typeof tc.arguments !== 'string') undecided('tool_call_message without string tool_call.arguments');
      blocks = [mkBlock({ role_raw: role, kind_raw: 'tool_call', name: tc.name, has_args: true, text: tc.arguments })];
      break;
    }
    case 'tool_return_message': {
      if (typeof m.tool_return !== 'string') undecided('tool_return_message without a string tool_return');
      const name = typeof m.tool_call_id === 'string' ? callName.get(m.tool_call_id) : undefined;
      blocks = [mkBlock({ role_raw: role, kind_raw: 'tool_return', name, text: m.tool_return, retr: RETRIEVAL_TOOLS.has(name) })];
      break;
    }
    default:
      // "Any other type keeps the type as its role": its blocks are read by
      // the general rule, which needs content[] parts.
      if (!Array.isArray(m.content) || m.content.length === 0) undecided('an API-view message of another type without content parts');
      blocks = m.content.map((p) => lettaPart(p, role));
  }
  return { role_raw: role, schema: false, blocks };
}

// ---------------------------------------------------------------- anthropic-messages (L0)

function anthropicShape(recordNode) {
  if (recordNode.t === 'array') return { ok: true };
  if (recordNode.t === 'object' && recordNode.m.get('messages') && recordNode.m.get('messages').t === 'array') return { ok: true };
  return { r5: true };
}

function anthropicBlock(b, role) {
  if (!isPlainObject(b)) undecided('anthropic block that is not an object');
  const type = b.type;
  if (typeof type !== 'string') undecided('anthropic block without a string type');
  const blk = (o) => mkBlock({ role_raw: role, kind_raw: type, ...o });
  const jcsText = (v) => {
    try { return jcs(v); } catch { return undecided('structured member JCS cannot serialise'); }
  };
  switch (type) {
    case 'text':
      if (typeof b.text !== 'string') undecided('text block without a string text');
      return [blk({ text: b.text })];
    case 'tool_use':
    case 'server_tool_use':
      if (!hasOwn(b, 'input')) undecided('tool_use without input');
      return [blk({ text: jcsText(b.input), name: b.name, has_args: true })];
    case 'tool_result': {
      if (!hasOwn(b, 'content') || (Array.isArray(b.content) && b.content.length === 0)) return [blk({ text: null })];
      if (typeof b.content === 'string') return [blk({ text: b.content })];
      if (!Array.isArray(b.content)) undecided('tool_result content that is neither a string nor a list');
      // One block per content part, each part adapted by the same block rules.
      return b.content.flatMap((p) => {
        if (isPlainObject(p) && p.type === 'tool_result') undecided('tool_result nested in a tool_result');
        const out = anthropicBlock(p, role);
        return out;
      });
    }
    case 'thinking':
      if (typeof b.thinking !== 'string') undecided('thinking block without a string thinking');
      return [blk({ text: b.thinking })];
    case 'redacted_thinking':
    case 'image':
      return [blk({ text: null })];
    case 'document': {
      const st = isPlainObject(b.source) ? b.source.type : undefined;
      if (st === 'base64' || st === 'url') return [blk({ text: null })];
      if (st === 'text') {
        if (typeof b.source.data !== 'string') undecided('text document without string data');
        return [blk({ text: b.source.data })];
      }
      return undecided('document with a source other than base64, URL or text');
    }
    default:
      if (type === 'search_result' || (type.length > '_tool_result'.length && type.endsWith('_tool_result'))) {
        if (!hasOwn(b, 'content')) undecided(type + ' without content');
        return [blk({ text: jcsText(b.content) })];
      }
      return [blk({ text: typeof b.text === 'string' ? b.text : null })];
  }
}

function anthropicAdapt(recordValue) {
  const list = Array.isArray(recordValue) ? recordValue : recordValue.messages;
  const messages = [];
  if (!Array.isArray(recordValue) && hasOwn(recordValue, 'system')) {
    const s = recordValue.system;
    if (typeof s === 'string') {
      messages.push({ role_raw: 'system', schema: false, blocks: [mkBlock({ role_raw: 'system', kind_raw: 'text', text: s })] });
    } else if (Array.isArray(s) && s.every((p) => isPlainObject(p) && p.type === 'text' && typeof p.text === 'string')) {
      messages.push({ role_raw: 'system', schema: false, blocks: s.map((p) => mkBlock({ role_raw: 'system', kind_raw: 'text', text: p.text })) });
    } else {
      undecided('top-level system that is neither a string nor a list of text blocks');
    }
  }
  for (const m of list) {
    if (!isPlainObject(m)) undecided('anthropic message that is not an object');
    if (typeof m.role !== 'string') undecided('anthropic message without a string role');
    let blocks;
    if (typeof m.content === 'string') blocks = [mkBlock({ role_raw: m.role, kind_raw: 'text', text: m.content })];
    else if (Array.isArray(m.content)) blocks = m.content.flatMap((b) => anthropicBlock(b, m.role));
    else undecided('anthropic content that is neither a string nor a list');
    messages.push({ role_raw: m.role, schema: false, blocks });
  }
  return { level: 'L0', messages };
}

// ---------------------------------------------------------------- generic-message-list (by content)

function genericShape(recordNode) {
  if (recordNode.t === 'object' && recordNode.m.get('messages') && recordNode.m.get('messages').t === 'array') return { ok: true };
  return { r5: true };
}

function genericAdapt(rec, recNode) {
  // `text` neither a string nor null is R-5 (C-8), checked over every message
  // first; so is a stated_tokens / stated_total that is present, not null and
  // not a JSON integer within int64.
  const msgNodes = recNode.m.get('messages').a;
  const carried = [];
  for (const [k, m] of rec.messages.entries()) {
    if (!isPlainObject(m)) undecided('generic message that is not an object');
    if (!hasOwn(m, 'text')) undecided('generic message without a text member');
    if (m.text !== null && typeof m.text !== 'string') return { r5: true };
    const sn = msgNodes[k].m.get('stated_tokens');
    carried.push(undefined);
    if (sn !== undefined && !(sn.t === 'lit' && sn.v === null)) {
      const c = carriedInteger(sn);
      if (!c) return { r5: true };
      carried[k] = c;
    }
  }
  let statedTotal;
  const stn = recNode.m.get('stated_total');
  if (stn !== undefined && !(stn.t === 'lit' && stn.v === null)) {
    statedTotal = carriedInteger(stn);
    if (!statedTotal) return { r5: true };
  }
  let schemas = [];
  if (hasOwn(rec, 'tool_schemas')) {
    if (!Array.isArray(rec.tool_schemas)) undecided('tool_schemas that is not an array');
    schemas = rec.tool_schemas;
  }
  const presentNonNull = (m, k) => {
    if (!hasOwn(m, k)) return false;
    if (m[k] === null) undecided(`generic ${k} present with null`);
    return true;
  };
  let level = 'L0';
  if (rec.messages.some((m) => nonEmptyString(m.kind)) || schemas.length > 0) level = 'L2';
  else if (rec.messages.some((m) => presentNonNull(m, 'name') || presentNonNull(m, 'has_args') || presentNonNull(m, 'source'))) level = 'L1';
  const messages = [];
  if (schemas.length > 0) {
    messages.push({
      role_raw: undefined, schema: true,
      blocks: schemas.map((s) => {
        if (!isPlainObject(s) || typeof s.text !== 'string') undecided('tool_schemas entry without a string text');
        return mkBlock({ kind_raw: 'tool_definition', name: s.name, text: s.text, schema: true });
      }),
    });
  }
  for (const [k, m] of rec.messages.entries()) {
    if (typeof m.role !== 'string') undecided('generic message without a string role');
    if (hasOwn(m, 'kind') && m.kind !== null && typeof m.kind !== 'string') undecided('generic kind that is not a string');
    messages.push({
      role_raw: m.role, schema: false,
      blocks: [mkBlock({
        role_raw: m.role, kind_raw: typeof m.kind === 'string' ? m.kind : undefined, name: m.name,
        has_args: m.has_args === true, source: m.source, text: m.text, stated_tokens: carried[k],
      })],
    });
  }
  return { level, messages, stated_total: statedTotal };
}

// ============================================================== axis P (C-9)

const ROLE_CLASSES = [['system', 'P-SYS'], ['user', 'P-USER'], ['assistant', 'P-ASST']];

function classifyP(block, fmt, level) {
  const fired = [];
  const role = block.role_raw;
  const kind = block.kind_raw;
  if (level !== 'L2') {
    for (const [r, cls] of ROLE_CLASSES) if (role === r) fired.push(cls);
    const winner = fired[0] || (nonEmptyString(role) ? 'P-OTHER' : 'P-UNK');
    return { winner, fired };
  }
  if (fmt === 'letta-af') {
    if (kind === 'tool_definition') fired.push('P-TDEF');
    if (role === 'summary' || (block.text !== null && block.text.includes('have been hidden from view due to'))) fired.push('P-CMPT');
    if (kind === 'tool_call') fired.push('P-TCALL');
    if (role === 'tool' || kind === 'tool_return') fired.push('P-TRES');
    if (block.retr) fired.push('P-RETR');
    if (role === 'system' || kind === 'heartbeat' || kind === 'login' || kind === 'system_alert') fired.push('P-SYS');
  } else {
    if (block.schema || kind === 'tool_definition') fired.push('P-TDEF');
    if (kind === 'summary') fired.push('P-CMPT');
    if (kind === 'tool_call') fired.push('P-TCALL');
    if (kind === 'tool_result') fired.push('P-TRES');
    if (kind === 'retrieval') fired.push('P-RETR');
    if (role === 'system') fired.push('P-SYS');
  }
  if (role === 'user') fired.push('P-USER');
  if (role === 'assistant') fired.push('P-ASST');
  const winner = fired[0] || (nonEmptyString(role) || nonEmptyString(kind) ? 'P-OTHER' : 'P-UNK');
  return { winner, fired };
}

// ============================================================== the family

export function build({ criteria, annexText }) {
  const caps = criteria.input_contract.caps;
  const CAP = { body: caps.body_bytes, entries: caps.entries, entry: caps.entry_bytes, stated: caps.stated_counts_bytes };
  assert(CAP.body === 5242880 && CAP.entries === 10000 && CAP.entry === 1048576 && CAP.stated === 65536, 'caps differ from the criteria text');
  assert(deepEqual(criteria.ops, ['audit']), 'ops');
  const service = criteria.service;
  assert(service === 'context-audit', 'service');
  const ENVELOPE = criteria.envelope.version;
  assert(ENVELOPE === 'context-composition-envelope/1', 'envelope version');
  const ACCEPTED = criteria.accepted_formats;
  assert(deepEqual(ACCEPTED, ['letta-af', 'anthropic-messages', 'generic-message-list']), 'accepted formats');
  assert(criteria.format_levels['letta-af'] === 'L2' && criteria.format_levels['anthropic-messages'] === 'L0', 'format levels');
  const PRICE_LINE = `${criteria.price.label} ${criteria.price.basis}`;
  assert(PRICE_LINE === '$0.05 per report (one submitted session/context record)', 'price line');
  assert(annexText.includes(`"price": "${PRICE_LINE}"`), 'price line as printed in ANNEX C-6');
  const NEVER = criteria.never_assessable;
  assert(Array.isArray(NEVER) && NEVER.length === 8, 'never_assessable register');

  selfTest({ annexText, criteria });

  // ------------------------------------------------------------ answer model

  const common = (op, kind) => commonMembers(criteria, service, 'audit', op, kind);
  function refusal(op, code, facts = {}) {
    const r = RULE[code];
    assert(r && r.status !== 422 && r.message, 'refusal ' + code);
    return { status: r.status, answer: { ...common(op, 'refusal'), error: { code, message: r.message, ...facts } } };
  }

  // Validation + adaptation of one request text: a refusal, or the adapted
  // record with its could-not-measure kind (if any) and the pre-check facts.
  function evaluate(text) {
    if (utf8Length(text) > CAP.body) return { refuse: ['body_bytes_cap', { cap: CAP.body }] };
    const root = tryParse(text);
    if (!root || root.t !== 'object') return { refuse: ['malformed_body'] };
    const env = plain(root);
    assert(deepEqual(env, JSON.parse(text)), 'own parser agrees with JSON.parse');
    if (env.envelope_version !== ENVELOPE) return { refuse: ['envelope_version_not_supported'] };
    const fmt = env.declared_format_id;
    if (typeof fmt !== 'string' || !ACCEPTED.includes(fmt)) return { refuse: ['format_not_accepted', { accepted_formats: [...ACCEPTED] }] };
    if (!hasOwn(env, 'record')) return { refuse: ['record_required'] };
    const recordNode = root.m.get('record');
    if (recordNode.t === 'lit' && recordNode.v === null) undecided('record: null (missing, or a record that does not parse?)');
    const shape = fmt === 'letta-af' ? lettaShape(recordNode, text)
      : fmt === 'anthropic-messages' ? anthropicShape(recordNode) : genericShape(recordNode);
    if (shape.r4) return { refuse: ['record_required'] };
    if (hasOwn(env, 'harness_stated_counts')) {
      const hn = root.m.get('harness_stated_counts');
      if (hn.t === 'lit' && hn.v === null) undecided('harness_stated_counts: null');
      if (hn.t !== 'object' || utf8Length(text.slice(hn.start, hn.end)) > CAP.stated) {
        return { refuse: ['stated_counts_invalid', { cap: CAP.stated }] };
      }
    }
    if (shape.r5) return { refuse: ['record_does_not_parse_as_declared_format'] };
    const rec = fmt === 'letta-af' ? lettaAdapt(shape)
      : fmt === 'anthropic-messages' ? anthropicAdapt(plain(recordNode)) : genericAdapt(plain(recordNode), recordNode);
    if (rec.r5) return { refuse: ['record_does_not_parse_as_declared_format'] };
    // R-6 (caller) is the host's; cases always carry a well-formed caller.

    // Entries = blocks, schema blocks included, in adapted order.
    const blocks = rec.messages.flatMap((m) => m.blocks);
    const sizes = blocks.map((b) => {
      if (b.text === null) return { bytes: 0, C: 0, E: 0 };
      const C = nfcC(b.text);
      return { bytes: utf8Length(b.text), C, E: em1(C) };
    });
    const T = sizes.reduce((k, s) => k + s.E, 0);
    let cnm = null;
    if (blocks.length > CAP.entries) cnm = ['too_many_entries', { cap: CAP.entries, entries: blocks.length }];
    else {
      const big = sizes.findIndex((s) => s.bytes > CAP.entry);
      if (big >= 0) cnm = ['entry_too_large', { cap: CAP.entry, entry_index: big }];
      else if (blocks.length === 0) cnm = ['zero_entries', {}];
      else if (T === 0) cnm = ['nothing_assessable', {}];
    }
    // C-11's T = 0 rule agrees with "no block carries a textual payload" read
    // as axis C: every block C-EMPTY or C-UNK.
    if (blocks.length > 0 && blocks.length <= 200) {
      const allVoid = blocks.every((b) => ['C-EMPTY', 'C-UNK'].includes(classifyC(b.text)));
      assert(allVoid === (T === 0), 'T = 0 iff every block is C-EMPTY or C-UNK');
    }
    return { env, fmt, rec, blocks, sizes, T, cnm, root, recordNode, text };
  }

  // The stated counts of a submission (C-8, C-10, C-12, C-13), over the
  // non-schema messages in adapted order.
  function statedInfo(ev) {
    const { root, rec } = ev;
    const msgs = rec.messages.filter((m) => !m.schema);
    const hn = root.m.get('harness_stated_counts'); // an object when present (validated)
    let total = null; // {valid, value} of a present, non-null harness total
    let entries = []; // per_message nodes
    if (hn !== undefined) {
      const tn = hn.m.get('total');
      if (tn !== undefined && !(tn.t === 'lit' && tn.v === null)) total = { valid: validHarnessFigure(tn), value: tn.t === 'number' ? Number(tn.raw) : null };
      const pn = hn.m.get('per_message');
      if (pn !== undefined) {
        if (pn.t !== 'array') undecided('per_message that is not an array');
        entries = pn.a;
      }
    }
    const isNull = (n) => n.t === 'lit' && n.v === null;
    const inRange = entries.slice(0, msgs.length);
    const ignored = Math.max(0, entries.length - msgs.length);
    const invalidEntries = inRange.filter((n) => !isNull(n) && !validHarnessFigure(n)).length;
    const gt = rec.stated_total; // generic stated_total, carried
    // The whole-record figure: the envelope's valid total wins over a valid
    // generic stated_total (C-12, C-13).
    let wholeTotal = null;
    if (total && total.valid) wholeTotal = { value: total.value, from: 'harness' };
    else if (gt && gt.valid) {
      if (total) undecided('an invalid harness total beside a valid generic stated_total');
      wholeTotal = { value: Number(gt.value), from: 'stated_total' };
    }
    if (gt && !gt.valid) undecided('an invalid generic stated_total (is it counted in invalid_entry_count?)');
    const perMessage = msgs.map((m, i) => {
      const n = inRange[i];
      if (n !== undefined && validHarnessFigure(n)) return { covered: true, stated: Number(n.raw), from: 'per_message' };
      if (m.blocks.length > 0 && m.blocks.every((b) => b.stated_tokens && b.stated_tokens.valid)) {
        const sum = m.blocks.reduce((k, b) => k + b.stated_tokens.value, 0n);
        assert(sum <= BigInt(Number.MAX_SAFE_INTEGER), 'stated sum is a safe integer');
        return { covered: true, stated: Number(sum), from: 'stated_tokens' };
      }
      return { covered: false };
    });
    const validEntryAnywhere = entries.some(validHarnessFigure);
    const validInRange = inRange.some(validHarnessFigure);
    if (validEntryAnywhere && !validInRange && !wholeTotal && !ev.blocks.some((b) => b.stated_tokens && b.stated_tokens.valid)) {
      undecided('valid per_message entries only beyond the message count (no stated counts, or partial coverage?)');
    }
    const anyStated = wholeTotal !== null || validEntryAnywhere || ev.blocks.some((b) => b.stated_tokens && b.stated_tokens.valid);
    const allCovered = perMessage.every((x) => x.covered);
    let status = null;
    if (!anyStated) status = 'no stated counts';
    else if (!allCovered && !wholeTotal) status = 'partial coverage';
    return { msgs, total, wholeTotal, perMessage, ignored, invalidEntries, allCovered, status };
  }

  // C-10: the pre-check's NOT-ASSESSABLE list, register order.
  function notAssessable(ev) {
    const { env, fmt, rec } = ev;
    const msgs = rec.messages.filter((m) => !m.schema);
    for (const m of msgs) if (m.blocks.length === 0) undecided('adapted message with zero blocks (F-5 / F-10 coverage)');
    const out = [];
    // F-3: no non-schema message has a sized block (C-10 as amended by C-13).
    if (!msgs.some((m) => m.blocks.some((b) => b.text !== null))) out.push({ factor: 'F-3', metric: 'M06', reason: 'zero denominator' });
    const anyUser = msgs.some((m) => classifyP(m.blocks[0], fmt, rec.level).winner === 'P-USER');
    if (!anyUser) out.push({ factor: 'F-5', metric: 'M07', reason: 'no P-USER message' });
    void env;
    const st = statedInfo(ev);
    if (st.status) out.push({ factor: 'F-10', metric: 'M12', reason: st.status });
    out.push({ factor: 'F-11', metric: null, reason: 'NOT-ASSESSABLE-BY-DESIGN in v1' });
    return out;
  }

  function precheckAnswer(ev) {
    const { env, fmt, rec, blocks, sizes, T, cnm } = ev;
    let unknown = 0;
    for (const k of Object.keys(env)) if (!KNOWN_MEMBERS.has(k)) unknown++;
    for (const k of ['declared_format_version', 'criteria_ack']) if (hasOwn(env, k) && typeof env[k] !== 'string') unknown++;
    const a = {
      ...common('precheck', 'precheck'),
      declared_format: { id: fmt, accepted: true, level: rec.level, version_supplied: typeof env.declared_format_version === 'string' },
      unknown_top_level_members: unknown,
    };
    if (!cnm) {
      a.entry_count = blocks.length;
      a.total = { bytes: sizes.reduce((k, s) => k + s.bytes, 0), tokens: est(T) };
      if (rec.level === 'L2') {
        const tres = blocks.reduce((k, b, i) => k + (classifyP(b, fmt, rec.level).winner === 'P-TRES' ? sizes[i].E : 0), 0);
        a.headline = { tool_output_share: shareText(tres, T) };
      } else {
        a.headline = { tool_output_share: { value: 'NOT-ASSESSABLE', reason: 'not identifiable at this level' } };
      }
    }
    a.not_assessable = notAssessable(ev);
    a.never_assessable = [...NEVER];
    a.could_not_measure = cnm ? { kind: cnm[0], ...cnm[1] } : null;
    a.price = PRICE_LINE;
    return a;
  }

  function expectedFor(path, text) {
    const prefix = `/${service}/`;
    const op = path.startsWith(prefix) ? path.slice(prefix.length) : null;
    if (op !== 'precheck' && op !== 'audit') return { status: 404, body_text: 'NOT COVERED' };
    const ev = evaluate(text);
    if (ev.refuse) return { ...refusal(op, ...ev.refuse), ev };
    if (op === 'precheck') return { status: 200, answer: precheckAnswer(ev), ev };
    if (!ev.cnm) throw new Error('part 1 emits no 200 report on the paid route');
    const [code, facts] = ev.cnm;
    return {
      status: 422,
      answer: { ...common(op, 'could_not_measure'), could_not_measure: { kind: code, message: RULE[code].message, ...facts } },
      ev,
    };
  }

  // ------------------------------------------------------------ case builders

  const cases = [];
  const names = new Set();
  const callerFor = (name) => base58(makeRng('context-composition caller ' + name).bytes(32));

  // req: {body} | {body_text}; expectCode: refusal / could-not-measure code,
  // 'precheck' or 'NOT COVERED'; check(ev, answer): extra hand-computed asserts.
  function addCase(route, name, description, req) {
    assert(/^[a-z0-9]+(-[a-z0-9]+)*$/.test(name), 'kebab-case name ' + name);
    assert(!names.has(name), 'duplicate case name ' + name);
    assert(/^[A-Z][^\n]*\.$/.test(description) && !/\. [A-Z]/.test(description), 'one-sentence description for ' + name);
    names.add(name);
    const path = route.startsWith('/') ? route : `/${service}/${route}`;
    const request = { method: 'POST', path };
    let text;
    if (hasOwn(req, 'body_text')) {
      request.body_text = req.body_text;
      text = req.body_text;
    } else {
      request.body = req.body;
      let sent = req.body;
      if (path.endsWith('/precheck') && isPlainObject(sent) && !hasOwn(sent, 'caller')) sent = { ...sent, caller: SIZING_CALLER };
      text = JSON.stringify(sent);
    }
    const exp = expectedFor(path, text);
    let got;
    if (exp.body_text !== undefined) got = exp.body_text;
    else if (exp.answer.error) got = exp.answer.error.code;
    else if (exp.answer.could_not_measure) got = exp.answer.could_not_measure.kind;
    else got = exp.answer.kind;
    assert(got === req.expectCode, `case ${name}: intended ${req.expectCode}, model gives ${got}`);
    if (path.endsWith('/audit')) assert(exp.status !== 200, `case ${name}: no 200 on the paid route in part 1`);
    if (req.check) req.check(exp.ev, exp.answer);
    const expect = { status: exp.status };
    if (exp.body_text !== undefined) expect.body_text = exp.body_text;
    else expect.answer = exp.answer;
    cases.push({ name, provenance: req.provenance || 'synthetic', description, request, expect });
  }
  const pre = (name, description, req) => addCase('precheck', name, description, req);
  const aud = (name, description, req) => addCase('audit', name, description, req);

  const env = (fmt, record, extra = {}) => ({ envelope_version: ENVELOPE, declared_format_id: fmt, record, ...extra });
  const letta = (record, extra) => env('letta-af', record, extra);
  const anth = (record, extra) => env('anthropic-messages', record, extra);
  const gen = (record, extra) => env('generic-message-list', record, extra);
  // An envelope as raw text: members are [name, raw JSON text]; a pre-check
  // gets its own well-formed caller (the harness only injects one into JSON bodies).
  const envText = (route, name, members) => {
    const all = route === 'precheck' ? [...members, ['caller', JSON.stringify(callerFor(name))]] : members;
    return '{' + all.map(([k, v]) => JSON.stringify(k) + ':' + v).join(',') + '}';
  };
  const head = (fmt) => [['envelope_version', JSON.stringify(ENVELOPE)], ['declared_format_id', JSON.stringify(fmt)]];

  const naOf = (ans) => (ans.not_assessable || []).map((x) => x.factor + (x.factor === 'F-10' ? ':' + x.reason : ''));
  const expectNA = (list) => (ev, ans) => assert(deepEqual(naOf(ans), list), 'not_assessable ' + JSON.stringify(naOf(ans)));

  // The real Letta fixtures are not embedded: they stay in shared/ (never
  // copied into the project), and the criteria's corpus is synthetic only.
  // The Go adapter tests read them in place.

  // ------------------------------------------------------------ letta-af, synthetic

  const schemaA = { name: 'lookup_order', description: 'Look up an order by id.', parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] } };
  const schemaB = { name: 'send_message', description: 'Send a message to the user.', parameters: { type: 'object', properties: { message: { type: 'string' } } } };
  const schemaC = { name: 'archival_memory_search', description: 'Search archival memory.', parameters: { type: 'object', properties: { query: { type: 'string' } } } };
  const packed = (o) => JSON.stringify(o, null, 2);
  const textPart = (text) => ({ type: 'text', text });
  const callOf = (id, name, args) => ({ id, function: { arguments: args, name }, type: 'function' });
  const cur = (agent, tools, extra = {}) => ({ agents: [{ name: 'synthetic', ...agent }], tools, metadata: {}, ...extra });
  const msg = (id, role, content, extra = {}) => ({ type: 'message', role, content, id, tool_calls: null, tool_call_id: null, tool_returns: [], ...extra });

  {
    const userText = packed({ type: 'user_message', message: 'Where is order 7?', time: '2026-01-02 10:00:00 AM UTC+0000' });
    const ret1 = packed({ status: 'OK', message: 'shipped', time: '2026-01-02 10:00:02 AM UTC+0000' });
    const ret2 = packed({ status: 'OK', message: 'Showing 1 results: order 7 shipped Tuesday', time: '2026-01-02 10:00:04 AM UTC+0000' });
    const record = cur({
      tool_ids: ['tool-a', 'tool-c'],
      in_context_message_ids: ['m-sys', 'm-user', 'm-call', 'm-ret1', 'm-call2', 'm-ret2', 'm-reply'],
    }, [
      { id: 'tool-a', name: 'lookup_order', tool_type: 'custom', json_schema: schemaA, source_code: 'def lookup_order(order_id):\n    return "shipped"\n' },
      { id: 'tool-b', name: 'send_message', tool_type: 'letta_core', json_schema: schemaB, source_code: null },
      { id: 'tool-c', name: 'archival_memory_search', tool_type: 'letta_core', json_schema: schemaC, source_code: null },
    ]);
    record.agents[0].messages = [
      msg('m-old', 'system', [textPart('You are an old prompt that is no longer in context.')]),
      msg('m-sys', 'system', [textPart('You are a support agent. Core memory: the customer is Ana.')]),
      msg('m-user', 'user', [textPart(userText), { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }]),
      msg('m-call', 'assistant', [textPart('Checking the order first.')], { tool_calls: [callOf('call-1', 'lookup_order', '{"order_id": "7"}')] }),
      msg('m-ret1', 'tool', [textPart(ret1)], { tool_call_id: 'call-1', tool_returns: [{ tool_call_id: 'call-1', status: 'success', stdout: null, stderr: null, func_response: ret1 }] }),
      msg('m-call2', 'assistant', [], { tool_calls: [callOf('call-2', 'archival_memory_search', '{"query": "order 7"}')] }),
      msg('m-ret2', 'tool', [textPart('search done')], { tool_call_id: 'call-2', tool_returns: [{ tool_call_id: 'call-2', status: 'success', stdout: null, stderr: null, func_response: ret2 }] }),
      msg('m-reply', 'assistant', [], { tool_calls: [callOf('call-3', 'send_message', '{"message": "Order 7 shipped on Tuesday."}')] }),
    ];
    pre('precheck-letta-current-shape-selection-and-tool-returns',
      'A synthetic current-shape agent file measures the in_context_message_ids selection, the tools named by tool_ids only, an image part as a non-serialisable entry, a tool return duplicated in its text once and a distinct tool return as its own entry.',
      {
        body: letta(record),
        expectCode: 'precheck',
        check: (ev, ans) => {
          assert(ev.rec.messages_left_out === 1, 'one left out');
          assert(ans.entry_count === 2 + 1 + 2 + 2 + 1 + 1 + 2 + 1, 'entries');
          expectNA(['F-10:no stated counts', 'F-11'])(ev, ans);
          const tres = ev.blocks.filter((b) => classifyP(b, 'letta-af', 'L2').winner === 'P-TRES');
          assert(tres.length === 3, 'three P-TRES blocks');
          assert(tres.filter((b) => b.retr).length === 2, 'search results recorded as P-RETR conflicts');
        },
      });
    const left = JSON.parse(JSON.stringify(record));
    pre('precheck-letta-current-shape-stated-total-only',
      'The same agent file with only a stated total and no per-message figures has F-10 assessable, since a whole-record total covers the record.',
      { body: letta(left, { harness_stated_counts: { total: 512 } }), expectCode: 'precheck', check: expectNA(['F-11']) });
    pre('precheck-letta-current-shape-per-message-short',
      'The same agent file with per_message figures for 6 of its 7 measured messages and no total lists F-10 as partial coverage.',
      { body: letta(left, { harness_stated_counts: { per_message: [900, 60, 10, 22, 8, 30] } }), expectCode: 'precheck', check: expectNA(['F-10:partial coverage', 'F-11']) });
  }
  {
    // Older shape: per-message in_context flags; a packed heartbeat under role user.
    const hb = packed({ type: 'heartbeat', reason: '[This is an automated system message hidden from the user] Function called using request_heartbeat=true, returning control', time: '2025-03-23 08:12:43 PM PDT-0700' });
    const login = packed({ type: 'login', last_login: 'Never (first login)', time: '2025-03-23 07:59:06 PM PDT-0700' });
    const om = (role, text, createdAt, inContext, extra = {}) => ({
      created_at: createdAt, group_id: null, in_context: inContext, model: null, name: null, role,
      content: [textPart(text)], tool_call_id: null, tool_calls: [], tool_returns: [], updated_at: createdAt, ...extra,
    });
    const record = {
      agent_type: 'memgpt_agent', name: 'synthetic-old', system: 'You are MemGPT.', version: '0.6.43',
      messages: [
        om('assistant', 'Bootup sequence complete.', '2025-03-24T03:00:02.000000+00:00', true,
          { tool_calls: [callOf('c-1', 'send_message', '{\n  "message": "Hello!",\n  "request_heartbeat": true\n}')] }),
        om('system', 'You are MemGPT. (stale prompt)', '2025-03-24T02:59:00.000000+00:00', false),
        om('user', login, '2025-03-24T03:00:01.000000+00:00', true),
        om('tool', packed({ status: 'OK', message: 'None', time: '2025-03-23 08:00:03 PM PDT-0700' }), '2025-03-24T03:00:03.000000+00:00', true, { name: 'send_message', tool_call_id: 'c-1' }),
        om('user', hb, '2025-03-24T03:00:04.000000+00:00', true),
        om('system', 'You are MemGPT.\n<memory_blocks>persona: curious</memory_blocks>', '2025-03-24T03:05:00.000000+00:00', true),
      ],
      tools: [{ name: 'send_message', json_schema: schemaB, source_code: null, tool_type: 'letta_core' }],
    };
    pre('precheck-letta-old-shape-packed-heartbeat-under-user',
      'A synthetic older-shape file whose only user-role messages are a packed login and a packed heartbeat has no P-USER message (both are P-SYS), so F-5 is listed.',
      {
        body: letta(record),
        expectCode: 'precheck',
        check: (ev, ans) => {
          assert(ev.rec.messages_left_out === 1 && ans.entry_count === 1 + 5 + 1, 'old synthetic entries');
          const users = ev.rec.messages.filter((m) => m.role_raw === 'user');
          assert(users.length === 2 && users.every((m) => classifyP(m.blocks[0], 'letta-af', 'L2').winner === 'P-SYS'), 'packed P-SYS');
          expectNA(['F-5', 'F-10:no stated counts', 'F-11'])(ev, ans);
        },
      });
    const withUser = JSON.parse(JSON.stringify(record));
    withUser.messages.push(om('user', packed({ type: 'user_message', message: 'hi there', time: '2025-03-23 08:01:00 PM PDT-0700' }), '2025-03-24T03:01:00.000000+00:00', true));
    pre('precheck-letta-old-shape-packed-user-message',
      'Adding one packed user_message under role user to the same file gives a P-USER message, so F-5 is no longer listed.',
      { body: letta(withUser, { harness_stated_counts: { per_message: [null, null] } }), expectCode: 'precheck', check: expectNA(['F-10:no stated counts', 'F-11']) });
    const summary = JSON.parse(JSON.stringify(record));
    summary.messages[4].content[0].text = packed({ type: 'system_alert', message: 'Note: prior messages (12 of 20 total messages) have been hidden from view due to conversation memory constraints.\nThe following is a summary of the previous 12 messages:\n Ana asked about order 7.', time: '2025-03-23 08:00:04 PM PDT-0700' });
    summary.messages.push(om('user', 'plain text from the user', '2025-03-24T03:06:00.000000+00:00', false));
    pre('precheck-letta-old-shape-summary-alert-not-a-turn',
      'A packed system_alert carrying the summary marker under role user is P-CMPT, and a plain user text outside the in-context selection is not measured, so F-5 is still listed.',
      { body: letta(summary), expectCode: 'precheck', check: expectNA(['F-5', 'F-10:no stated counts', 'F-11']) });
  }
  {
    const name = 'precheck-letta-json-schema-token-preserving';
    const rec = '{ "agents" : [ { "name": "tok", "tool_ids": ["t1"], "in_context_message_ids": ["m1"],\n'
      + '   "messages": [ {"id": "m1", "role": "user", "content": [ {"type": "text", "text": "caf\\u00e9?"} ], "tool_calls": null, "tool_returns": []} ] } ],\n'
      + '  "tools": [ { "id": "t1", "name": "convert",\n    "json_schema": {\n      "name" : "convert",\n      "description" : "Convert caf\\u00e9 prices \\/ units\\tfast.",\n'
      + '      "parameters" : { "type" : "object", "properties" : { "rate" : { "type" : "number", "default" : 1.50E+0 } }, "required" : [ ] }\n    } } ] }';
    const compacted = '{"name":"convert","description":"Convert caf\\u00e9 prices \\/ units\\tfast.","parameters":{"type":"object","properties":{"rate":{"type":"number","default":1.50E+0}},"required":[]}}';
    pre(name,
      'A json_schema submitted with whitespace, \\u escapes, an escaped solidus and the number 1.50E+0 is measured with whitespace removed and every token unchanged.',
      {
        body_text: envText('precheck', name, [...head('letta-af'), ['record', rec]]),
        expectCode: 'precheck',
        check: (ev, ans) => {
          assert(ev.blocks[0].text === compacted, 'token-preserving compaction');
          assert(ans.total.bytes === compacted.length + 5 + 1, 'bytes: schema text + "café?" (6 bytes)');
          assert(ans.total.tokens === est(Math.ceil(compacted.length / 4) + 2), 'tokens');
        },
      });
  }
  {
    const onlyTools = { messages: [], tools: [{ name: 'lookup_order', json_schema: schemaA }, { name: 'send_message', json_schema: schemaB }] };
    pre('precheck-letta-tool-definitions-only',
      'An older-shape record with tool definitions and no messages has entries but no non-schema message, so F-3 is listed with zero denominator alongside F-5, F-10 and F-11.',
      { body: letta(onlyTools), expectCode: 'precheck', check: expectNA(['F-3', 'F-5', 'F-10:no stated counts', 'F-11']) });
  }
  pre('precheck-letta-agents-empty',
    'A letta-af record whose agents array is empty is refused record_required (ambiguous: one record per call).',
    { body: letta({ agents: [], tools: [] }), expectCode: 'record_required' });
  aud('audit-letta-agents-two',
    'A letta-af record with two agents is refused record_required on the paid route before payment.',
    { body: letta({ agents: [{ name: 'a', messages: [] }, { name: 'b', messages: [] }] }), expectCode: 'record_required' });
  pre('precheck-letta-json-string-agents-two',
    'A JSON-string record is unwrapped once before the agent count is read, so a string holding two agents is refused record_required.',
    { body: letta(JSON.stringify({ agents: [{ name: 'a', messages: [] }, { name: 'b', messages: [] }] })), expectCode: 'record_required' });
  pre('precheck-letta-record-number',
    'A letta-af record that is a number is refused record_does_not_parse_as_declared_format.',
    { body: letta(42), expectCode: 'record_does_not_parse_as_declared_format' });
  aud('audit-letta-record-array',
    'A letta-af record that is a bare message array is refused record_does_not_parse_as_declared_format and never retried as another format.',
    { body: letta([{ role: 'user', content: 'hi' }]), expectCode: 'record_does_not_parse_as_declared_format' });
  pre('precheck-letta-record-no-agents-no-messages',
    'A letta-af object with neither an agents array nor a root messages array is refused record_does_not_parse_as_declared_format.',
    { body: letta({ agent_type: 'memgpt_agent', tools: [], agents: { name: 'not-an-array' } }), expectCode: 'record_does_not_parse_as_declared_format' });
  pre('precheck-letta-json-string-not-json',
    'A letta-af record that is a string not holding JSON text is refused record_does_not_parse_as_declared_format.',
    { body: letta('agents: [ { name: loop } ]'), expectCode: 'record_does_not_parse_as_declared_format' });
  aud('audit-letta-json-string-double-wrapped',
    'A string holding a string holding an agent file is unwrapped once only and refused record_does_not_parse_as_declared_format.',
    { body: letta(JSON.stringify(JSON.stringify({ messages: [{ role: 'user', content: [textPart('hi')] }] }))), expectCode: 'record_does_not_parse_as_declared_format' });
  pre('precheck-letta-zero-entries',
    'An older-shape record with no messages and no tools has zero entries, disclosed on the pre-check as the zero_entries kind.',
    { body: letta({ messages: [], tools: [] }), expectCode: 'zero_entries', check: expectNA(['F-3', 'F-5', 'F-10:no stated counts', 'F-11']) });
  aud('audit-letta-nothing-assessable',
    'A letta-af record whose only blocks are image parts carries no textual payload and answers 422 nothing_assessable, unpaid.',
    {
      body: letta(cur({ in_context_message_ids: ['i1'], messages: [msg('i1', 'user', [{ type: 'image', source: { type: 'url', url: 'https://example.invalid/a.png' } }, { type: 'image' }])] }, [])),
      expectCode: 'nothing_assessable',
    });
  {
    // entry_too_large on the paid route: adapted order is schema first, then
    // the in_context_message_ids order (not file order).
    const big = 'The tool printed a very long log line. '.repeat(Math.ceil((CAP.entry + 1) / 39)).slice(0, CAP.entry + 1);
    assert(utf8Length(big) === CAP.entry + 1, 'one byte over the entry cap');
    const record = cur({
      tool_ids: ['t1', 't2'],
      in_context_message_ids: ['m-sys', 'm-user', 'm-call', 'm-tool'],
      messages: [
        msg('m-user', 'user', [textPart('Fetch the log.')]),
        msg('m-call', 'assistant', [], { tool_calls: [callOf('c1', 'fetch_log', '{"lines": "all"}')] }),
        msg('m-stale', 'system', [textPart('stale prompt')]),
        msg('m-tool', 'tool', [textPart(big)], { tool_call_id: 'c1' }),
        msg('m-sys', 'system', [textPart('You are a log helper.')]),
      ],
    }, [{ id: 't1', name: 'fetch_log', json_schema: schemaA }, { id: 't2', name: 'send_message', json_schema: schemaB }]);
    aud('audit-letta-entry-too-large-index-in-adapted-order',
      'A tool result of 1,048,577 bytes answers 422 entry_too_large with entry_index 5, counting the two tool definitions first and then the in_context_message_ids order.',
      { body: letta(record), expectCode: 'entry_too_large', check: (ev, ans) => assert(ans.could_not_measure.entry_index === 5, 'entry index 5') });
  }

  // ------------------------------------------------------------ anthropic-messages

  {
    const input = { z: 1.5, a: 'caf\u00e9 <b> & \u2028 \u0001\t\u007f', m: [true, null, 1e21, 1e-7, 12345678901234567000], n: { '\u{1F600}': 2, '\uff5e': 1 } };
    const record = {
      system: 'You are a shopping assistant.',
      messages: [
        { role: 'user', content: 'Find me a kettle under 40 euros.' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'The user wants a cheap kettle; search first.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' },
            { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qyRUCMwBS3Gqv+UzG9D' },
            { type: 'text', text: 'Let me search.' },
            { type: 'server_tool_use', id: 'srvtoolu_01', name: 'web_search', input: { query: 'kettle under 40 euros' } },
            { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01', content: [{ type: 'web_search_result', url: 'https://example.invalid/k', title: 'Kettle 1.7 L', encrypted_content: 'EqgfCioIARgBIiQ3', page_age: null }] },
            { type: 'tool_use', id: 'toolu_01', name: 'price_check', input },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_01', content: '{"price": 34.99, "currency": "EUR"}' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==' } },
            { type: 'text', text: 'Is this one good?' },
          ],
        },
      ],
    };
    pre('precheck-anthropic-block-types-with-system-string',
      'An anthropic record with a top-level system string and text, thinking, redacted_thinking, server_tool_use, web_search_tool_result, tool_use (input in RFC 8785 form), tool_result and image blocks adapts to 11 entries at L0.',
      {
        body: anth(record),
        expectCode: 'precheck',
        check: (ev, ans) => {
          assert(ans.entry_count === 11 && ev.rec.messages[0].role_raw === 'system', 'entries and system first');
          const tu = ev.blocks.find((b) => b.kind_raw === 'tool_use');
          assert(tu.text === '{"a":"caf\u00e9 <b> & \u2028 \\u0001\\t\u007f","m":[true,null,1e+21,1e-7,12345678901234567000],"n":{"\u{1F600}":2,"\uff5e":1},"z":1.5}', 'JCS input');
          assert(deepEqual(ans.headline.tool_output_share, { value: 'NOT-ASSESSABLE', reason: 'not identifiable at this level' }), 'L0 headline');
          expectNA(['F-10:no stated counts', 'F-11'])(ev, ans);
        },
      });
  }
  {
    const record = {
      system: [{ type: 'text', text: 'You are a research assistant.' }, { type: 'text', text: 'Cite sources.', cache_control: { type: 'ephemeral' } }],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjQKJcfsj6IKNSAwIG9iago8PC9MZW5ndGggNiAwIFI+PgpzdHJlYW0K' } },
            { type: 'document', source: { type: 'url', url: 'https://example.invalid/paper.pdf' } },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Kettles boil water.\nMost draw 2 kW.' }, title: 'Notes' },
            { type: 'search_result', source: 'https://example.invalid/wiki', title: 'Kettle', content: [{ type: 'text', text: 'A kettle is a vessel for boiling water.' }] },
            { type: 'container_upload', file_id: 'file_011' },
            { type: 'text', text: 'Summarise these.' },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'server_tool_use', id: 'srvtoolu_02', name: 'code_execution', input: { code: 'print(2*1000)' } },
            { type: 'code_execution_tool_result', tool_use_id: 'srvtoolu_02', content: { type: 'code_execution_result', stdout: '2000\n', stderr: '', return_code: 0, content: [] } },
            { type: 'tool_use', id: 'toolu_02', name: 'fetch_notes', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_02', content: [{ type: 'text', text: 'note one' }, { type: 'image', source: { type: 'url', url: 'https://example.invalid/n.png' } }, { type: 'text', text: 'note two' }] },
            { type: 'tool_result', tool_use_id: 'toolu_03' },
            { type: 'tool_result', tool_use_id: 'toolu_04', content: [], is_error: true },
          ],
        },
        { role: 'assistant', content: [{ type: 'custom_annotation', text: 'an unknown block type with a text member' }, { type: 'mid_conv_system', content: [{ type: 'text', text: 'not a text member' }] }] },
      ],
    };
    pre('precheck-anthropic-block-types-with-system-list',
      'An anthropic record with a system list and document (base64, URL, text), search_result, container_upload, code_execution_tool_result, list and empty tool_result contents and unknown block types adapts block by block.',
      {
        body: anth(record, { declared_format_version: '2023-06-01' }),
        expectCode: 'precheck',
        check: (ev, ans) => {
          assert(ans.entry_count === 2 + 6 + 3 + 5 + 2, 'entries');
          assert(ev.blocks.filter((b) => b.text === null).length === 7, 'seven non-serialisable');
          assert(ans.declared_format.version_supplied === true, 'version');
          expectNA(['F-10:no stated counts', 'F-11'])(ev, ans);
        },
      });
  }
  pre('precheck-anthropic-annex-c10-example',
    'The ANNEX C-10 example: an anthropic record with one assistant message and no stated counts lists F-5, F-10 (no stated counts) and F-11.',
    { body: anth({ messages: [{ role: 'assistant', content: 'Hello, how can I help?' }] }), expectCode: 'precheck', check: expectNA(['F-5', 'F-10:no stated counts', 'F-11']) });
  pre('precheck-anthropic-bare-array-stated-covered',
    'A bare anthropic message array with a user turn and per_message figures for both messages lists only F-11.',
    {
      body: anth([{ role: 'user', content: 'What is 2+2?' }, { role: 'assistant', content: [{ type: 'text', text: '4' }] }], { harness_stated_counts: { per_message: [12, 3] } }),
      expectCode: 'precheck',
      check: expectNA(['F-11']),
    });
  pre('precheck-anthropic-stated-partial',
    'An anthropic record with a per_message list holding a null for one of its three messages and no total lists F-10 as partial coverage.',
    {
      body: anth({ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' }] }, { harness_stated_counts: { per_message: [5, null, 7] } }),
      expectCode: 'precheck',
      check: expectNA(['F-10:partial coverage', 'F-11']),
    });
  pre('precheck-anthropic-stated-all-null',
    'A per_message list of nulls and no total states no count, so F-10 is listed as no stated counts.',
    {
      body: anth({ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }] }, { harness_stated_counts: { per_message: [null, null] } }),
      expectCode: 'precheck',
      check: expectNA(['F-10:no stated counts', 'F-11']),
    });
  pre('precheck-anthropic-stated-empty-object',
    'An empty harness_stated_counts object is valid and states no count.',
    { body: anth({ messages: [{ role: 'user', content: 'a' }] }, { harness_stated_counts: {} }), expectCode: 'precheck', check: expectNA(['F-10:no stated counts', 'F-11']) });
  {
    const nfd = 'he\u0301llo wo\u0308rld';
    assert(codePoints(nfd) === 13 && nfcC(nfd) === 11 && em1(nfcC(nfd)) === 3, 'ANNEX C-3 example');
    const record = {
      messages: [
        { role: 'user', content: nfd },
        { role: 'assistant', content: '\u{1F600}\u{1F600}\u{1F600}\u{1F600}\u{1F600}' },
        { role: 'user', content: '\u1100\u1161\u1102\u1161\u1103\u1161 \u212b \u0958' },
        { role: 'assistant', content: '    ' },
      ],
    };
    pre('precheck-anthropic-nfc-code-points',
      'EM-1 counts NFC code points: the ANNEX NFD example is 11, five emoji are 5 (not 10 UTF-16 units), conjoining jamo compose, the Angstrom sign is one and U+0958 decomposes to two, while bytes stay those submitted.',
      {
        body: anth(record),
        expectCode: 'precheck',
        check: (ev, ans) => {
          const Cs = ev.sizes.map((s) => s.C);
          assert(deepEqual(Cs, [11, 5, 3 + 1 + 1 + 1 + 2, 4]), 'code points ' + JSON.stringify(Cs));
          assert(ans.total.tokens === est(3 + 2 + 2 + 1), 'tokens');
          assert(ans.total.bytes === 15 + 20 + (6 * 3 + 1 + 3 + 1 + 3) + 4, 'bytes as submitted');
        },
      });
  }
  pre('precheck-anthropic-unknown-members-counted',
    'Unknown top-level members, a non-string declared_format_version and a non-string criteria_ack are ignored and counted (4), never echoed.',
    {
      body: { note: 'free text that is never echoed', envelope_version: ENVELOPE, declared_format_id: 'anthropic-messages', declared_format_version: 20230601, criteria_ack: { id: 'context-composition/v1' }, record: { messages: [{ role: 'user', content: 'hi' }] }, extra: [1, 2, 3] },
      expectCode: 'precheck',
      check: (ev, ans) => assert(ans.unknown_top_level_members === 4 && ans.declared_format.version_supplied === false, 'four unknown'),
    });
  pre('precheck-anthropic-known-members-not-counted',
    'A string criteria_ack and a string declared_format_version are known members, so the unknown count is 0 and version_supplied is true.',
    {
      body: anth({ messages: [{ role: 'user', content: 'hi' }] }, { declared_format_version: '2023-06-01', criteria_ack: 'context-composition/v1' }),
      expectCode: 'precheck',
      check: (ev, ans) => assert(ans.unknown_top_level_members === 0 && ans.declared_format.version_supplied === true, 'zero unknown'),
    });
  pre('precheck-anthropic-record-string',
    'An anthropic-messages record that is a string is refused record_does_not_parse_as_declared_format.',
    { body: anth('[{"role":"user","content":"hi"}]'), expectCode: 'record_does_not_parse_as_declared_format' });
  aud('audit-anthropic-record-without-messages',
    'An anthropic-messages object without a messages array is refused record_does_not_parse_as_declared_format on the paid route.',
    { body: anth({ system: 'You are helpful.', turns: [{ role: 'user', content: 'hi' }] }), expectCode: 'record_does_not_parse_as_declared_format' });
  pre('precheck-anthropic-messages-not-array',
    'An anthropic-messages object whose messages member is an object is refused record_does_not_parse_as_declared_format.',
    { body: anth({ messages: { role: 'user', content: 'hi' } }), expectCode: 'record_does_not_parse_as_declared_format' });
  pre('precheck-anthropic-nothing-assessable',
    'An anthropic record of only image and redacted_thinking blocks and an empty tool_result has no textual payload, disclosed as nothing_assessable on the pre-check with F-3 listed since no message has a sized block.',
    {
      body: anth({ messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://example.invalid/x.png' } }, { type: 'tool_result', tool_use_id: 't' }] }, { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'EmwKAhgB' }] }] }),
      expectCode: 'nothing_assessable',
      check: expectNA(['F-3', 'F-10:no stated counts', 'F-11']),
    });
  aud('audit-anthropic-zero-entries',
    'An anthropic record with an empty messages list and no system answers 422 zero_entries, unpaid.',
    { body: anth({ messages: [] }), expectCode: 'zero_entries' });
  {
    // A tool_use whose RFC 8785 form is one byte over the entry cap: 1e20
    // serialises as 100000000000000000000 (21 bytes) from 4 submitted bytes.
    const name = 'precheck-anthropic-entry-too-large-jcs-input';
    const nums = 47000;
    const base = jcs({ pad: '', values: new Array(nums).fill(1e20) });
    const pad = 'p'.repeat(CAP.entry + 1 - utf8Length(base));
    assert(utf8Length(jcs({ pad, values: new Array(nums).fill(1e20) })) === CAP.entry + 1, 'JCS one over the cap');
    const rec = '{"messages":[{"role":"user","content":"List the values."},{"role":"assistant","content":[{"type":"text","text":"Here they are."},'
      + '{"type":"tool_use","id":"toolu_big","name":"emit","input":{"values":[' + new Array(nums).fill('1e20').join(',') + '],"pad":"' + pad + '"}}]}]}';
    pre(name,
      'A tool_use whose input is small as submitted but whose RFC 8785 serialization is 1,048,577 bytes is disclosed as entry_too_large with entry_index 2.',
      { body_text: envText('precheck', name, [...head('anthropic-messages'), ['record', rec]]), expectCode: 'entry_too_large', check: (ev, ans) => assert(ans.could_not_measure.entry_index === 2, 'index 2') });
  }
  {
    const name = 'precheck-anthropic-too-many-entries-before-nothing-assessable';
    const rec = '{"messages":[{"role":"user","content":[' + new Array(CAP.entries + 1).fill('{"type":"x"}').join(',') + ']}]}';
    pre(name,
      'A message of 10,001 blocks, none textual, is disclosed as too_many_entries (R-7 is tried before R-9) with the cap and the entry count.',
      { body_text: envText('precheck', name, [...head('anthropic-messages'), ['record', rec]]), expectCode: 'too_many_entries', check: (ev, ans) => assert(ans.could_not_measure.entries === 10001, '10001') });
  }

  // ------------------------------------------------------------ generic-message-list

  pre('precheck-generic-l0-role-list',
    'A generic record with role and text only is level L0, its tool-output headline is not identifiable at this level, and stated_tokens on every message cover F-10.',
    {
      body: gen({ messages: [{ role: 'system', text: 'Be brief.', stated_tokens: 4 }, { role: 'user', text: 'Hi!', stated_tokens: 2 }, { role: 'assistant', text: 'Hello.', stated_tokens: 3 }] }),
      expectCode: 'precheck',
      check: (ev, ans) => { assert(ans.declared_format.level === 'L0', 'L0'); expectNA(['F-11'])(ev, ans); },
    });
  pre('precheck-generic-l1-name-and-null-text',
    'A generic record with name, has_args and source members but no kind is level L1; a null text is a non-serialisable entry; stated_tokens on one of three messages is partial coverage.',
    {
      body: gen({ messages: [{ role: 'user', text: 'Weather in Oslo?' }, { role: 'assistant', name: 'get_weather', has_args: true, source: 'harness', text: null, stated_tokens: 20 }, { role: 'tool', name: 'get_weather', text: '{"temp_c": -3}' }] }),
      expectCode: 'precheck',
      check: (ev, ans) => { assert(ans.declared_format.level === 'L1' && ans.entry_count === 3, 'L1'); expectNA(['F-10:partial coverage', 'F-11'])(ev, ans); },
    });
  pre('precheck-generic-empty-kind-and-empty-schemas-stay-l1',
    'An empty-string kind and an empty tool_schemas list do not make a generic record L2; a name member makes it L1.',
    {
      body: gen({ messages: [{ role: 'user', kind: '', text: 'hello' }, { role: 'assistant', name: 'bot', text: 'hi' }], tool_schemas: [] }),
      expectCode: 'precheck',
      check: (ev, ans) => assert(ans.declared_format.level === 'L1' && ans.entry_count === 2, 'L1 not L2'),
    });
  {
    // T = 32 with one P-TRES estimate of 1: 100 × 1 / 32 = 3.125 -> 3.13 (half up).
    const t = (n) => 'x'.repeat(n);
    pre('precheck-generic-l2-headline-rounds-half-up',
      'A generic L2 record whose tool results are 1 of 32 estimated tokens prints the headline share 3.125 rounded half up as est:~3.13%.',
      {
        body: gen({ messages: [{ role: 'user', text: t(40) }, { role: 'assistant', kind: 'tool_call', name: 'f', has_args: true, text: '{"q":1}' }, { role: 'tool', kind: 'tool_result', text: 'ok' }, { role: 'assistant', kind: 'message', text: t(74) }] }),
        expectCode: 'precheck',
        check: (ev, ans) => {
          assert(ev.T === 32 && ans.headline.tool_output_share === 'est:~3.13%', 'half up ' + ans.headline.tool_output_share);
          expectNA(['F-10:no stated counts', 'F-11'])(ev, ans);
        },
      });
  }
  pre('precheck-generic-l2-by-tool-schemas-only',
    'A non-empty tool_schemas list alone makes a generic record L2, its schemas are entries placed first, and a record with no tool result prints est:~0.00%.',
    {
      body: gen({ messages: [{ role: 'user', text: 'Book a table for two.' }, { role: 'assistant', text: 'Done.' }], tool_schemas: [{ name: 'book', text: '{"name":"book","parameters":{"type":"object"}}' }, { text: 'def cancel(booking_id): ...' }] }),
      expectCode: 'precheck',
      check: (ev, ans) => {
        assert(ans.declared_format.level === 'L2' && ans.entry_count === 4 && ans.headline.tool_output_share === 'est:~0.00%', 'L2 by schemas');
        expectNA(['F-10:no stated counts', 'F-11'])(ev, ans);
      },
    });
  pre('precheck-generic-l2-kind-outranks-user-role',
    'At L2 a user-role message of kind tool_result is P-TRES, not P-USER, so a record whose only user-role message is a tool result lists F-5, and that result is half the estimate.',
    {
      body: gen({ messages: [{ role: 'assistant', kind: 'tool_call', text: 'call' }, { role: 'user', kind: 'tool_result', text: 'result1' }, { role: 'assistant', text: 'done' }] }),
      expectCode: 'precheck',
      check: (ev, ans) => {
        assert(ans.headline.tool_output_share === 'est:~50.00%', ans.headline.tool_output_share);
        expectNA(['F-5', 'F-10:no stated counts', 'F-11'])(ev, ans);
      },
    });
  pre('precheck-generic-l2-summary-and-retrieval-kinds',
    'Generic L2 kinds summary and retrieval outrank roles, so retrieved text does not enter the tool-output headline and a user turn still opens a turn.',
    {
      body: gen({ messages: [{ role: 'system', kind: 'summary', text: 'Earlier: user asked about kettles.' }, { role: 'user', text: 'And toasters?' }, { role: 'tool', kind: 'retrieval', source: 'vector-store', text: 'Toasters: 2-slot, 4-slot.' }, { role: 'tool', kind: 'tool_result', text: 'price: 25' }] }, { harness_stated_counts: { total: 30, per_message: [9] } }),
      expectCode: 'precheck',
      check: (ev, ans) => {
        assert(ans.headline.tool_output_share === 'est:~13.04%', ans.headline.tool_output_share);
        expectNA(['F-11'])(ev, ans);
      },
    });
  pre('precheck-generic-tool-schemas-only-no-messages',
    'A generic record with tool schemas and an empty messages list has entries but no non-schema message, so F-3 is listed with zero denominator.',
    { body: gen({ messages: [], tool_schemas: [{ name: 'f', text: '{"name":"f"}' }] }), expectCode: 'precheck', check: expectNA(['F-3', 'F-5', 'F-10:no stated counts', 'F-11']) });
  pre('precheck-generic-text-number',
    'A generic message whose text is a number is refused record_does_not_parse_as_declared_format.',
    { body: gen({ messages: [{ role: 'user', text: 12 }] }), expectCode: 'record_does_not_parse_as_declared_format' });
  aud('audit-generic-text-object',
    'A generic message whose text is an object is refused record_does_not_parse_as_declared_format on the paid route.',
    { body: gen({ messages: [{ role: 'user', text: 'ok' }, { role: 'assistant', text: { parts: ['a'] } }] }), expectCode: 'record_does_not_parse_as_declared_format' });
  pre('precheck-generic-record-array',
    'A generic-message-list record that is a bare array is refused record_does_not_parse_as_declared_format.',
    { body: gen([{ role: 'user', text: 'hi' }]), expectCode: 'record_does_not_parse_as_declared_format' });
  pre('precheck-generic-messages-missing',
    'A generic-message-list object without a messages array is refused record_does_not_parse_as_declared_format.',
    { body: gen({ tool_schemas: [{ text: 'x' }] }), expectCode: 'record_does_not_parse_as_declared_format' });
  aud('audit-order-parse-beats-nothing-assessable',
    'A generic record whose first text is null and second text is a number is refused record_does_not_parse_as_declared_format rather than measured as nothing_assessable.',
    { body: gen({ messages: [{ role: 'user', text: null }, { role: 'user', text: 7 }] }), expectCode: 'record_does_not_parse_as_declared_format' });
  aud('audit-generic-nothing-assessable-null-texts',
    'A generic record whose every text is null has no textual payload and answers 422 nothing_assessable, unpaid.',
    { body: gen({ messages: [{ role: 'user', text: null }, { role: 'assistant', text: null }] }), expectCode: 'nothing_assessable' });
  pre('precheck-generic-nothing-assessable-empty-texts',
    'A generic record whose every text is the empty string has T = 0 and is disclosed as nothing_assessable (ANNEX C-11).',
    { body: gen({ messages: [{ role: 'user', text: '' }, { role: 'assistant', text: '' }] }), expectCode: 'nothing_assessable', check: expectNA(['F-10:no stated counts', 'F-11']) });
  pre('precheck-generic-whitespace-only-is-measured',
    'A whitespace-only text is not empty, so a record of one whitespace-only message is measured with one estimated token.',
    { body: gen({ messages: [{ role: 'user', text: ' \n\t ' }] }), expectCode: 'precheck', check: (ev, ans) => assert(ans.total.tokens === 'est:~1' && ans.total.bytes === 4, 'ws') });
  pre('precheck-generic-zero-entries',
    'A generic record with an empty messages list and no tool schemas is disclosed as zero_entries on the pre-check.',
    { body: gen({ messages: [] }), expectCode: 'zero_entries', check: expectNA(['F-3', 'F-5', 'F-10:no stated counts', 'F-11']) });
  {
    const big = '\u00e9'.repeat(CAP.entry / 2);
    assert(utf8Length(big) === CAP.entry, 'exactly the entry cap');
    pre('precheck-generic-entry-exactly-at-cap',
      'A single entry of exactly 1,048,576 UTF-8 bytes (524,288 two-byte characters) is within the entry cap and measured as 524,288 code points.',
      {
        body: gen({ messages: [{ role: 'system', text: 'You are terse.' }, { role: 'user', text: big }] }),
        expectCode: 'precheck',
        check: (ev, ans) => assert(ans.total.bytes === 14 + CAP.entry && ans.total.tokens === est(4 + CAP.entry / 8), 'at cap'),
      });
  }
  {
    const name = 'precheck-generic-10000-entries-accepted';
    const rec = '{"messages":[{"role":"user","text":"hi"}],"tool_schemas":[' + new Array(CAP.entries - 1).fill('{"text":"ab"}').join(',') + ']}';
    pre(name,
      'A generic record of 9,999 tool schemas and one message has exactly 10,000 entries, the cap, and is measured.',
      { body_text: envText('precheck', name, [...head('generic-message-list'), ['record', rec]]), expectCode: 'precheck', check: (ev, ans) => assert(ans.entry_count === 10000 && ans.total.tokens === 'est:~10000', '10000') });
  }
  {
    const rec = '{"messages":[{"role":"user","text":"hi"}],"tool_schemas":[' + new Array(CAP.entries).fill('{"text":"ab"}').join(',') + ']}';
    aud('audit-generic-too-many-entries-schemas-count',
      'Tool schemas are entries, so one message plus 10,000 tool schemas answers 422 too_many_entries with entries 10,001, unpaid.',
      { body_text: envText('audit', 'x', [...head('generic-message-list'), ['record', rec]]), expectCode: 'too_many_entries' });
  }

  // ------------------------------------------------------------ envelope refusals (C-2)

  const okAnth = { messages: [{ role: 'user', content: 'hi' }] };
  pre('precheck-body-empty',
    'An empty request body is refused malformed_body.',
    { body_text: '', expectCode: 'malformed_body' });
  aud('audit-body-truncated-json',
    'A truncated JSON text is refused malformed_body on the paid route before payment.',
    { body_text: '{"envelope_version":"context-composition-envelope/1","declared_format_id":"anthropic-messages","record":{"messages":[', expectCode: 'malformed_body' });
  pre('precheck-body-array',
    'A JSON array wrapping a valid envelope is refused malformed_body.',
    { body: [anth(okAnth)], expectCode: 'malformed_body' });
  aud('audit-body-string',
    'A JSON string body is refused malformed_body.',
    { body: JSON.stringify(anth(okAnth)), expectCode: 'malformed_body' });
  pre('precheck-body-null',
    'A JSON null body is refused malformed_body.',
    { body: null, expectCode: 'malformed_body' });
  aud('audit-body-trailing-text',
    'A JSON object followed by more text is not one JSON value and is refused malformed_body.',
    { body_text: JSON.stringify(anth(okAnth)) + ' {}', expectCode: 'malformed_body' });
  pre('precheck-envelope-version-missing',
    'An object without envelope_version is refused envelope_version_not_supported.',
    { body: { declared_format_id: 'anthropic-messages', record: okAnth }, expectCode: 'envelope_version_not_supported' });
  aud('audit-envelope-version-2',
    'An envelope_version of context-composition-envelope/2 is refused envelope_version_not_supported.',
    { body: { ...anth(okAnth), envelope_version: 'context-composition-envelope/2' }, expectCode: 'envelope_version_not_supported' });
  pre('precheck-envelope-version-number',
    'A numeric envelope_version is refused envelope_version_not_supported.',
    { body: { ...anth(okAnth), envelope_version: 1 }, expectCode: 'envelope_version_not_supported' });
  pre('precheck-order-envelope-version-beats-format',
    'An empty object fails both R-2 and R-3 and is refused envelope_version_not_supported, the earlier rule.',
    { body: {}, expectCode: 'envelope_version_not_supported' });
  pre('precheck-format-missing',
    'An envelope without declared_format_id is refused format_not_accepted listing the three accepted ids.',
    { body: { envelope_version: ENVELOPE, record: okAnth }, expectCode: 'format_not_accepted' });
  aud('audit-format-unknown-not-sniffed',
    'A declared_format_id of openai-chat is refused format_not_accepted with the accepted list and no closest-format suggestion, though the record would parse as anthropic-messages.',
    { body: env('openai-chat', okAnth), expectCode: 'format_not_accepted' });
  pre('precheck-format-case-variant',
    'A declared_format_id differing only in case (Letta-AF) is not an accepted id and is refused format_not_accepted.',
    { body: env('Letta-AF', { messages: [] }), expectCode: 'format_not_accepted' });
  pre('precheck-format-number',
    'A numeric declared_format_id is refused format_not_accepted.',
    { body: env(2, okAnth), expectCode: 'format_not_accepted' });
  aud('audit-order-format-beats-record',
    'An unaccepted format and a missing record are refused format_not_accepted, the earlier rule.',
    { body: { envelope_version: ENVELOPE, declared_format_id: 'anthropic' }, expectCode: 'format_not_accepted' });
  pre('precheck-record-missing',
    'An envelope without a record member is refused record_required.',
    { body: { envelope_version: ENVELOPE, declared_format_id: 'generic-message-list' }, expectCode: 'record_required' });
  aud('audit-record-missing',
    'An envelope without a record member is refused record_required on the paid route before payment.',
    { body: { envelope_version: ENVELOPE, declared_format_id: 'letta-af', harness_stated_counts: { total: 1 } }, expectCode: 'record_required' });
  pre('precheck-order-record-missing-beats-stated-counts',
    'A missing record and a harness_stated_counts array are refused record_required, the earlier rule.',
    { body: { envelope_version: ENVELOPE, declared_format_id: 'anthropic-messages', harness_stated_counts: [1, 2] }, expectCode: 'record_required' });
  aud('audit-order-agents-ambiguous-beats-stated-counts',
    'A letta-af record with no agent and a harness_stated_counts string are refused record_required, which precedes stated_counts_invalid.',
    { body: letta({ agents: [] }, { harness_stated_counts: 'total=5' }), expectCode: 'record_required' });
  pre('precheck-stated-counts-array',
    'A harness_stated_counts that is an array is refused stated_counts_invalid with its cap.',
    { body: anth(okAnth, { harness_stated_counts: [3] }), expectCode: 'stated_counts_invalid' });
  aud('audit-stated-counts-number',
    'A harness_stated_counts that is a number is refused stated_counts_invalid on the paid route.',
    { body: anth(okAnth, { harness_stated_counts: 3 }), expectCode: 'stated_counts_invalid' });
  pre('precheck-order-stated-counts-beats-parse',
    'A harness_stated_counts string and a record that does not parse as generic-message-list are refused stated_counts_invalid, the earlier rule.',
    { body: gen('not a record', { harness_stated_counts: '{"total":3}' }), expectCode: 'stated_counts_invalid' });
  {
    const statedAt = (n) => {
      const base = '{"total":120';
      return base + ' '.repeat(n - base.length - 1) + '}';
    };
    assert(utf8Length(statedAt(CAP.stated)) === CAP.stated, 'stated at cap');
    const name = 'precheck-stated-counts-exactly-65536-bytes';
    pre(name,
      'A harness_stated_counts member whose raw text, whitespace included, is exactly 65,536 bytes is within its cap and states a total.',
      { body_text: envText('precheck', name, [...head('anthropic-messages'), ['record', JSON.stringify(okAnth)], ['harness_stated_counts', statedAt(CAP.stated)]]), expectCode: 'precheck', check: expectNA(['F-11']) });
    aud('audit-stated-counts-65537-bytes',
      'A harness_stated_counts member whose raw text is 65,537 bytes, mostly whitespace, is refused stated_counts_invalid.',
      { body_text: envText('audit', 'x', [...head('anthropic-messages'), ['record', JSON.stringify(okAnth)], ['harness_stated_counts', statedAt(CAP.stated + 1)]]), expectCode: 'stated_counts_invalid' });
  }

  // ------------------------------------------------------------ could-not-measure on the paid route, other kinds

  aud('audit-generic-zero-entries',
    'A generic record with no messages and an empty tool_schemas list answers 422 zero_entries on the paid route.',
    { body: gen({ messages: [], tool_schemas: [] }), expectCode: 'zero_entries' });

  // ------------------------------------------------------------ uncovered path

  addCase(`/${service}/verify`, 'post-verify-not-covered',
    'A POST to a path the service does not offer answers 404 with the static body NOT COVERED.',
    { body: anth(okAnth), expectCode: 'NOT COVERED' });

  return { cases };
}

// ============================================================== self-tests

function selfTest({ annexText }) {
  // C-2 table: every code, status and message as the ANNEX prints them, in order.
  const rows = [...annexText.matchAll(/^\| [^|]+ \| `([a-z_]+)` \| (\d{3}) \| (?:`([^`]+)`|\(host\)) \|/gm)];
  assert(rows.length === RULES.length, 'ANNEX C-2 row count ' + rows.length);
  rows.forEach((m, i) => {
    const [code, status, message] = RULES[i];
    assert(m[1] === code && Number(m[2]) === status && (m[3] === undefined ? message === null : m[3] === message), 'ANNEX C-2 row ' + code);
  });
  // C-3 example.
  const nfd = 'he\u0301llo wo\u0308rld';
  assert(codePoints(nfd) === 13 && nfcC(nfd) === 11 && em1(11) === 3, 'C-3 example');
  assert(em1(0) === 0 && em1(1) === 1 && em1(4) === 1 && em1(5) === 2, 'EM-1');
  // Shares: half up on exact integers.
  assert(shareText(1, 32) === 'est:~3.13%' && shareText(1, 3) === 'est:~33.33%' && shareText(2, 3) === 'est:~66.67%', 'shares');
  assert(shareText(0, 7) === 'est:~0.00%' && shareText(7, 7) === 'est:~100.00%' && shareText(1, 64) === 'est:~1.56%', 'shares 2');
  assert(deepEqual(shareText(0, 0), { value: 'NOT-ASSESSABLE', reason: 'zero denominator' }), 'zero denominator');
  // JSON parser vs JSON.parse.
  for (const t of ['{}', '[]', ' {"a":[1,2.5e3,-0,"\\u00e9\\n"],"b":{"c":null,"d":true}} ', '"x"', '0', '-1.5E+2']) {
    assert(deepEqual(plain(parseJson(t)), JSON.parse(t)), 'parser ' + t);
  }
  for (const t of ['', '{', '[1,]', '{"a":1,}', '01', '1.', '.5', '"\t"', 'nul', '{"a" 1}', '[1] [2]', '\u00a0{}', "{'a':1}"]) {
    let threw = false;
    try { parseJson(t); } catch (e) { threw = e instanceof JsonError; }
    assert(threw, 'parser rejects ' + JSON.stringify(t));
  }
  assert(compactJsonText('{ "a" : [ 1 , "b c\\" d" ] ,\n\t"e":1.50E+0 }') === '{"a":[1,"b c\\" d"],"e":1.50E+0}', 'compaction');
  // Axis C (C-4, C-5).
  const b64 = b64encode(Uint8Array.from({ length: 30 }, (_, i) => i * 7));
  assert(b64.length === 40, 'b64 40');
  assert(classifyC('') === 'C-EMPTY' && classifyC(null) === 'C-UNK' && classifyC('  \n') === 'C-TEXT', 'C empty/unk/ws');
  assert(classifyC(b64) === 'C-BLOB' && classifyC('see ' + b64) === 'C-BLOB' && classifyC('look at this: ' + b64) === 'C-TEXT', 'C blob 90%');
  assert(base64Segments('x ' + b64 + ' y').filter((s) => s.qualifies).length === 1, 'segment found');
  assert(base64Segments('ab+cd-ef').map((s) => s.text).join('|') === 'ab+cd|-ef', 'split at the breaking character');
  assert(base64Segments('QQ===').map((s) => s.text).join('|') === 'QQ==', 'third = ends the run');
  const plus = b64encode(new Uint8Array(30).fill(0).map((_, i) => [0xfb, 0xef, 0xbe][i % 3]));
  assert(plus === '+'.repeat(40), 'all-plus base64');
  const dashes = '-'.repeat(40);
  const sd = base64Segments(dashes);
  assert(sd.length === 1 && sd[0].alphabet === 'url-safe' && sd[0].qualifies && classifyC(dashes) === 'C-BLOB', 'url-safe segment');
  const mixed = base64Segments(plus + dashes);
  assert(mixed.length === 2 && mixed[0].alphabet === 'standard' && mixed[1].alphabet === 'url-safe' && mixed.every((x) => x.qualifies), 'mixed run splits');
  assert(!base64Segments('A'.repeat(40))[0].qualifies || b64decodeStrict('A'.repeat(40)).length === 30, 'neither kind is standard');
  assert(base64Segments('A'.repeat(39))[0].qualifies === false && base64Segments('A'.repeat(36) + '====')[0].text.length === 38, 'length and padding rules');
  assert(classifyC('BEGIN LOG 2026\nanything') === 'C-RAW', 'C raw marker');
  assert(classifyC('2026-01-01 10:00:00 a\n[2026-01-01T10:00:01 b\n2026-01-01 10:00:02 c\n2026-01-01 10:00:03 d\nfree text') === 'C-RAW', 'C raw 80%');
  assert(classifyC('2026-01-01 10:00:00 a\nfree\n2026-01-01 10:00:02 c\nfree') === 'C-TEXT', 'C raw 50% is not raw');
  const obj10 = JSON.stringify(Object.fromEntries(Array.from({ length: 10 }, (_, i) => ['key' + i, 'v'.repeat(15)])));
  assert(obj10.length >= 200 && classifyC(obj10) === 'C-RAW', 'C raw json');
  assert(classifyC('{"a": 1}') === 'C-STRUCT' && classifyC(' [1,2] \n') === 'C-STRUCT' && classifyC('"str"') === 'C-TEXT', 'C struct');
  assert(classifyC('```js\nlet a = 1;\n```') === 'C-CODE' && classifyC('    a\nb') === 'C-CODE' && classifyC('a\nb\n\tc') === 'C-TEXT', 'C code');
  assert(classifyC('Plain words.') === 'C-TEXT', 'C text');
}
