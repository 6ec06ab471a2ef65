// API benchmark: requests per second and p50/p99 latency of the reads clients poll: the project list and one
// project (100 projects in the database), a project's task list and one task (20 tasks in it), on SQLite and on
// PostgreSQL, over loopback, with 8 and 64 requests in flight.
//
//   npx tsx bench/api.ts [--time-limit 5] [--requests 50000] [--concurrency 8,64] [--backends sqlite,postgres]
//
// Each endpoint is measured for --time-limit seconds (or --requests requests, whichever ends first) after a
// warm-up of 2,000: windows of a fraction of a second (5,000 requests) mostly measured how warm the JIT was, and
// their p99 moved by a factor of two between runs.
// The service runs as `aeromap serve` in a child process, so that the client does not share its event loop.
// PostgreSQL: AEROMAP_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test); the benchmark
// works in a schema of its own and drops it afterwards.
import { parseArgs } from 'node:util';
import { type Backend, isolatedDatabase } from '../test/service/helpers.ts';
import { HttpClient, LATENCY_HEADER, latencyRow, measureLatency, startService } from './lib/service.ts';

const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '50000' },
    concurrency: { type: 'string', default: '8,64' },
    backends: { type: 'string', default: 'sqlite,postgres' },
    'time-limit': { type: 'string', default: '5' },
  },
});
const concurrencies = (args.concurrency ?? '8').split(',').map(Number);
const timeLimitMs = Number(args['time-limit']) * 1000;
const PROJECTS = 100;
const TASKS = 20;
const POSTGRES_URL = process.env.AEROMAP_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const client = new HttpClient(Math.max(...concurrencies));

async function benchBackend(backend: Backend): Promise<string[]> {
  const database = await isolatedDatabase(backend, POSTGRES_URL);
  const service = await startService({
    DATA_DIR: database.dataDir,
    EMBEDDED_NODE: 'false',
    AEROMAP_ADMIN_USERNAME: 'bench',
    AEROMAP_ADMIN_PASSWORD: 'bench',
    ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl, SECRET_KEY: 'bench' } : {}),
  });
  try {
    const token = await client.login(service.url, 'bench', 'bench');
    let lastId = 0;
    for (let i = 0; i < PROJECTS; i++) {
      lastId = (await client.json<{ id: number }>(`${service.url}/api/projects/`, 'POST', token, { name: `Project ${i}`, description: 'bench' })).id;
    }
    const tasksUrl = `${service.url}/api/projects/${lastId}/tasks/`;
    let taskId = '';
    for (let i = 0; i < TASKS; i++) {
      const form = new FormData();
      form.append('name', `Task ${i}`);
      form.append('partial', 'true');
      const created = await fetch(tasksUrl, { method: 'POST', headers: { authorization: `JWT ${token}` }, body: form });
      if (created.status !== 201) throw new Error(`task creation answered ${created.status}: ${await created.text()}`);
      taskId = ((await created.json()) as { id: string }).id;
    }
    const rows: string[] = [];
    for (const concurrency of concurrencies) {
      const load = { requests: Number(args.requests), concurrency, timeLimitMs };
      for (const [name, url] of [
        ['GET /api/projects/', `${service.url}/api/projects/`],
        ['GET /api/projects/{id}/', `${service.url}/api/projects/${lastId}/`],
        ['GET .../tasks/', tasksUrl],
        ['GET .../tasks/{id}/', `${tasksUrl}${taskId}/`],
      ]) {
        rows.push(latencyRow(`${backend} ${concurrency} ${name}`, await measureLatency(client, url, token, load)));
      }
    }
    return rows;
  } finally {
    await service.stop();
    await database.drop();
  }
}

console.log(`${PROJECTS} projects, ${TASKS} tasks in one, ${args['time-limit']} s (at most ${args.requests} requests) per endpoint after a warm-up, ${concurrencies.join(' and ')} in flight, loopback`);
console.log('targets: SQLite project list >= 3,000/s p99 <= 10 ms, project detail >= 5,000/s p99 <= 5 ms, tasks the same; PostgreSQL within 1.5 times');
console.log(LATENCY_HEADER);
for (const backend of (args.backends ?? '').split(',').filter(Boolean) as Backend[]) {
  for (const row of await benchBackend(backend)) console.log(row);
}
await client.close();
