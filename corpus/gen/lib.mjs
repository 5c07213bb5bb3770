// Shared helpers for the independent corpus generator (node standard library only).
//
// - jcs(value): RFC 8785 JSON Canonicalization Scheme serialization.
// - sha256Hex(bytes|string): lowercase hex SHA-256.
// - b64encode(bytes): RFC 4648 section 4 base64, standard alphabet, padded.
// - b64decodeStrict(string): strict RFC 4648 section 4 decoder written by hand
//   (node's Buffer is lenient); returns a Uint8Array, or null when invalid.
// - makeRng(seed): seeded deterministic PRNG (sfc32 seeded through FNV-1a).
// - utf8(string) / utf8Length(string): UTF-8 bytes of a string.

import { createHash } from 'node:crypto';

// ---------------------------------------------------------------- JCS (RFC 8785)

export function jcs(value) {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new Error('jcs: non-finite number');
      // ECMAScript Number serialization, as RFC 8785 section 3.2.2.3 requires
      // (-0 serializes as 0).
      return JSON.stringify(value);
    case 'string':
      assertWellFormed(value);
      // RFC 8785 section 3.2.2.2 is the ECMAScript JSON.stringify string form.
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) return '[' + value.map(jcs).join(',') + ']';
      // Member names sorted by UTF-16 code units (JS default string order).
      const keys = Object.keys(value).sort();
      const parts = [];
      for (const k of keys) {
        if (value[k] === undefined) throw new Error(`jcs: undefined member ${k}`);
        assertWellFormed(k);
        parts.push(JSON.stringify(k) + ':' + jcs(value[k]));
      }
      return '{' + parts.join(',') + '}';
    }
    default:
      throw new Error(`jcs: cannot serialize ${typeof value}`);
  }
}

function assertWellFormed(s) {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (!(d >= 0xdc00 && d <= 0xdfff)) throw new Error('jcs: lone surrogate');
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      throw new Error('jcs: lone surrogate');
    }
  }
}

// ---------------------------------------------------------------- hashing, UTF-8

export function sha256Hex(data) {
  return createHash('sha256').update(typeof data === 'string' ? utf8(data) : data).digest('hex');
}

const encoder = new TextEncoder();
export function utf8(s) {
  return encoder.encode(s);
}
export function utf8Length(s) {
  return encoder.encode(s).length;
}

// ---------------------------------------------------------------- base64 (RFC 4648 section 4)

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const DECODE = new Int16Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DECODE[ALPHABET.charCodeAt(i)] = i;

export function b64encode(bytes) {
  let out = '';
  let i = 0;
  for (; i + 3 <= bytes.length; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out += ALPHABET[(n >> 18) & 63] + ALPHABET[(n >> 12) & 63] + ALPHABET[(n >> 6) & 63] + ALPHABET[n & 63];
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i] << 16;
    out += ALPHABET[(n >> 18) & 63] + ALPHABET[(n >> 12) & 63] + '==';
  } else if (rest === 2) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8);
    out += ALPHABET[(n >> 18) & 63] + ALPHABET[(n >> 12) & 63] + ALPHABET[(n >> 6) & 63] + '=';
  }
  return out;
}

// Strict decoding: standard alphabet only, length a multiple of 4, '=' only
// as the last one or two characters and only as needed, no whitespace or line
// breaks, and the unused bits of the last symbol zero. '' decodes to zero bytes.
export function b64decodeStrict(s) {
  if (typeof s !== 'string') return null;
  if (s.length % 4 !== 0) return null;
  if (s.length === 0) return new Uint8Array(0);
  let pad = 0;
  if (s.charCodeAt(s.length - 1) === 61 /* = */) {
    pad = s.charCodeAt(s.length - 2) === 61 ? 2 : 1;
  }
  const dataLen = s.length - pad; // number of alphabet symbols expected
  const vals = new Uint8Array(dataLen);
  for (let i = 0; i < dataLen; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128) return null;
    const v = DECODE[c];
    if (v < 0) return null; // any '=' before the padding, whitespace, '-', '_', ...
    vals[i] = v;
  }
  // pad === 2 means the last group is "XX=="; a third '=' ("X===") was already
  // rejected above since s[len-3] is then '=' and is not an alphabet symbol.
  const out = new Uint8Array((s.length / 4) * 3 - pad);
  let o = 0;
  const fullGroups = Math.floor(dataLen / 4);
  for (let g = 0; g < fullGroups; g++) {
    const n = (vals[4 * g] << 18) | (vals[4 * g + 1] << 12) | (vals[4 * g + 2] << 6) | vals[4 * g + 3];
    out[o++] = (n >> 16) & 255;
    out[o++] = (n >> 8) & 255;
    out[o++] = n & 255;
  }
  const base = fullGroups * 4;
  if (pad === 2) {
    const a = vals[base], b = vals[base + 1];
    if ((b & 15) !== 0) return null; // unused 4 bits must be zero
    out[o++] = (a << 2) | (b >> 4);
  } else if (pad === 1) {
    const a = vals[base], b = vals[base + 1], c = vals[base + 2];
    if ((c & 3) !== 0) return null; // unused 2 bits must be zero
    out[o++] = (a << 2) | (b >> 4);
    out[o++] = ((b & 15) << 4) | (c >> 2);
  }
  if (o !== out.length) throw new Error('b64decodeStrict: internal length error');
  return out;
}

// ---------------------------------------------------------------- seeded PRNG

// sfc32 (Small Fast Counter), state seeded from FNV-1a hashes of the seed string.
export function makeRng(seed) {
  const h = (salt) => {
    let x = 0x811c9dc5;
    const s = salt + ':' + seed;
    for (let i = 0; i < s.length; i++) {
      x ^= s.charCodeAt(i);
      x = Math.imul(x, 0x01000193) >>> 0;
    }
    return x >>> 0;
  };
  let a = h('a'), b = h('b'), c = h('c'), d = h('d');
  const next = () => {
    a >>>= 0; b >>>= 0; c >>>= 0; d >>>= 0;
    const t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    const r = (t + d) | 0;
    c = (c + r) | 0;
    return r >>> 0;
  };
  for (let i = 0; i < 16; i++) next();
  return {
    u32: next,
    int(n) { // uniform-enough integer in [0, n)
      return Math.floor((next() / 4294967296) * n);
    },
    bytes(n) {
      const out = new Uint8Array(n);
      for (let i = 0; i < n; i++) out[i] = next() & 255;
      return out;
    },
  };
}

// ---------------------------------------------------------------- small helpers

export function concatBytes(parts) {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
}

export function ascii(s) {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 127) throw new Error('ascii: non-ASCII input');
    out[i] = c;
  }
  return out;
}

export function assert(cond, msg) {
  if (!cond) throw new Error('assertion failed: ' + msg);
}

export function deepEqual(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    if (a.length !== b.length) return false;
    return a.every((x, i) => deepEqual(x, b[i]));
  }
  const ka = Object.keys(a), kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k]));
}

// ---------------------------------------------------------------- base58 (Bitcoin alphabet)

const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
export function base58(bytes) {
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
  // All-zero input: the leading '1's already say everything.
  if (digits.length === 1 && digits[0] === 0) return out;
  for (let q = digits.length - 1; q >= 0; q--) out += B58[digits[q]];
  return out;
}

// The members every answer carries (corpus/README.md): the pin and the
// check-end instant are the placeholders the harness substitutes. paidOp
// names the route whose answers also carry the payments-off member.
export function commonMembers(criteria, service, paidOp, op, kind) {
  const a = {
    service,
    service_version: criteria.version,
    criteria: { id: criteria.criteria_id, revision: criteria.criteria_revision },
    corpus: { id: criteria.corpus.id, sha256: '<pin>' },
    op,
    kind,
    issued_at: '<check-end UTC>',
  };
  if (op === paidOp) a.payment = { mode: 'off' };
  return a;
}
