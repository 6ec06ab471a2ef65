// API benchmark: requests per second and p50/p99 latency of GET /api/projects/ and GET /api/projects/{id}/
// with 100 projects in the database, on SQLite and on PostgreSQL, over loopback.
//
//   npx tsx bench/api.ts [--requests 2000] [--concurrency 8] [--backends sqlite,postgres]
//
// The service runs as `aeromap serve` in a child process, so that the client does not share its event loop.
// PostgreSQL: AEROMAP_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test); the benchmark
// works in a schema of its own and drops it afterwards.
import { parseArgs } from 'node:util';
import { type Backend, isolatedDatabase } from '../test/service/helpers.ts';
import { HttpClient, LATENCY_HEADER, latencyRow, measureLatency, startService } from './lib/service.ts';

const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '8' },
    backends: { type: 'string', default: 'sqlite,postgres' },
    'time-limit': { type: 'string', default: '30' },
  },
});
const load = { requests: Number(args.requests), concurrency: Number(args.concurrency), timeLimitMs: Number(args['time-limit']) * 1000 };
const PROJECTS = 100;
const POSTGRES_URL = process.env.AEROMAP_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const client = new HttpClient(load.concurrency);

async function benchBackend(backend: Backend): Promise<string[]> {
  const database = await isolatedDatabase(backend, POSTGRES_URL);
  const service = await startService({
    DATA_DIR: database.dataDir,
    EMBEDDED_NODE: 'false',
    AEROMAP_ADMIN_USERNAME: 'bench',
    AEROMAP_ADMIN_PASSWORD: 'bench',
    ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
  });
  try {
    const token = await client.login(service.url, 'bench', 'bench');
    let lastId = 0;
    for (let i = 0; i < PROJECTS; i++) {
      lastId = (await client.json<{ id: number }>(`${service.url}/api/projects/`, 'POST', token, { name: `Project ${i}`, description: 'bench' })).id;
    }
    const rows: string[] = [];
    for (const [name, url] of [
      ['GET /api/projects/', `${service.url}/api/projects/`],
      ['GET /api/projects/{id}/', `${service.url}/api/projects/${lastId}/`],
    ]) {
      rows.push(latencyRow(`${backend} ${name}`, await measureLatency(client, url, token, load)));
    }
    return rows;
  } finally {
    await service.stop();
    await database.drop();
  }
}

console.log(`${PROJECTS} projects, ${load.requests} requests per endpoint, ${load.concurrency} in flight, loopback`);
console.log(LATENCY_HEADER);
for (const backend of (args.backends ?? '').split(',').filter(Boolean) as Backend[]) {
  for (const row of await benchBackend(backend)) console.log(row);
}
client.close();
