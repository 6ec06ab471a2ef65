// Requests to URLs that users give (imports by URL, zipurl, webhooks) must not become a way into the machine's own
// network (server-side request forgery): unless the operator allows it, every connection, redirects included, goes
// only to public addresses. Names are checked when they are resolved, at connection time, so a name that resolves
// to a public address once and a private one later (DNS rebinding) is caught too; literal addresses are checked
// before each hop. It runs on node:http rather than on a fetch engine of its own: a second fetch engine loaded
// into the process would take over the global fetch, that of the node client's transfers, too.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { type ClientRequest, type IncomingMessage, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP } from 'node:net';
import { Readable } from 'node:stream';

// Loopback, private, link-local, shared (CGNAT), benchmarking, multicast and reserved ranges.
const PRIVATE = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [['::', 127], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96]] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv6');
}

export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  return family === 0 || PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export class OutboundError extends Error {}

/** The refusal behind a failed outbound request (thrown directly, or the cause of the request's error). */
export function refusal(error: unknown): OutboundError | undefined {
  return [error, (error as { cause?: unknown } | undefined)?.cause].find((e): e is OutboundError => e instanceof OutboundError);
}

export interface OutboundPolicy {
  /** Let URLs reach loopback and private networks (a node on the same LAN, tests). */
  allowPrivate: boolean;
}

const MAX_REDIRECTS = 5;

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** The resolver every outbound connection uses: an answer with a private address is an error. */
function guardedLookup(hostname: string, options: { all?: boolean }, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    const blocked = addresses.find((entry) => isPrivateAddress(entry.address));
    if (blocked) return callback(new OutboundError(`${hostname} is on a private network (${blocked.address})`), []);
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0].address, addresses[0].family);
  });
}

// A peer that stops answering is given up on: 30 s for the headers, 60 s of silence inside a body.
const HEADERS_TIMEOUT_MS = 30_000;
const BODY_TIMEOUT_MS = 60_000;

export interface OutboundInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

function checkUrl(url: URL, policy: OutboundPolicy): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundError(`only http and https URLs are allowed (${url.protocol})`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!policy.allowPrivate && isIP(host) && isPrivateAddress(host)) throw new OutboundError(`${host} is on a private network`);
}

// Statuses whose responses have no body, which the Response constructor refuses one for.
const NO_BODY = new Set([101, 204, 205, 304]);

function toResponse(message: IncomingMessage, method: string): Response {
  const headers = new Headers();
  for (let i = 0; i < message.rawHeaders.length; i += 2) headers.append(message.rawHeaders[i], message.rawHeaders[i + 1]);
  const empty = method === 'HEAD' || NO_BODY.has(message.statusCode ?? 0);
  // Drained, with its errors swallowed: nothing reads a body that is not there.
  if (empty) message.resume().on('error', () => undefined);
  const body = empty ? null : (Readable.toWeb(message) as ReadableStream<Uint8Array>);
  return new Response(body, { status: message.statusCode, statusText: message.statusMessage, headers });
}

/** One request, without following redirects; errors of the connection carry the reason as their cause. */
function requestOnce(url: URL, init: OutboundInit, policy: OutboundPolicy): Promise<Response> {
  const method = init.method ?? 'GET';
  const headers = { ...init.headers, ...(init.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(init.body)) }) };
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    // No shared agent: a kept-alive connection opened under one policy must never serve a request under another.
    const request: ClientRequest = send(url, {
      method,
      headers,
      signal: init.signal,
      agent: false,
      timeout: HEADERS_TIMEOUT_MS,
      ...(policy.allowPrivate ? {} : { lookup: guardedLookup as never }),
    });
    let message: IncomingMessage | undefined;
    request.on('timeout', () => {
      const stalled = message ? `no data for ${BODY_TIMEOUT_MS / 1000} s` : `no answer within ${HEADERS_TIMEOUT_MS / 1000} s`;
      (message ?? request).destroy(new Error(stalled));
    });
    request.on('error', (error) => reject(new Error(`${url.host}: ${error.message}`, { cause: error })));
    request.once('response', (response) => {
      message = response;
      request.setTimeout(BODY_TIMEOUT_MS);
      try {
        resolve(toResponse(response, method));
      } catch (error) {
        response.destroy();
        reject(error);
      }
    });
    request.end(init.body);
  });
}

/** A request that follows up to 5 redirects, each checked under the policy; answers a WHATWG Response. */
export async function outboundFetch(url: string | URL, init: OutboundInit, policy: OutboundPolicy): Promise<Response> {
  let current = new URL(url);
  for (let hop = 0; ; hop++) {
    checkUrl(current, policy);
    const response = await requestOnce(current, init, policy);
    const location = response.headers.get('location');
    if (response.status < 300 || response.status >= 400 || !location) return response;
    await response.body?.cancel();
    if (hop >= MAX_REDIRECTS) throw new OutboundError(`more than ${MAX_REDIRECTS} redirects`);
    current = new URL(location, current);
    // As browsers do: a 303 (and a 301 or 302 after a POST) is followed with a GET, without the body.
    if (response.status === 303 || ((response.status === 301 || response.status === 302) && init.method === 'POST')) {
      init = { ...init, method: 'GET', body: undefined };
    }
  }
}
