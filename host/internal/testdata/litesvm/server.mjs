// A Solana JSON-RPC 2.0 server over LiteSVM (an in-process Solana runtime
// with SPL Token, Associated Token, Memo and ComputeBudget built in), on
// 127.0.0.1 only, for the tests that move real tokens: the host's
// embedded facilitator, `assay call` and the official facilitator talk to
// it as to any RPC node. It prints `listening <port>` once ready and runs
// until its standard input closes (its test ends) or it is killed.
//
// Standard methods, in the shapes a node answers: getLatestBlockhash,
// isBlockhashValid, getBlockHeight, getSlot, getAccountInfo (base64 and
// jsonParsed for token accounts and mints), getBalance,
// getTokenAccountBalance, getMinimumBalanceForRentExemption,
// simulateTransaction, sendTransaction, getSignatureStatuses,
// getTransaction (with the token balances before and after, as a node's
// meta has them), getSignaturesForAddress (newest first, `before` and
// `limit`). Test control, not part of Solana's API: litesvm_airdrop,
// litesvm_setAccount, litesvm_expireBlockhash, litesvm_holdConfirmations
// (sendTransaction lands the transaction but getSignatureStatuses reports
// it as unknown until released: a host that dies between broadcast and
// confirmation), litesvm_dropSends (sendTransaction answers a signature
// and lands nothing: a transaction lost on its way). With
// LITESVM_REQUEST_LOG set, every request body is appended to that file.
import http from 'node:http';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { LiteSVM } from 'litesvm';
import { address, getBase58Decoder, getCompiledTransactionMessageDecoder, getTransactionDecoder, lamports } from '@solana/kit';

const require = createRequire(import.meta.url);
const svm = new LiteSVM().withTransactionHistory(100000n);
const b58 = getBase58Decoder(); // bytes -> string
const txDecoder = getTransactionDecoder();
const messageDecoder = getCompiledTransactionMessageDecoder();
const TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
const MEMO = 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr';

// LiteSVM's error enums are const enums (erased at run time): read the
// names from its own declarations, so every error prints as a node does
function enumNames(name) {
  const dts = fs.readFileSync(require.resolve('litesvm/dist/internal.d.ts'), 'utf8');
  const m = dts.match(new RegExp(`enum ${name} \\{([^}]*)\\}`));
  const out = {};
  for (const [, k, v] of (m ? m[1] : '').matchAll(/(\w+)\s*=\s*(\d+)/g)) out[Number(v)] = k;
  return out;
}
const txErrors = enumNames('TransactionErrorFieldless');
const ixErrors = enumNames('InstructionErrorFieldless');

function rpcError(err) {
  if (typeof err === 'number') return txErrors[err] ?? `TransactionError${err}`;
  if (err && typeof err.index === 'number' && typeof err.err === 'function') {
    const e = err.err();
    let inner;
    if (typeof e === 'number') inner = ixErrors[e] ?? `InstructionError${e}`;
    else if (e && typeof e.code === 'number') inner = { Custom: e.code };
    else inner = String(e);
    return { InstructionError: [err.index, inner] };
  }
  if (err && typeof err.accountIndex === 'number') return { InsufficientFundsForRent: { account_index: err.accountIndex } };
  return String(err);
}

// block height: LiteSVM keeps one blockhash until it is expired; a
// blockhash is valid for 150 blocks, so expiring one moves the height past
// the lastValidBlockHeight it was given with
let height = 1000n;
let hashHeight = height;
let slot = 5000n;
const landed = new Map(); // signature -> {slot, err, fee, wire, pre, post}
const byAddress = new Map(); // address -> signatures, oldest first
let holding = false;
const held = new Set();
let dropping = false;

const ctx = () => ({ context: { slot: Number(slot), apiVersion: '2.2.0' } });

function account(addr, encoding) {
  const a = svm.getAccount(address(addr));
  if (!a.exists) return null;
  const base = { lamports: Number(a.lamports), owner: a.programAddress, executable: a.executable, rentEpoch: 0, space: a.data.length };
  if (encoding === 'jsonParsed' && a.programAddress === TOKEN && a.data.length === 165) {
    return { ...base, data: { program: 'spl-token', parsed: { type: 'account', info: tokenInfo(a.data) }, space: 165 } };
  }
  if (encoding === 'jsonParsed' && a.programAddress === TOKEN && a.data.length === 82) {
    const d = Buffer.from(a.data);
    return { ...base, data: { program: 'spl-token', parsed: { type: 'mint', info: { decimals: d[44], isInitialized: d[45] === 1, supply: d.readBigUInt64LE(36).toString() } }, space: 82 } };
  }
  return { ...base, data: [Buffer.from(a.data).toString('base64'), 'base64'] };
}

function tokenInfo(data) {
  const d = Buffer.from(data);
  const mint = b58.decode(d.subarray(0, 32));
  const dec = decimalsOf(mint);
  const amount = d.readBigUInt64LE(64).toString();
  return { mint, owner: b58.decode(d.subarray(32, 64)), state: 'initialized', isNative: false,
    tokenAmount: { amount, decimals: dec, uiAmountString: ui(amount, dec), uiAmount: Number(ui(amount, dec)) } };
}

function decimalsOf(mint) {
  const m = svm.getAccount(address(mint));
  return m.exists && m.data.length === 82 ? m.data[44] : 0;
}

function ui(amount, dec) {
  const s = amount.padStart(dec + 1, '0');
  const whole = s.slice(0, s.length - dec), frac = s.slice(s.length - dec).replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : whole;
}

function decodeTx(b64) {
  return txDecoder.decode(Buffer.from(b64, 'base64'));
}

function feePayerOf(tx) {
  return Object.keys(tx.signatures)[0];
}

function staticKeys(tx) {
  return messageDecoder.decode(tx.messageBytes).staticAccounts;
}

// memoOf: the transaction's memos as a node's getSignaturesForAddress
// gives them ("[<length>] <text>", joined by "; "), null when none
function memoOf(tx) {
  const m = messageDecoder.decode(tx.messageBytes);
  const memos = m.instructions.filter((ix) => m.staticAccounts[ix.programAddressIndex] === MEMO)
    .map((ix) => `[${ix.data?.length ?? 0}] ${Buffer.from(ix.data ?? []).toString('utf8')}`);
  return memos.length ? memos.join('; ') : null;
}

// tokenBalances: the token accounts among keys, in a node's
// pre/postTokenBalances shape
function tokenBalances(keys) {
  const out = [];
  keys.forEach((k, accountIndex) => {
    const a = svm.getAccount(address(k));
    if (!a.exists || a.programAddress !== TOKEN || a.data.length !== 165) return;
    const info = tokenInfo(a.data);
    out.push({ accountIndex, mint: info.mint, owner: info.owner, programId: TOKEN, uiTokenAmount: info.tokenAmount });
  });
  return out;
}

// the chain stands in for devnet: its genesis hash is devnet's, so a
// host configured for devnet passes its preflight against it
const DEVNET_GENESIS = 'EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG';

const methods = {
  getGenesisHash: () => DEVNET_GENESIS,
  getLatestBlockhash: () => ({ ...ctx(), value: { blockhash: svm.latestBlockhash(), lastValidBlockHeight: Number(hashHeight + 150n) } }),
  isBlockhashValid: ([hash]) => ({ ...ctx(), value: hash === svm.latestBlockhash() }),
  getBlockHeight: () => Number(height),
  getSlot: () => Number(slot),
  getBalance: ([addr]) => ({ ...ctx(), value: Number(svm.getBalance(address(addr)) ?? 0n) }),
  getMinimumBalanceForRentExemption: ([len]) => Number(svm.minimumBalanceForRentExemption(BigInt(len))),
  getAccountInfo: ([addr, opts]) => ({ ...ctx(), value: account(addr, opts?.encoding) }),
  getTokenAccountBalance: ([addr]) => {
    const a = svm.getAccount(address(addr));
    if (!a.exists || a.data.length !== 165) throw { code: -32602, message: 'Invalid param: not a Token account' };
    const info = tokenInfo(a.data);
    return { ...ctx(), value: info.tokenAmount };
  },
  simulateTransaction: ([b64, opts]) => {
    if (opts?.encoding && opts.encoding !== 'base64') throw { code: -32602, message: 'base64 encoding only' };
    // sigVerify false (the official facilitator's, before it co-signs):
    // the fee payer's empty signature slot is not checked, as on a node
    const unsigned = opts?.sigVerify === false;
    if (unsigned) svm.withSigverify(false);
    let r;
    try {
      r = svm.simulateTransaction(decodeTx(b64));
    } finally {
      if (unsigned) svm.withSigverify(true);
    }
    if (typeof r.err === 'function') {
      const meta = r.meta();
      return { ...ctx(), value: { err: rpcError(r.err()), logs: meta.logs(), unitsConsumed: Number(meta.computeUnitsConsumed()), accounts: null } };
    }
    const meta = r.meta();
    return { ...ctx(), value: { err: null, logs: meta.logs(), unitsConsumed: Number(meta.computeUnitsConsumed()), accounts: null } };
  },
  sendTransaction: ([b64, opts]) => {
    if (opts?.encoding && opts.encoding !== 'base64') throw { code: -32602, message: 'base64 encoding only' };
    const tx = decodeTx(b64);
    const payer = feePayerOf(tx);
    if (dropping) return b58.decode(tx.signatures[payer]); // accepted, never landed
    const before = svm.getBalance(address(payer)) ?? 0n;
    const keys = staticKeys(tx);
    const pre = tokenBalances(keys);
    const r = svm.sendTransaction(tx);
    if (typeof r.err === 'function') {
      const meta = r.meta();
      throw { code: -32002, message: 'Transaction simulation failed', data: { err: rpcError(r.err()), logs: meta.logs() } };
    }
    const sig = b58.decode(r.signature());
    slot += 1n;
    height += 1n;
    landed.set(sig, { slot, err: null, fee: before - (svm.getBalance(address(payer)) ?? 0n), wire: b64, pre, post: tokenBalances(keys), memo: memoOf(tx) });
    for (const k of keys) {
      if (!byAddress.has(k)) byAddress.set(k, []);
      byAddress.get(k).push(sig);
    }
    if (holding) held.add(sig);
    return sig;
  },
  getSignatureStatuses: ([sigs]) => ({
    ...ctx(),
    value: sigs.map((s) => {
      const l = landed.get(s);
      if (!l || held.has(s)) return null;
      return { slot: Number(l.slot), confirmations: null, err: l.err, status: { Ok: null }, confirmationStatus: 'finalized' };
    }),
  }),
  getTransaction: ([sig]) => {
    const l = landed.get(sig);
    if (!l || held.has(sig)) return null;
    return { slot: Number(l.slot), blockTime: Math.floor(Date.now() / 1000),
      meta: { err: null, fee: Number(l.fee), preTokenBalances: l.pre, postTokenBalances: l.post }, transaction: [l.wire, 'base64'] };
  },
  getSignaturesForAddress: ([addr, opts]) => {
    const all = (byAddress.get(addr) ?? []).filter((s) => !held.has(s)).slice().reverse();
    let from = 0;
    if (opts?.before) {
      const i = all.indexOf(opts.before);
      from = i < 0 ? all.length : i + 1;
    }
    return all.slice(from, from + Math.min(opts?.limit ?? 1000, 1000)).map((s) => {
      const l = landed.get(s);
      return { signature: s, slot: Number(l.slot), err: l.err, memo: l.memo, blockTime: null, confirmationStatus: 'finalized' };
    });
  },
  litesvm_airdrop: ([addr, n]) => {
    const r = svm.airdrop(address(addr), lamports(BigInt(n)));
    if (!r || typeof r.err === 'function') throw { code: -32000, message: 'airdrop failed' };
    return null;
  },
  litesvm_setAccount: ([addr, { lamports: n, data, owner }]) => {
    svm.setAccount({ address: address(addr), lamports: lamports(BigInt(n)), programAddress: address(owner),
      data: new Uint8Array(Buffer.from(data, 'base64')), executable: false, space: BigInt(Buffer.from(data, 'base64').length) });
    return null;
  },
  litesvm_expireBlockhash: () => {
    svm.expireBlockhash();
    height += 151n;
    hashHeight = height;
    slot += 151n;
    return null;
  },
  litesvm_dropSends: ([on]) => {
    dropping = !!on;
    return null;
  },
  litesvm_holdConfirmations: ([on]) => {
    holding = !!on;
    if (!holding) held.clear();
    return null;
  },
};

function answer(req) {
  const f = methods[req.method];
  if (!f) return { jsonrpc: '2.0', id: req.id, error: { code: -32601, message: 'Method not found' } };
  try {
    return { jsonrpc: '2.0', id: req.id, result: f(req.params ?? []) };
  } catch (e) {
    if (e && typeof e.code === 'number') return { jsonrpc: '2.0', id: req.id, error: e };
    return { jsonrpc: '2.0', id: req.id, error: { code: -32603, message: String(e && e.message || e) } };
  }
}

const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    // a test's record of what was sent to the chain (custody checks)
    if (process.env.LITESVM_REQUEST_LOG) fs.appendFileSync(process.env.LITESVM_REQUEST_LOG, body.replace(/\n/g, ' ') + '\n');
    let out;
    try {
      const msg = JSON.parse(body);
      out = Array.isArray(msg) ? msg.map(answer) : answer(msg);
    } catch {
      out = { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } };
    }
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(out));
  });
});
server.listen(Number(process.env.PORT || 0), '127.0.0.1', () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
