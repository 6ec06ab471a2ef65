// The whole API fuzzed from its own OpenAPI document by schemathesis (installed in engine/.venv by `make`): every
// operation driven with generated valid and invalid input, and no answer may be a server error, a status code the
// document does not list for the operation, or a body outside the operation's response schema. Its report is
// printed with the test output. As a superuser, who reaches every operation and query, on PostgreSQL, whose types
// are the stricter; what other callers may do is permission-matrix.test.ts's, on both databases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestService, startService } from './helpers.ts';
import { fuzz, summaryOf } from './schemathesis.ts';

const MIN_REQUESTS = 1000;
// Test cases per operation in the random phases (fuzzing, stateful). The coverage phase, which sends most of the
// requests (its edge cases of every parameter), does not depend on it. AEROMAP_FUZZ_EXAMPLES=12 for a longer run.
const EXAMPLES = Number(process.env.AEROMAP_FUZZ_EXAMPLES ?? 4);

describe('the API under a fuzzer (postgres)', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService('postgres');
  });
  afterAll(() => t?.close());

  it('answers every generated request as documented, as a superuser', async () => {
    const { passed, generated, report } = await fuzz(t.url, t.admin.token as string, t.dataDir, 1, EXAMPLES); // its cache goes with the test's data
    console.log(`schemathesis on postgres as a superuser:\n${passed ? summaryOf(report) : report}`);
    expect(passed, report).toBe(true);
    expect(generated).toBeGreaterThanOrEqual(MIN_REQUESTS);
  }, 600_000);
});
