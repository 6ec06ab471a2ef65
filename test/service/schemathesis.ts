// schemathesis (installed in engine/.venv by `make`) driving every operation of a running service's OpenAPI
// document: no answer may be a server error, a status code the document does not list for the operation, or a
// body outside the operation's response schema. The suite runs it with one fixed seed (bench/fuzz-seeds.ts with
// others).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const st = fileURLToPath(new URL('../../engine/.venv/bin/st', import.meta.url));
const CHECKS = 'not_a_server_error,status_code_conformance,response_schema_conformance';

export interface FuzzRun {
  passed: boolean;
  generated: number;
  report: string;
}

async function runOnce(url: string, token: string, workDir: string, seed: number, maxExamples: number): Promise<FuzzRun> {
  // A given seed sends the same requests every time, so that a failure is reproducible. One worker: Hypothesis
  // describing its strategies from two threads at once trips CPython 3.11's ast module now and then. Generation
  // that a loaded machine makes slow is no fault of the API's, so Hypothesis's speed check is off.
  const args = ['run', `${url}/api/openapi.json`, '--header', `Authorization: JWT ${token}`, '--checks', CHECKS,
    '--max-examples', String(maxExamples), '--seed', String(seed), '--no-color', '--request-timeout', '20', '--workers', '1',
    '--generation-database', 'none', '--suppress-health-check=too_slow'];
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

/** One run as `token`'s user, its cache in `workDir`; run again once if only the generator failed. */
export async function fuzz(url: string, token: string, workDir: string, seed = 1, maxExamples = 12): Promise<FuzzRun> {
  const run = await runOnce(url, token, workDir, seed, maxExamples);
  if (run.passed || !generatorFailedAlone(run.report)) return run;
  console.log(`schemathesis's own generator failed (not an answer of the API); running it again:\n${run.report}`);
  return runOnce(url, token, workDir, seed, maxExamples);
}

/** The report's summary, from its last SUMMARY heading. */
export const summaryOf = (report: string): string => report.slice(report.lastIndexOf('SUMMARY'));
