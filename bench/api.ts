// API benchmark: requests per second and p50/p99 latency of GET /api/projects/ and GET /api/projects/{id}/
// with 100 projects in the database, on SQLite and on PostgreSQL, over loopback.
//
//   npx tsx bench/api.ts [--requests 2000] [--concurrency 8] [--backends sqlite,postgres]
//
// The service runs as `aeromap serve` in a child process, so that the client does not share its event loop.
// PostgreSQL: AEROMAP_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test); the benchmark
// works in a schema of its own and drops it afterwards.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type Backend, isolatedDatabase } from '../test/service/helpers.ts';

const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '8' },
    backends: { type: 'string', default: 'sqlite,postgres' },
    'time-limit': { type: 'string', default: '30' },
  },
});
const REQUESTS = Number(args.requests);
const CONCURRENCY = Number(args.concurrency);
const TIME_LIMIT_MS = Number(args['time-limit']) * 1000;
const PROJECTS = 100;
const POSTGRES_URL = process.env.AEROMAP_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const bin = fileURLToPath(new URL('../bin/aeromap', import.meta.url));
const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });

interface Target {
  url: string;
  stop(): Promise<void>;
}

function request(url: string, method = 'GET', token?: string, body?: object): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const payload = body && JSON.stringify(body);
    const req = http.request(
      url,
      {
        method,
        agent,
        headers: {
          ...(token ? { authorization: `JWT ${token}` } : {}),
          ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

async function startServer(backend: Backend): Promise<Target> {
  const database = await isolatedDatabase(backend, POSTGRES_URL);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    DATA_DIR: database.dataDir,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    EMBEDDED_NODE: 'false',
    AEROMAP_ADMIN_USERNAME: 'bench',
    AEROMAP_ADMIN_PASSWORD: 'bench',
  };
  if (database.databaseUrl) env.DATABASE_URL = database.databaseUrl;
  const child: ChildProcess = spawn(bin, ['serve'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`aeromap serve exited with ${code}: ${output}`)));
  });
  return {
    url,
    async stop() {
      child.kill('SIGTERM');
      await once(child, 'exit');
      await database.drop();
    },
  };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Runs the requests with a fixed number in flight; stops early at the time limit. */
async function measure(url: string, token: string): Promise<{ count: number; seconds: number; p50: number; p99: number }> {
  const latencies: number[] = [];
  const started = performance.now();
  let issued = 0;
  const worker = async () => {
    while (issued < REQUESTS && performance.now() - started < TIME_LIMIT_MS) {
      issued++;
      const t0 = performance.now();
      const { status } = await request(url, 'GET', token);
      latencies.push(performance.now() - t0);
      if (status !== 200) throw new Error(`${url} answered ${status}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { count: latencies.length, seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function benchBackend(backend: Backend): Promise<string[]> {
  const target = await startServer(backend);
  try {
    const login = await request(`${target.url}/api/token-auth/`, 'POST', undefined, { username: 'bench', password: 'bench' });
    const { token } = JSON.parse(login.text) as { token: string };
    let lastId = 0;
    for (let i = 0; i < PROJECTS; i++) {
      const reply = await request(`${target.url}/api/projects/`, 'POST', token, { name: `Project ${i}`, description: 'bench' });
      lastId = (JSON.parse(reply.text) as { id: number }).id;
    }
    const rows: string[] = [];
    for (const [name, url] of [
      ['GET /api/projects/', `${target.url}/api/projects/`],
      ['GET /api/projects/{id}/', `${target.url}/api/projects/${lastId}/`],
    ]) {
      const warmup = Math.min(200, REQUESTS);
      for (let i = 0; i < warmup; i++) await request(url, 'GET', token);
      const result = await measure(url, token);
      rows.push(
        [backend.padEnd(9), name.padEnd(24), String(result.count).padStart(8), (result.count / result.seconds).toFixed(0).padStart(8),
          result.p50.toFixed(2).padStart(8), result.p99.toFixed(2).padStart(8)].join('  '),
      );
    }
    return rows;
  } finally {
    await target.stop();
  }
}

console.log(`${PROJECTS} projects, ${REQUESTS} requests per endpoint, ${CONCURRENCY} in flight, loopback`);
console.log(['backend  ', 'endpoint'.padEnd(24), 'requests', '   req/s', 'p50 ms'.padStart(8), 'p99 ms'.padStart(8)].join('  '));
for (const backend of (args.backends ?? '').split(',').filter(Boolean) as Backend[]) {
  for (const row of await benchBackend(backend)) console.log(row);
}
agent.destroy();
