// What the service benchmarks share: `aeromap serve` in a child process (so the client does not share its event
// loop), keep-alive HTTP requests, and latency figures with a fixed number of requests in flight.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Agent, type Dispatcher, request } from 'undici';

const bin = fileURLToPath(new URL('../../bin/aeromap', import.meta.url));

export interface RunningService {
  url: string;
  stop(): Promise<void>;
}

/** Starts `aeromap serve` with these settings (PORT 0 unless given) and answers its URL once it listens. */
export async function startService(settings: Record<string, string>): Promise<RunningService> {
  const env = { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...settings };
  const child: ChildProcess = spawn(bin, ['serve'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Aeromap is listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`aeromap serve exited with ${code}: ${output}`)));
  });
  return {
    url,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** Keep-alive HTTP over undici, whose client costs a fraction of node:http's CPU: on a 2-core machine the client
 * shares the cores with the server it measures. */
export class HttpClient {
  readonly agent: Agent;

  constructor(concurrency: number) {
    this.agent = new Agent({ connections: concurrency, pipelining: 1 });
  }

  /** The status and the raw body (left undecoded: tiles are binary, and decoding them would load the client). */
  async request(url: string, method = 'GET', token?: string, body?: object): Promise<{ status: number; body: Buffer }> {
    const reply = await request(url, {
      method: method as Dispatcher.HttpMethod,
      dispatcher: this.agent,
      headers: {
        ...(token ? { authorization: `JWT ${token}` } : {}),
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body && JSON.stringify(body),
    });
    return { status: reply.statusCode, body: Buffer.from(await reply.body.arrayBuffer()) };
  }

  async json<T>(url: string, method = 'GET', token?: string, body?: object): Promise<T> {
    const reply = await this.request(url, method, token, body);
    const text = reply.body.toString();
    if (reply.status >= 400) throw new Error(`${method} ${url} answered ${reply.status}: ${text}`);
    return JSON.parse(text) as T;
  }

  async login(baseUrl: string, username: string, password: string): Promise<string> {
    return (await this.json<{ token: string }>(`${baseUrl}/api/token-auth/`, 'POST', undefined, { username, password })).token;
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

export interface Latency {
  count: number;
  seconds: number;
  p50: number;
  p99: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * GETs a URL (or the i-th URL of a list) `requests` times with `concurrency` in flight, after as many warm-up
 * requests (up to 2,000: the server's code is compiled by then); stops early at the time limit.
 */
export async function measureLatency(
  client: HttpClient,
  target: string | ((i: number) => string),
  token: string,
  { requests, concurrency, timeLimitMs }: { requests: number; concurrency: number; timeLimitMs: number },
): Promise<Latency> {
  const urlOf = typeof target === 'string' ? () => target : target;
  const run = async (count: number, latencies: number[]) => {
    const started = performance.now();
    let issued = 0;
    const worker = async () => {
      while (issued < count && performance.now() - started < timeLimitMs) {
        const url = urlOf(issued++);
        const t0 = performance.now();
        const { status } = await client.request(url, 'GET', token);
        latencies.push(performance.now() - t0);
        if (status !== 200) throw new Error(`${url} answered ${status}`);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return (performance.now() - started) / 1000;
  };
  await run(Math.min(2000, requests), []);
  const latencies: number[] = [];
  const seconds = await run(requests, latencies);
  latencies.sort((a, b) => a - b);
  return { count: latencies.length, seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

export const LATENCY_HEADER = ['endpoint'.padEnd(36), 'requests', '   req/s', 'p50 ms'.padStart(8), 'p99 ms'.padStart(8)].join('  ');

export function latencyRow(name: string, result: Latency): string {
  return [
    name.padEnd(36),
    String(result.count).padStart(8),
    (result.count / result.seconds).toFixed(0).padStart(8),
    result.p50.toFixed(2).padStart(8),
    result.p99.toFixed(2).padStart(8),
  ].join('  ');
}
