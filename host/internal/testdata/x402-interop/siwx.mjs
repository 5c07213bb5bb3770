#!/usr/bin/env node
// Interop client: signs in to a free pre-check with x402's sign-in-with-x
// extension using ONLY the official x402 JavaScript packages
// (@x402/extensions/sign-in-with-x, @x402/fetch, @x402/core 2.27.0) and
// @solana/kit 5.x for the wallet: nobody's code here builds the message,
// the signature or the header.
//
// Setup (Node >= 20.18):
//   cd host/internal/testdata/x402-interop && npm ci
// Usage:
//   node siwx.mjs --url <pre-check URL> --body <json file> --wallet <keypair file>
//                 [--mode hook|fetch]
//
// --mode hook (the default) is the official example's client
// (examples/typescript/clients/sign-in-with-x): an x402HTTPClient whose
// onPaymentRequired hook is createSIWxClientHook(signer), under
// wrapFetchWithPayment; no payment scheme is registered, so a 402 the
// sign-in does not turn into an answer makes the client throw instead of
// paying. --mode fetch is wrapFetchWithSIWx(fetch, signer): it signs in
// when a 402's PAYMENT-REQUIRED declares the extension on the chain of
// its first requirement.
//
// --wallet is a Solana CLI keypair file: a JSON array of 64 numbers.
//
// stdout: exactly one line of JSON
//   {"status": <number>, "body": <parsed JSON body or null>,
//    "proof": <the SIGN-IN-WITH-X the client sent, decoded, or null>,
//    "requests": <how many requests the client sent>}
// Exit 0 when any HTTP response was received (whatever its status);
// exit 1 with a short message on stderr when the client threw;
// exit 2 on bad command-line arguments / unreadable input files.

import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";

import { createKeyPairSignerFromBytes } from "@solana/kit";
import { createSIWxClientHook, wrapFetchWithSIWx, SIGN_IN_WITH_X } from "@x402/extensions/sign-in-with-x";
import { wrapFetchWithPayment, x402Client, x402HTTPClient } from "@x402/fetch";

function fail(code, msg) {
  process.stderr.write(`siwx.mjs: ${msg}\n`);
  process.exit(code);
}

let args;
try {
  ({ values: args } = parseArgs({
    options: {
      url: { type: "string" },
      body: { type: "string" },
      wallet: { type: "string" },
      mode: { type: "string", default: "hook" },
    },
    strict: true,
  }));
} catch (err) {
  fail(2, err.message);
}
for (const k of ["url", "body", "wallet"]) {
  if (!args[k]) fail(2, `missing --${k}`);
}
if (args.mode !== "hook" && args.mode !== "fetch") fail(2, "--mode: hook or fetch");

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

// the wrappers hand their fetch a Request: what the client sent is read
// there (the proof, decoded for the test to check; never printed raw)
let proof = null;
let requests = 0;
const seeingFetch = (input, init) => {
  requests++;
  const headers = input instanceof Request ? input.headers : new Headers(init?.headers);
  const sent = headers.get(SIGN_IN_WITH_X);
  if (sent) proof = JSON.parse(Buffer.from(sent, "base64").toString("utf8"));
  return fetch(input, init);
};

let out;
try {
  const signer = await createKeyPairSignerFromBytes(secret);
  let signedFetch;
  if (args.mode === "hook") {
    const httpClient = new x402HTTPClient(new x402Client());
    httpClient.onPaymentRequired(createSIWxClientHook(signer));
    signedFetch = wrapFetchWithPayment(seeingFetch, httpClient);
  } else {
    signedFetch = wrapFetchWithSIWx(seeingFetch, signer);
  }
  const res = await signedFetch(args.url, {
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
      process.stderr.write(`siwx.mjs: response body is not JSON (${text.length} bytes)\n`);
    }
  }
  out = { status: res.status, body, proof, requests };
} catch (err) {
  const cause = err?.cause ? ` (cause: ${err.cause.message ?? err.cause})` : "";
  fail(1, `${err?.message ?? err}${cause}`);
}

process.stdout.write(JSON.stringify(out) + "\n", () => process.exit(0));
