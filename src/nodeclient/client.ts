// HTTP client for one NodeODM-compatible node (NodeODM API 2.x): an Aeromap node, NodeODM, ClusterODM.
// Requests carry the node's token as ?token=; every request has a timeout, so a hung node cannot hold a caller.
import type { TSchema, Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { NodeConnectionError, NodeResponseError, NodeServerError } from './errors.ts';
import { NodeInfo, NodeOptions } from './types.ts';

export interface NodeAddress {
  hostname: string;
  port: number;
  token?: string;
}

export interface NodeClientOptions {
  /** Limit for quick calls such as /info and /options (WebODM's clients use 5 s there). */
  quickTimeoutMs?: number;
}

export class NodeClient {
  readonly baseUrl: URL;
  private readonly token: string;
  private readonly quickTimeoutMs: number;

  constructor(address: NodeAddress, options: NodeClientOptions = {}) {
    // NodeODM clients reach a node on port 443 over TLS and elsewhere over plain HTTP.
    const scheme = address.port === 443 ? 'https' : 'http';
    const host = address.hostname.includes(':') && !address.hostname.startsWith('[') ? `[${address.hostname}]` : address.hostname;
    this.baseUrl = new URL(`${scheme}://${host}:${address.port}/`);
    this.token = address.token ?? '';
    this.quickTimeoutMs = options.quickTimeoutMs ?? 5_000;
  }

  get label(): string {
    return this.baseUrl.host;
  }

  async info(): Promise<NodeInfo> {
    return this.getJson('info', NodeInfo, this.quickTimeoutMs);
  }

  async options(): Promise<Static<typeof NodeOptions>> {
    return this.getJson('options', NodeOptions, this.quickTimeoutMs);
  }

  private url(path: string): URL {
    const url = new URL(path, this.baseUrl);
    if (this.token) url.searchParams.set('token', this.token);
    return url;
  }

  private async getJson<T extends TSchema>(path: string, schema: T, timeoutMs: number): Promise<Static<T>> {
    const body = await this.request(path, { method: 'GET' }, timeoutMs);
    if (!Value.Check(schema, body)) {
      const first = Value.Errors(schema, body).First();
      throw new NodeServerError(`${this.label}: unexpected answer to /${path}${first ? ` (${first.path || '/'}: ${first.message})` : ''}`);
    }
    return body;
  }

  private async request(path: string, init: RequestInit, timeoutMs: number): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(this.url(path), { ...init, signal: AbortSignal.timeout(timeoutMs) });
    } catch (error) {
      const reason = (error as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : describeCause(error);
      throw new NodeConnectionError(`${this.label}: ${reason}`, { cause: error });
    }
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new NodeServerError(`${this.label}: /${path} answered HTTP ${response.status} with a body that is not JSON`);
    }
    const error = (body as { error?: unknown } | null)?.error;
    if (typeof error === 'string') throw new NodeResponseError(`${this.label}: ${error}`);
    if (response.status === 401 || response.status === 403) throw new NodeResponseError(`${this.label}: unauthorized`);
    if (!response.ok) throw new NodeServerError(`${this.label}: /${path} answered HTTP ${response.status}`);
    return body;
  }
}

function describeCause(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}
