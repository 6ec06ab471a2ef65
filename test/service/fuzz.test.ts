// The whole API fuzzed from its own OpenAPI document by schemathesis (installed in engine/.venv by `make`): every
// operation driven with generated valid and invalid input, and no answer may be a server error, a status code the
// document does not list for the operation, or a body outside the operation's response schema. Its report is
// printed with the test output. A superuser reaches every operation and query, so it runs on PostgreSQL, whose
// types are the stricter; an ordinary user, whose answers are mostly the permission checks, on SQLite.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestService, startService } from './helpers.ts';
import { fuzz, summaryOf } from './schemathesis.ts';

const MIN_REQUESTS = 1000;
// Test cases per operation in the random phases (fuzzing, stateful). The coverage phase, which sends most of the
// requests (its edge cases of every parameter), does not depend on it. AEROMAP_FUZZ_EXAMPLES=12 for a longer run.
const EXAMPLES = Number(process.env.AEROMAP_FUZZ_EXAMPLES ?? 4);

const RUNS = [
  { backend: 'postgres', who: 'superuser' },
  { backend: 'sqlite', who: 'ordinary user' },
] as const;

describe.each(RUNS)('the API under a fuzzer ($backend)', ({ backend, who }) => {
  let t: TestService;
  let user: string;
  beforeAll(async () => {
    t = await startService(backend);
    const { client } = await t.createUser('fuzzed');
    user = client.token as string;
  });
  afterAll(() => t?.close());

  it(`answers every generated request as documented, as a ${who}`, async () => {
    const token = who === 'superuser' ? (t.admin.token as string) : user;
    const { passed, generated, report } = await fuzz(t.url, token, t.dataDir, 1, EXAMPLES); // its cache goes with the test's data
    console.log(`schemathesis on ${backend} as a ${who}:\n${passed ? summaryOf(report) : report}`);
    expect(passed, report).toBe(true);
    expect(generated).toBeGreaterThanOrEqual(MIN_REQUESTS);
  }, 600_000);
});
