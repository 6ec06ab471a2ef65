// Starts a real service on an ephemeral loopback port, on SQLite (a temporary DATA_DIR) or on PostgreSQL
// (a schema of its own in the test database, dropped afterwards), and talks to it over HTTP.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { type ServiceConfig, loadConfig } from '../../src/service/config.ts';
import { type Service, buildService } from '../../src/service/app.ts';

export type Backend = 'sqlite' | 'postgres';
export const BACKENDS: Backend[] = ['sqlite', 'postgres'];
/** The backends of files whose queries other files also run on PostgreSQL: SQLite in `make test`, both in
 * `make test-long` (CI's time). */
export const QUICK_BACKENDS: Backend[] = process.env.AEROMAP_LONG_TESTS === '1' ? BACKENDS : ['sqlite'];

/** The PostgreSQL test database; trust authentication on the local server. */
export const POSTGRES_URL = process.env.AEROMAP_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const ADMIN = { username: 'admin', password: 'admin-password' };
export const SECRET_KEY = 'test-secret-key';

/** A database of its own for one test file: a temporary directory, plus a fresh PostgreSQL schema. */
export async function isolatedDatabase(backend: Backend, postgresUrl = POSTGRES_URL) {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'aeromap-test-'));
  if (backend === 'sqlite') {
    return { dataDir, databaseUrl: undefined, drop: () => rm(dataDir, { recursive: true, force: true }) };
  }
  const schema = `aeromap_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const url = new URL(postgresUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    dataDir,
    databaseUrl: url.href,
    async drop() {
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      await client.query(`DROP SCHEMA ${schema} CASCADE`);
      await client.end();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export interface Reply<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface RequestOptions {
  json?: unknown;
  form?: Record<string, string>;
  /** A body sent as it is, with its content type. */
  raw?: { body: string; type: string };
  query?: Record<string, string | number | boolean>;
  headers?: Record<string, string>;
}

export class Client {
  constructor(
    readonly baseUrl: string,
    readonly token?: string,
  ) {}

  withToken(token: string | undefined): Client {
    return new Client(this.baseUrl, token);
  }

  async request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<Reply<T>> {
    const url = new URL(path, this.baseUrl);
    for (const [key, value] of Object.entries(options.query ?? {})) url.searchParams.set(key, String(value));
    const headers: Record<string, string> = { ...options.headers };
    if (this.token) headers.authorization = `JWT ${this.token}`;
    let body: string | undefined;
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    } else if (options.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(options.form).toString();
    } else if (options.raw) {
      headers['content-type'] = options.raw.type;
      body = options.raw.body;
    }
    const response = await fetch(url, { method, headers, body });
    const text = await response.text();
    const isJson = response.headers.get('content-type')?.includes('json');
    return { status: response.status, body: isJson && text ? JSON.parse(text) : text, headers: response.headers };
  }

  get<T = any>(path: string, query?: RequestOptions['query']) {
    return this.request<T>('GET', path, { query });
  }
  post<T = any>(path: string, json?: unknown) {
    return this.request<T>('POST', path, { json });
  }
  put<T = any>(path: string, json?: unknown) {
    return this.request<T>('PUT', path, { json });
  }
  patch<T = any>(path: string, json?: unknown) {
    return this.request<T>('PATCH', path, { json });
  }
  delete<T = any>(path: string) {
    return this.request<T>('DELETE', path);
  }
}

export interface TestService {
  service: Service;
  url: string;
  dataDir: string;
  anonymous: Client;
  admin: Client;
  login(username: string, password: string): Promise<Client>;
  /** Creates an active user through the admin API and answers its id and a signed-in client. */
  createUser(username: string, fields?: Record<string, unknown>): Promise<{ id: number; client: Client }>;
  close(): Promise<void>;
}

export function testConfig(dataDir: string, databaseUrl: string | undefined, overrides: Partial<ServiceConfig> = {}): ServiceConfig {
  return {
    host: '127.0.0.1',
    port: 0,
    dataDir,
    databaseUrl,
    secretKey: SECRET_KEY,
    tokenLifetimeSeconds: 3600,
    passwordIterations: 1000,
    firstAdmin: { ...ADMIN },
    nodeRefreshIntervalMs: 0,
    nodeTimeoutMs: 2000,
    bodyLimitBytes: 1024 * 1024,
    logLevel: 'silent',
    trustProxy: false,
    embeddedNode: null,
    // The tests serve imports from loopback.
    tasks: { ...loadConfig({ SECRET_KEY: 'unused' }).tasks, tickMs: 100, pollMs: 200, retryMs: 300, leaseMs: 5000, allowPrivateUrls: true },
    ...overrides,
  };
}

export async function startService(backend: Backend, overrides: Partial<ServiceConfig> = {}): Promise<TestService> {
  const database = await isolatedDatabase(backend);
  const service = await buildService(testConfig(database.dataDir, database.databaseUrl, overrides));
  const url = await service.listen();
  const anonymous = new Client(url);
  const login = async (username: string, password: string) => {
    const reply = await anonymous.post('/api/token-auth/', { username, password });
    if (reply.status !== 200) throw new Error(`login of ${username} failed: ${reply.status} ${JSON.stringify(reply.body)}`);
    return anonymous.withToken(reply.body.token);
  };
  const admin = await login(ADMIN.username, ADMIN.password);
  return {
    service,
    url,
    dataDir: database.dataDir,
    anonymous,
    admin,
    login,
    async createUser(username, fields = {}) {
      const password = `${username}-password`;
      const reply = await admin.post('/api/admin/users/', { username, password, is_active: true, ...fields });
      if (reply.status !== 201) throw new Error(`creating ${username} failed: ${JSON.stringify(reply.body)}`);
      return { id: reply.body.id, client: await login(username, password) };
    },
    async close() {
      await service.close();
      await database.drop();
    },
  };
}

export const ISO_TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The six callers of the permission tests: anonymous, a project's future owner, another user, a member of the
 * group `surveyors` (created here), a staff user and a superuser. */
export const ROLES = ['anonymous', 'owner', 'other', 'member', 'staff', 'superuser'] as const;
export type Role = (typeof ROLES)[number];

export async function createCallers(t: TestService): Promise<Record<Role, Client>> {
  const group = (await t.admin.post('/api/admin/groups/', { name: 'surveyors' })).body.id;
  return {
    anonymous: t.anonymous,
    owner: (await t.createUser('owner')).client,
    other: (await t.createUser('other')).client,
    member: (await t.createUser('member', { groups: [group] })).client,
    staff: (await t.createUser('staff', { is_staff: true })).client,
    superuser: (await t.createUser('root', { is_superuser: true, is_staff: true })).client,
  };
}
