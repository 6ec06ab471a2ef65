// The whole API fuzzed from its own OpenAPI document by schemathesis (installed in engine/.venv by `make`), on
// SQLite and PostgreSQL, as a superuser and as an ordinary user: every operation driven with generated valid and
// invalid input, and no answer may be a server error, a status code the document does not list for the
// operation, or a body outside the operation's response schema. Its report is printed with the test output.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, type TestService, startService } from './helpers.ts';

const st = fileURLToPath(new URL('../../engine/.venv/bin/st', import.meta.url));
const CHECKS = 'not_a_server_error,status_code_conformance,response_schema_conformance';
const MIN_REQUESTS = 1000; // per user and database: 2,000 per database

async function fuzz(url: string, token: string, workDir: string): Promise<{ passed: boolean; generated: number; report: string }> {
  // A fixed seed: every run sends the same requests, so that a failure is reproducible. One worker: Hypothesis
  // describing its strategies from two threads at once trips CPython 3.11's ast module now and then.
  const args = ['run', `${url}/api/openapi.json`, '--header', `Authorization: JWT ${token}`, '--checks', CHECKS,
    '--max-examples', '12', '--seed', '1', '--no-color', '--request-timeout', '20', '--workers', '1',
    '--generation-database', 'none'];
  const { stdout, stderr, code } = await promisify(execFile)(st, args, { maxBuffer: 64 * 2 ** 20, cwd: workDir, env: { ...process.env, NO_COLOR: '1' } })
    .then((out) => ({ ...out, code: 0 }))
    .catch((error: { stdout: string; stderr: string; code: number }) => error);
  const report = `${stdout}${stderr}`;
  const generated = Number(/(\d+) generated/.exec(report)?.[1] ?? 0);
  return { passed: code === 0, generated, report };
}

/** Whether the run failed only inside schemathesis's own test-case generation (a rare, non-repeatable error of
 * Hypothesis's that its report calls a Runtime Error), every request it sent having passed every check. */
function generatorFailedAlone(report: string): boolean {
  const cases = /(\d+) generated, (\d+) passed/.exec(report);
  const errors = report.slice(report.lastIndexOf('Errors:'), report.lastIndexOf('Test cases:'));
  return cases !== null && cases[1] === cases[2] && /^\s*Errors:\s*\S+ Runtime Error: \d+\s*(Warnings:[\s\S]*)?$/.test(errors);
}

describe.each(BACKENDS)('the API under a fuzzer (%s)', (backend) => {
  let t: TestService;
  let user: string;
  beforeAll(async () => {
    t = await startService(backend);
    const { client } = await t.createUser('fuzzed');
    user = client.token as string;
  });
  afterAll(() => t?.close());

  it.each(['superuser', 'ordinary user'])('answers every generated request as documented, as a %s', async (who) => {
    const token = who === 'superuser' ? (t.admin.token as string) : user;
    let run = await fuzz(t.url, token, t.dataDir); // its cache goes with the test's data
    if (!run.passed && generatorFailedAlone(run.report)) {
      console.log(`schemathesis's own generator failed (not an answer of the API); running it again:\n${run.report}`);
      run = await fuzz(t.url, token, t.dataDir);
    }
    const { passed, generated, report } = run;
    const summary = report.slice(report.lastIndexOf('SUMMARY'));
    console.log(`schemathesis on ${backend} as a ${who}:\n${passed ? summary : report}`);
    expect(passed, report).toBe(true);
    expect(generated).toBeGreaterThanOrEqual(MIN_REQUESTS);
  }, 600_000);
});
