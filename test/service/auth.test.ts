import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SignJWT, decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseDuration } from '../../src/service/config.ts';
import { LoginThrottle } from '../../src/service/login-throttle.ts';
import { hashPassword, isPasswordHash, verifyPassword } from '../../src/service/passwords.ts';
import { ADMIN, BACKENDS, Client, SECRET_KEY, type TestService, startService } from './helpers.ts';

const key = new TextEncoder().encode(SECRET_KEY);
const INVALID_CREDENTIALS = { non_field_errors: ['Unable to log in with provided credentials.'] };

describe('passwords', () => {
  it('hashes in Django format and verifies', async () => {
    const hash = await hashPassword('s3cret', 1200);
    expect(hash).toMatch(/^pbkdf2_sha256\$1200\$[A-Za-z0-9]{22}\$[A-Za-z0-9+/]{43}=$/);
    expect(isPasswordHash(hash)).toBe(true);
    expect(await verifyPassword('s3cret', hash)).toBe(true);
    expect(await verifyPassword('S3cret', hash)).toBe(false);
    expect(await hashPassword('s3cret', 1200)).not.toBe(hash);
  });

  it('verifies a hash made by Django (Python hashlib) with the iterations stored in it', async () => {
    const django = 'pbkdf2_sha256$1000$Wt6WbLMh9SeLNFTRVQMDsc$acslfysHA2wI4JI9ekk9OeyWSIS0IbafKFilXOtUX4w=';
    expect(await verifyPassword('test1234', django)).toBe(true);
    expect(await verifyPassword('test12345', django)).toBe(false);
  });

  it('rejects what is not a hash', async () => {
    expect(await verifyPassword('plain', 'plain')).toBe(false);
    expect(await verifyPassword('x', 'md5$1$salt$abc')).toBe(false);
    expect(await verifyPassword('x', 'pbkdf2_sha256$0$salt$abc=')).toBe(false);
  });
});

describe('login throttle', () => {
  it('counts failures per address and name and per address, for fifteen minutes', () => {
    let now = 0;
    const throttle = new LoginThrottle(() => now);
    for (let i = 0; i < 10; i++) throttle.failed('10.0.0.1', 'ann');
    expect(throttle.waitSeconds('10.0.0.1', 'Ann')).toBe(900);
    expect(throttle.waitSeconds('10.0.0.2', 'ann')).toBe(0);
    for (let i = 0; i < 40; i++) throttle.failed('10.0.0.1', `name-${i}`);
    expect(throttle.waitSeconds('10.0.0.1', 'bob')).toBe(900); // 50 failures from one address
    now += 15 * 60_000;
    expect(throttle.waitSeconds('10.0.0.1', 'ann')).toBe(0);
    throttle.failed('10.0.0.3', 'cy');
    throttle.succeeded('10.0.0.3', 'cy');
    expect(throttle.waitSeconds('10.0.0.3', 'cy')).toBe(0);
  });
});

describe('configuration', () => {
  it('parses token lifetimes', () => {
    expect(parseDuration('6h')).toBe(21600);
    expect(parseDuration('90m')).toBe(5400);
    expect(parseDuration('3600')).toBe(3600);
    expect(parseDuration('2d')).toBe(172800);
    expect(() => parseDuration('6 hours')).toThrow(ConfigError);
    expect(() => parseDuration('0')).toThrow(ConfigError);
  });

  it('reads the environment, keeps a generated secret key in DATA_DIR and refuses bad values', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'aeromap-config-'));
    try {
      const first = loadConfig({ DATA_DIR: dataDir, PORT: '9000', TOKEN_LIFETIME: '2h' });
      expect(first.port).toBe(9000);
      expect(first.tokenLifetimeSeconds).toBe(7200);
      expect(first.databaseUrl).toBeUndefined();
      expect(first.secretKey.length).toBeGreaterThanOrEqual(32);
      expect((await readFile(path.join(dataDir, 'secret_key'), 'utf8')).trim()).toBe(first.secretKey);
      expect(loadConfig({ DATA_DIR: dataDir }).secretKey).toBe(first.secretKey);
      expect(loadConfig({ DATA_DIR: dataDir, SECRET_KEY: 'given' }).secretKey).toBe('given');
      expect(loadConfig({ DATA_DIR: dataDir }).tokenLifetimeSeconds).toBe(6 * 3600);
      expect(() => loadConfig({ DATA_DIR: dataDir, PORT: 'eighty' })).toThrow(ConfigError);
      expect(() => loadConfig({ DATA_DIR: dataDir, DATABASE_URL: 'mysql://x' })).toThrow(ConfigError);
      // Instances sharing a database must share the key that signs tokens.
      expect(() => loadConfig({ DATA_DIR: dataDir, DATABASE_URL: 'postgres://db/aeromap' })).toThrow(/SECRET_KEY must be set/);
      expect(loadConfig({ DATA_DIR: dataDir, DATABASE_URL: 'postgres://db/aeromap', SECRET_KEY: 'k' }).secretKey).toBe('k');
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
  it('runs no embedded node on PostgreSQL unless asked to', () => {
    const postgres = { DATA_DIR: '/nonexistent', DATABASE_URL: 'postgres://db/aeromap', SECRET_KEY: 'k' };
    expect(loadConfig(postgres).embeddedNode).toBeNull();
    expect(loadConfig({ ...postgres, EMBEDDED_NODE: 'true' }).embeddedNode).toMatchObject({ port: 8001 });
    expect(loadConfig({ DATA_DIR: '/nonexistent', SECRET_KEY: 'k' }).embeddedNode).toMatchObject({ port: 8001, maxRuntimeMinutes: 24 * 60 });
    expect(loadConfig({ DATA_DIR: '/nonexistent', SECRET_KEY: 'k', EMBEDDED_NODE_MAX_RUNTIME_HOURS: '3' }).embeddedNode).toMatchObject({ maxRuntimeMinutes: 180 });
    expect(() => loadConfig({ DATA_DIR: '/nonexistent', SECRET_KEY: 'k', EMBEDDED_NODE_MAX_RUNTIME_HOURS: '0' })).toThrow(/EMBEDDED_NODE_MAX_RUNTIME_HOURS/);
    expect(loadConfig({ DATA_DIR: '/nonexistent', SECRET_KEY: 'k', EMBEDDED_NODE: 'false' }).embeddedNode).toBeNull();
  });

  it('reads TRUST_PROXY as Fastify takes it, and refuses what is no address', () => {
    const trust = (value: string | undefined) => loadConfig({ DATA_DIR: '/nonexistent', SECRET_KEY: 'k', TRUST_PROXY: value }).trustProxy;
    expect(trust(undefined)).toBe(false);
    expect(trust('false')).toBe(false);
    expect(trust('true')).toBe(true);
    // Fastify trusts no hop count (a client that reaches the service directly could forge them all).
    expect(() => trust('2')).toThrow(ConfigError);
    expect(trust('127.0.0.1, 10.0.0.0/8,::1,fd00::/8,loopback')).toEqual(['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8', 'loopback']);
    expect(() => trust('proxy.example')).toThrow(/TRUST_PROXY .*"proxy.example"/);
    expect(() => trust('10.0.0.0/33')).toThrow(ConfigError);
  });
});

describe('login throttle behind a proxy', () => {
  const attempt = (t: TestService, forwardedFor: string) =>
    fetch(new URL('/api/token-auth/', t.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': forwardedFor },
      body: JSON.stringify({ username: 'nobody', password: 'wrong' }),
    }).then((reply) => reply.status);

  it('counts each client apart when the proxy is trusted', async () => {
    const t = await startService('sqlite', { trustProxy: ['127.0.0.1'] });
    try {
      for (let i = 0; i < 10; i++) expect(await attempt(t, '198.51.100.1')).toBe(400);
      expect(await attempt(t, '198.51.100.1')).toBe(429);
      expect(await attempt(t, '198.51.100.2')).toBe(400);
    } finally {
      await t.close();
    }
  });

  it('counts by the peer when no proxy is trusted, whatever X-Forwarded-For says', async () => {
    const t = await startService('sqlite');
    try {
      for (let i = 0; i < 10; i++) expect(await attempt(t, `198.51.100.${i}`)).toBe(400);
      expect(await attempt(t, '198.51.100.99')).toBe(429);
    } finally {
      await t.close();
    }
  });
});

describe.each(BACKENDS)('token authentication (%s)', (backend) => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService(backend);
  });
  afterAll(() => t?.close());

  it('issues an HS256 JWT with user_id, username, email and exp, for JSON and form bodies', async () => {
    const json = await t.anonymous.post('/api/token-auth/', ADMIN);
    expect(json.status).toBe(200);
    expect(decodeProtectedHeader(json.body.token).alg).toBe('HS256');
    const payload = decodeJwt(json.body.token);
    expect(payload).toMatchObject({ user_id: 1, username: 'admin', email: '' });
    const lifetime = (payload.exp as number) - Date.now() / 1000;
    expect(lifetime).toBeGreaterThan(3000);
    expect(lifetime).toBeLessThanOrEqual(3600);

    const form = await t.anonymous.request('POST', '/api/token-auth', { form: ADMIN });
    expect(form.status).toBe(200);
    expect(typeof form.body.token).toBe('string');
  });

  it('refuses wrong credentials, unknown and inactive users with 400', async () => {
    expect(await t.anonymous.post('/api/token-auth/', { ...ADMIN, password: 'wrong' })).toMatchObject({
      status: 400,
      body: INVALID_CREDENTIALS,
    });
    expect(await t.anonymous.post('/api/token-auth/', { username: 'nobody', password: 'x' })).toMatchObject({
      status: 400,
      body: INVALID_CREDENTIALS,
    });
    const inactive = await t.admin.post('/api/admin/users/', { username: 'sleeper', password: 'pw' });
    expect(inactive.body.is_active).toBe(false);
    expect(await t.anonymous.post('/api/token-auth/', { username: 'sleeper', password: 'pw' })).toMatchObject({
      status: 400,
      body: INVALID_CREDENTIALS,
    });
  });

  it('names missing and blank fields', async () => {
    expect(await t.anonymous.post('/api/token-auth/', { username: 'admin' })).toMatchObject({
      status: 400,
      body: { password: ['This field is required.'] },
    });
    const blank = await t.anonymous.post('/api/token-auth/', { username: '', password: '' });
    expect(blank.status).toBe(400);
    expect(blank.body).toEqual({ username: ['This field may not be blank.'], password: ['This field may not be blank.'] });
    const none = await t.anonymous.request('POST', '/api/token-auth/');
    expect(none.status).toBe(400);
    expect(typeof none.body.detail).toBe('string');
  });

  it('records the login time', async () => {
    await t.login(ADMIN.username, ADMIN.password);
    const me = await t.admin.get('/api/admin/users/1/');
    expect(Date.now() - Date.parse(me.body.last_login)).toBeLessThan(60_000);
  });

  it('accepts the token in the header and as ?jwt=', async () => {
    expect((await t.admin.get('/api/projects/')).status).toBe(200);
    expect((await t.anonymous.get('/api/projects/', { jwt: t.admin.token as string })).status).toBe(200);
  });

  it('answers 403 with a detail without credentials or with bad ones', async () => {
    const detail = async (client: Client, headers?: Record<string, string>, query?: Record<string, string>) => {
      const reply = await client.request('GET', '/api/projects/', { headers, query });
      expect(reply.status).toBe(403);
      return reply.body.detail;
    };
    expect(await detail(t.anonymous)).toBe('Authentication credentials were not provided.');
    expect(await detail(t.anonymous, { authorization: `Bearer ${t.admin.token}` })).toBe(
      'Authentication credentials were not provided.',
    );
    expect(await detail(t.anonymous, { authorization: 'JWT' })).toBe('Invalid Authorization header. No credentials provided.');
    expect(await detail(t.anonymous, { authorization: 'JWT a b' })).toMatch(/should not contain spaces/);
    expect(await detail(t.anonymous.withToken('not-a-token'))).toBe('Error decoding signature.');
    expect(await detail(t.anonymous, undefined, { jwt: 'garbage.garbage.garbage' })).toBe('Error decoding signature.');

    const expired = await new SignJWT({ user_id: 1, username: 'admin', email: '' })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime(Math.floor(Date.now() / 1000) - 10)
      .sign(key);
    expect(await detail(t.anonymous.withToken(expired))).toBe('Signature has expired.');

    const forged = await new SignJWT({ user_id: 1, username: 'admin', email: '' })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode('another-key'));
    expect(await detail(t.anonymous.withToken(forged))).toBe('Error decoding signature.');

    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${encode({ alg: 'none', typ: 'JWT' })}.${encode({ user_id: 1, exp: 9999999999 })}.`;
    expect(await detail(t.anonymous.withToken(unsigned))).toBe('Error decoding signature.');
  });

  it('slows down password guessing: after ten failures a name is refused for a while, others are not', async () => {
    const { client } = await t.createUser('guessed');
    for (let i = 0; i < 10; i++) {
      expect((await t.anonymous.post('/api/token-auth/', { username: 'guessed', password: `guess-${i}` })).status).toBe(400);
    }
    const refused = await fetch(new URL('/api/token-auth/', t.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'GUESSED', password: 'whatever' }),
    });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(800);
    expect((await refused.json()).detail).toMatch(/^Too many failed attempts\. Try again in \d+ seconds\.$/);
    // Tokens already issued still work, and other names may still log in.
    expect((await client.get('/api/projects/')).status).toBe(200);
    await t.login(ADMIN.username, ADMIN.password);
  });

  it('signs a browser in with a session cookie that scripts cannot read and other sites cannot use', async () => {
    const signedIn = await t.anonymous.post('/api/session/', ADMIN);
    expect(signedIn.status).toBe(200);
    expect(signedIn.body).toEqual({ user_id: 1, username: 'admin', exp: expect.any(Number) });
    const setCookie = signedIn.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/^aeromap_session=[\w-]+\.[\w-]+\.[\w-]+;/);
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Strict/i);
    expect(setCookie).toMatch(/Path=\/api\//);
    const cookie = setCookie.split(';')[0];
    expect(decodeJwt(cookie.split('=')[1]).exp).toBe(signedIn.body.exp);

    expect((await t.anonymous.request('GET', '/api/projects/', { headers: { cookie } })).status).toBe(200);
    const create = (headers: Record<string, string>) => t.anonymous.request('POST', '/api/projects/', { json: { name: 'By cookie' }, headers: { cookie, ...headers } });
    expect((await create({ origin: new URL(t.url).origin })).status).toBe(201);
    expect(await create({ origin: 'https://evil.example' })).toMatchObject({ status: 403, body: { detail: expect.stringMatching(/^Cross-site request refused/) } });
    expect((await create({ 'sec-fetch-site': 'same-site' })).status).toBe(403);
    expect((await create({ origin: 'null' })).status).toBe(403);
    // Scripts and clients that send the token themselves are not browsers' forms: no Origin is asked of them.
    expect((await t.admin.post('/api/projects/', { name: 'By header' })).status).toBe(201);

    expect(await t.anonymous.post('/api/session/', { ...ADMIN, password: 'wrong' })).toMatchObject({ status: 400, body: INVALID_CREDENTIALS });
    const signedOut = await t.anonymous.request('DELETE', '/api/session/', { headers: { cookie } });
    expect(signedOut.status).toBe(204);
    expect(signedOut.headers.get('set-cookie')).toMatch(/^aeromap_session=;.*Expires=Thu, 01 Jan 1970/i);
  });

  it('refuses tokens of deleted and deactivated users', async () => {
    const gone = await t.createUser('gone');
    const frozen = await t.createUser('frozen');
    // Both have made a request, so the service knows them: a change must still reach their next request.
    expect((await gone.client.get('/api/projects/')).status).toBe(200);
    expect((await frozen.client.get('/api/projects/')).status).toBe(200);
    expect((await t.admin.delete(`/api/admin/users/${gone.id}/`)).status).toBe(204);
    expect(await gone.client.get('/api/projects/')).toMatchObject({ status: 403, body: { detail: 'Invalid signature.' } });
    expect((await t.admin.patch(`/api/admin/users/${frozen.id}/`, { is_active: false })).status).toBe(200);
    expect(await frozen.client.get('/api/projects/')).toMatchObject({
      status: 403,
      body: { detail: 'User account is disabled.' },
    });
  });
});
