// The service's command line as a user runs it: `aeromap user ...` and `aeromap serve`.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { BACKENDS, type Backend, Client, isolatedDatabase } from './helpers.ts';

const bin = fileURLToPath(new URL('../../bin/aeromap', import.meta.url));
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function environment(backend: Backend, extra: Record<string, string> = {}) {
  const database = await isolatedDatabase(backend);
  cleanups.push(database.drop);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    DATA_DIR: database.dataDir,
    PASSWORD_ITERATIONS: '1000',
    LOG_LEVEL: 'warn',
    // Users and the first admin are the service's; the embedded node's own tests start it with `aeromap serve`.
    EMBEDDED_NODE: 'false',
    ...extra,
  };
  if (database.databaseUrl) Object.assign(env, { DATABASE_URL: database.databaseUrl, SECRET_KEY: 'shared by the instances' });
  return env;
}

function run(args: string[], env: Record<string, string>, input?: string) {
  const result = spawnSync(bin, args, { env, input, encoding: 'utf8' });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Starts `aeromap serve` on a free port; answers its base URL and everything it printed before listening. */
async function serve(env: Record<string, string>): Promise<{ url: string; output: string; child: ChildProcess }> {
  const child = spawn(bin, ['serve'], { env: { ...env, PORT: '0', HOST: '127.0.0.1' } });
  cleanups.push(async () => {
    if (child.exitCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Aeromap is listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('exit', (code) => reject(new Error(`aeromap serve exited with ${code}: ${output}`)));
  });
  return { url, output, child };
}

async function canLogIn(url: string, username: string, password: string): Promise<boolean> {
  return (await new Client(url).post('/api/token-auth/', { username, password })).status === 200;
}

describe.each(BACKENDS)('aeromap user and serve (%s)', (backend) => {
  it('creates users, resets passwords, then serves them (no first admin when users exist)', async () => {
    const env = await environment(backend);
    const created = run(['user', 'create', 'alice', '--password', 'first-pw', '--email', 'a@example.org'], env);
    expect(created).toMatchObject({ status: 0, stdout: 'created user alice\n' });
    const duplicate = run(['user', 'create', 'alice', '--password', 'x'], env);
    expect(duplicate.status).toBe(1);
    expect(duplicate.stderr).toContain('user "alice" already exists');
    expect(run(['user', 'set-password', 'alice', '--password-stdin'], env, 'second-pw\n').status).toBe(0);
    expect(run(['user', 'set-password', 'nobody', '--password', 'x'], env)).toMatchObject({ status: 1 });
    const generated = run(['user', 'create', 'bob', '--staff'], env);
    const bobPassword = /password for bob: (\S+)/.exec(generated.stdout)?.[1];
    expect(bobPassword).toBeTruthy();

    const { url, output, child } = await serve(env);
    expect(output).not.toContain('first admin');
    expect(await canLogIn(url, 'alice', 'first-pw')).toBe(false);
    expect(await canLogIn(url, 'alice', 'second-pw')).toBe(true);
    expect(await canLogIn(url, 'bob', bobPassword as string)).toBe(true);
    expect(await canLogIn(url, 'admin', '')).toBe(false);

    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
  });
});

describe('aeromap serve on a fresh DATA_DIR', () => {
  it('creates the first admin with a password printed once', async () => {
    const env = await environment('sqlite');
    const { url, output } = await serve(env);
    const password = /password: (\S+)/.exec(output)?.[1];
    expect(password).toBeTruthy();
    expect(await canLogIn(url, 'admin', password as string)).toBe(true);
    const admin = new Client(url).withToken(
      (await new Client(url).post('/api/token-auth/', { username: 'admin', password })).body.token,
    );
    expect((await admin.get('/api/admin/users/')).body.results[0]).toMatchObject({ is_superuser: true, is_staff: true });
  });

  it('logs requests without the tokens their URLs carry', async () => {
    const env = await environment('sqlite', { AEROMAP_ADMIN_USERNAME: 'chief', AEROMAP_ADMIN_PASSWORD: 'chief-pw', LOG_LEVEL: 'info' });
    const { url, child } = await serve(env);
    let log = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      log += chunk.toString();
    });
    const token = (await new Client(url).post('/api/token-auth/', { username: 'chief', password: 'chief-pw' })).body.token as string;
    expect((await fetch(`${url}/api/projects/?jwt=${token}&page=1`)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(log).toContain('/api/projects/?jwt=[redacted]&page=1');
    expect(log).not.toContain(token);

    // Each request's lines carry its id, which the answer gives back; a proxy's id is kept, a malformed one replaced.
    const mine = await fetch(`${url}/api/health`, { headers: { 'x-request-id': 'lb-4242' } });
    expect(mine.headers.get('x-request-id')).toBe('lb-4242');
    const bad = await fetch(`${url}/api/health`, { headers: { 'x-request-id': 'two words' } });
    const id = bad.headers.get('x-request-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const lines = log.split('\n').filter((line) => line.includes('"reqId":"lb-4242"'));
    expect(lines.map((line) => JSON.parse(line).msg)).toEqual(['incoming request', 'request completed']);
    expect(log).toContain(`"reqId":"${id}"`);
  });

  it('takes the first admin from AEROMAP_ADMIN_USERNAME and AEROMAP_ADMIN_PASSWORD', async () => {
    const env = await environment('sqlite', { AEROMAP_ADMIN_USERNAME: 'chief', AEROMAP_ADMIN_PASSWORD: 'chief-pw' });
    const { url, output } = await serve(env);
    expect(output).toContain('Created the first admin account "chief"');
    expect(output).not.toContain('chief-pw');
    expect(await canLogIn(url, 'chief', 'chief-pw')).toBe(true);
  });

  it('refuses a bad configuration with a message', async () => {
    const env = await environment('sqlite', { TOKEN_LIFETIME: 'forever' });
    const result = spawnSync(bin, ['serve'], { env, encoding: 'utf8' });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('"forever" is not a duration');
  });
});
