#!/usr/bin/env node
// Interop client: pays an x402 v2 "exact" route on Solana using ONLY the
// official x402 JavaScript client packages (@x402/fetch, @x402/svm,
// @x402/core, @x402/extensions 2.27.0) plus @solana/kit 5.x for the signer.
//
// Setup (Node >= 20.18; @solana/kit 5.5.1 requires it):
//   cd host/internal/testdata/x402-interop && npm ci
// Usage:
//   node pay.mjs --url <paid endpoint URL> --body <json file> \
//                --wallet <keypair file> --rpc <JSON-RPC http url> \
//                [--no-spend-controls] [--save-payment <file>]
//                [--payment-id <id>]
//
// --wallet is a Solana CLI keypair file: a JSON array of 64 numbers
// (32-byte Ed25519 seed followed by the 32-byte public key).
// --rpc is passed to ExactSvmScheme as rpcUrl; the official client uses it
// for getAccountInfo(asset) and, only when the 402 has no valid
// extra.recentBlockhash, getLatestBlockhash.
// --save-payment writes the PAYMENT-SIGNATURE header value the client
// sent on its paid retry (nothing when it never paid), so a test can send
// the very same payment again. It is written also when the client threw
// after sending it (e.g. the connection dropped before the answer came).
// --payment-id is an x402 `payment-identifier` id (16-128 of
// [A-Za-z0-9_-], e.g. "pay_" + 32 hex digits): every payment the client
// builds carries it, through the official client hook
// (appendPaymentIdentifierToExtensions from
// @x402/extensions/payment-identifier in onBeforePaymentCreation). As in
// the official package, it is added only when the 402 declares the
// extension (a note on stderr otherwise); rerun with the same id after a
// lost answer to have the server recognise the retry.
//
// stdout: exactly one line of JSON
//   {"status": <number>, "body": <parsed JSON body or null>,
//    "paymentResponse": <decoded PAYMENT-RESPONSE JSON or null>}
// Exit 0 when any HTTP response was received (whatever its status);
// exit 1 with a short message on stderr when the client threw;
// exit 2 on bad command-line arguments / unreadable input files.

import { readFile, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";

import { createKeyPairSignerFromBytes } from "@solana/kit";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import {
  appendPaymentIdentifierToExtensions,
  isValidPaymentId,
  PAYMENT_IDENTIFIER,
} from "@x402/extensions/payment-identifier";
import {
  decodePaymentResponseHeader,
  wrapFetchWithPayment,
  x402Client,
} from "@x402/fetch";

function fail(code, msg) {
  process.stderr.write(`pay.mjs: ${msg}\n`);
  process.exit(code);
}

let args;
try {
  ({ values: args } = parseArgs({
    options: {
      url: { type: "string" },
      body: { type: "string" },
      wallet: { type: "string" },
      rpc: { type: "string" },
      "no-spend-controls": { type: "boolean", default: false },
      "save-payment": { type: "string" },
      "payment-id": { type: "string" },
    },
    strict: true,
  }));
} catch (err) {
  fail(2, err.message);
}
for (const k of ["url", "body", "wallet", "rpc"]) {
  if (!args[k]) fail(2, `missing --${k}`);
}
const paymentId = args["payment-id"];
if (paymentId !== undefined && !isValidPaymentId(paymentId)) {
  fail(2, `--payment-id: ${JSON.stringify(paymentId)} is not 16-128 letters, digits, hyphens or underscores`);
}

let bodyText;
let secret;
try {
  bodyText = await readFile(args.body, "utf8");
  JSON.parse(bodyText); // must be valid JSON; sent verbatim
  const arr = JSON.parse(await readFile(args.wallet, "utf8"));
  if (!Array.isArray(arr) || arr.length !== 64 || !arr.every((n) => Number.isInteger(n) && n >= 0 && n <= 255)) {
    throw new Error(`${args.wallet}: expected a JSON array of 64 byte values`);
  }
  secret = Uint8Array.from(arr);
} catch (err) {
  fail(2, err.message);
}

function headerJSON(res, name) {
  const v = res.headers.get(name); // Headers.get is case-insensitive
  if (!v) return null;
  try {
    return decodePaymentResponseHeader(v); // std base64 -> JSON
  } catch (err) {
    process.stderr.write(`pay.mjs: cannot decode ${name} header: ${err.message}\n`);
    return null;
  }
}

// the PAYMENT-SIGNATURE the client sent on its paid retry, for --save-payment
let sentPayment = null;
async function savePayment() {
  if (args["save-payment"] && sentPayment !== null) await writeFile(args["save-payment"], sentPayment, { mode: 0o600 });
}

let out;
try {
  // Rejects a keypair whose last 32 bytes are not the seed's public key.
  const signer = await createKeyPairSignerFromBytes(secret);

  const client = new x402Client();
  // registerExactSvmScheme() would not forward rpcUrl, so register the
  // scheme directly. "solana:*" covers mainnet, devnet and testnet CAIP-2 ids.
  client.register("solana:*", new ExactSvmScheme(signer, { rpcUrl: args.rpc }));

  // Spend controls stay ON by default. The client's default allow-list
  // (@x402/svm DEFAULT_ASSETS) already contains USDC on mainnet
  // (EPjF...Dt1v) and on devnet/testnet (4zMM...DncDU), capped at "$1" per
  // payment, so paying devnet USDC needs no change. Disabling them is ONLY
  // necessary for a mint outside that list (e.g. a locally created test
  // mint): otherwise the client throws "All payment requirements were
  // rejected by spendControls". Pass --no-spend-controls for that case.
  if (args["no-spend-controls"]) client.setSpendControls(false);

  // The payment-identifier extension, as the official client sets it:
  // the hook runs before every payment payload is built (a retry builds a
  // fresh one) and writes the id into the 402's declared extension, which
  // the client then echoes in the payload's extensions.
  if (paymentId !== undefined) {
    client.onBeforePaymentCreation(async ({ paymentRequired }) => {
      if (paymentRequired.extensions?.[PAYMENT_IDENTIFIER]) {
        appendPaymentIdentifierToExtensions(paymentRequired.extensions, paymentId);
      } else {
        process.stderr.write(`pay.mjs: the 402 does not declare ${PAYMENT_IDENTIFIER}: the payment carries no id\n`);
      }
    });
  }

  // the wrapper hands its fetch a Request; the paid retry is the one
  // carrying PAYMENT-SIGNATURE
  const seeingFetch = (input, init) => {
    const headers = input instanceof Request ? input.headers : new Headers(init?.headers);
    sentPayment = headers.get("PAYMENT-SIGNATURE") ?? sentPayment;
    return fetch(input, init);
  };
  const payFetch = wrapFetchWithPayment(args["save-payment"] ? seeingFetch : fetch, client);
  const res = await payFetch(args.url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: bodyText,
  });

  const text = await res.text();
  let body = null;
  if (text !== "") {
    try {
      body = JSON.parse(text);
    } catch {
      process.stderr.write(`pay.mjs: response body is not JSON (${text.length} bytes)\n`);
    }
  }
  const paymentResponse = headerJSON(res, "PAYMENT-RESPONSE") ?? headerJSON(res, "X-PAYMENT-RESPONSE");
  if (res.status === 402) {
    // Diagnostics only: a rejected payment carries the reason in a fresh
    // PAYMENT-REQUIRED header (error field) or in PAYMENT-RESPONSE.errorReason.
    const pr = headerJSON(res, "PAYMENT-REQUIRED");
    const reason = paymentResponse?.errorReason ?? pr?.error ?? "(no reason given)";
    process.stderr.write(`pay.mjs: payment not accepted: HTTP 402: ${reason}\n`);
  }
  await savePayment();
  out = { status: res.status, body, paymentResponse };
} catch (err) {
  const cause = err?.cause ? ` (cause: ${err.cause.message ?? err.cause})` : "";
  try {
    await savePayment();
  } catch (saveErr) {
    process.stderr.write(`pay.mjs: cannot save the payment: ${saveErr.message}\n`);
  }
  fail(1, `${err?.message ?? err}${cause}`);
}

process.stdout.write(JSON.stringify(out) + "\n", () => process.exit(0));
