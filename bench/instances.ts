// Two service instances on one PostgreSQL: a token signed in on one is used on both, and mixed reads (project
// list and detail, task list and detail) arrive at a fixed rate, alternately at each, for a while. Prints the
// requests, errors, p50 and p99 per instance; the target is p99 under 50 ms with no error at 200 requests/s.
//
//   npx tsx bench/instances.ts [--rate 200] [--seconds 60]
//
// PostgreSQL: AEROMAP_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test); the benchmark works in
// a schema of its own and drops it afterwards. The instances share that schema, SECRET_KEY and a data folder.
import { parseArgs } from 'node:util';
import { isolatedDatabase } from '../test/service/helpers.ts';
import { HttpClient, startService } from './lib/service.ts';

const { values: args } = parseArgs({
  options: { rate: { type: 'string', default: '200' }, seconds: { type: 'string', default: '60' } },
});
const rate = Number(args.rate);
const seconds = Number(args.seconds);
const POSTGRES_URL = process.env.AEROMAP_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function main(): Promise<void> {
  const database = await isolatedDatabase('postgres', POSTGRES_URL);
  const settings = {
    DATA_DIR: database.dataDir,
    DATABASE_URL: database.databaseUrl as string,
    SECRET_KEY: 'bench-instances',
    EMBEDDED_NODE: 'false',
    AEROMAP_ADMIN_USERNAME: 'bench',
    AEROMAP_ADMIN_PASSWORD: 'bench',
  };
  const instances = await Promise.all([startService(settings), startService(settings)]);
  const client = new HttpClient(64);
  try {
    const [a, b] = instances.map((instance) => instance.url);
    const token = await client.login(a, 'bench', 'bench');
    let projectId = 0;
    for (let i = 0; i < 20; i++) {
      projectId = (await client.json<{ id: number }>(`${a}/api/projects/`, 'POST', token, { name: `Project ${i}` })).id;
    }
    let taskId = '';
    for (let i = 0; i < 10; i++) {
      const form = new FormData();
      form.append('name', `Task ${i}`);
      form.append('partial', 'true');
      const created = await fetch(`${b}/api/projects/${projectId}/tasks/`, { method: 'POST', headers: { authorization: `JWT ${token}` }, body: form });
      if (created.status !== 201) throw new Error(`the second instance refused the first's token: ${created.status}`);
      taskId = ((await created.json()) as { id: string }).id;
    }
    const paths = ['/api/projects/', `/api/projects/${projectId}/`, `/api/projects/${projectId}/tasks/`, `/api/projects/${projectId}/tasks/${taskId}/`];
    const latencies: number[][] = [[], []];
    const errors = [0, 0];
    const pending: Promise<void>[] = [];
    const started = performance.now();
    const total = Math.round(rate * seconds);
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
      const which = i % 2;
      const url = `${instances[which].url}${paths[Math.floor(i / 2) % paths.length]}`;
      pending.push(
        (async () => {
          const t0 = performance.now();
          try {
            const { status } = await client.request(url, 'GET', token);
            if (status !== 200) errors[which] += 1;
          } catch {
            errors[which] += 1;
          }
          latencies[which].push(performance.now() - t0);
        })(),
      );
    }
    await Promise.all(pending);
    const achieved = total / ((performance.now() - started) / 1000);
    console.log(`two instances on one PostgreSQL, mixed reads (${paths.length} kinds) at ${rate}/s for ${seconds} s (achieved ${achieved.toFixed(0)}/s)`);
    console.log('target: p99 under 50 ms, no errors');
    console.log(`${'instance'.padEnd(10)}${'requests'.padStart(10)}${'errors'.padStart(8)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}`);
    for (const which of [0, 1]) {
      const sorted = latencies[which].sort((x, y) => x - y);
      console.log(
        `${String.fromCharCode(65 + which).padEnd(10)}${String(sorted.length).padStart(10)}${String(errors[which]).padStart(8)}` +
          `${percentile(sorted, 50).toFixed(2).padStart(9)}${percentile(sorted, 99).toFixed(2).padStart(9)}`,
      );
    }
  } finally {
    await client.close();
    await Promise.all(instances.map((instance) => instance.stop()));
    await database.drop();
  }
}

await main();
