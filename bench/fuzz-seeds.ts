// The API's fuzzing with seeds other than the suite's: each seed generates other requests, so that what one fixed
// seed never tries is tried here. Prints, per database and seed, the requests sent and whether every answer was
// as documented (no server error, no undocumented status code, no body outside its schema), and the failing
// reports in full. Outside the suite's time: about a minute per seed and database on two cores.
//   npx tsx bench/fuzz-seeds.ts [--seeds 2-11] [--backends sqlite,postgres]
import { parseArgs } from 'node:util';
import { type Backend, startService } from '../test/service/helpers.ts';
import { fuzz, summaryOf } from '../test/service/schemathesis.ts';

const { values: args } = parseArgs({
  options: { seeds: { type: 'string', default: '2-11' }, backends: { type: 'string', default: 'sqlite,postgres' } },
});
const [first, last = first] = (args.seeds ?? '').split('-').map(Number);
const seeds = Array.from({ length: last - first + 1 }, (_, i) => first + i);

let failures = 0;
for (const backend of (args.backends ?? '').split(',').filter(Boolean) as Backend[]) {
  const t = await startService(backend);
  try {
    const { client } = await t.createUser('fuzzed');
    for (const seed of seeds) {
      for (const [who, token] of [['superuser', t.admin.token], ['ordinary user', client.token]] as const) {
        const started = Date.now();
        const run = await fuzz(t.url, token as string, t.dataDir, seed);
        const seconds = ((Date.now() - started) / 1000).toFixed(0);
        console.log(`${backend} seed ${seed} ${who}: ${run.generated} requests, ${run.passed ? 'as documented' : 'FAILED'} (${seconds} s)`);
        if (!run.passed) {
          failures++;
          console.log(run.report);
        } else if (seed === seeds[0]) console.log(summaryOf(run.report));
      }
    }
  } finally {
    await t.close();
  }
}
console.log(`${failures} failing runs`);
process.exitCode = failures ? 1 : 0;
