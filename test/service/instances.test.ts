// Several service instances on one database: they start together on an empty database without a second first
// admin or a failed start, and one instance at a time refreshes the processing nodes (a lease in the database).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { takeLease } from '../../src/db/leases.ts';
import { countUsers } from '../../src/db/users.ts';
import { type Service, buildService } from '../../src/service/app.ts';
import { ADMIN, BACKENDS, Client, isolatedDatabase, testConfig } from './helpers.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function database(backend: (typeof BACKENDS)[number]) {
  const handle = await isolatedDatabase(backend);
  cleanups.push(handle.drop);
  return handle;
}

function keep(service: Service): Service {
  cleanups.push(() => service.close());
  return service;
}

describe.each(BACKENDS)('instances on one database (%s)', (backend) => {
  it('takes a lease for one owner at a time, renewed by its holder, free once it ends', async () => {
    const handle = await database(backend);
    const service = keep(await buildService(testConfig(handle.dataDir, handle.databaseUrl)));
    const { db } = service;
    expect(await takeLease(db, 'work', 'a', 60_000)).toBe(true);
    expect(await takeLease(db, 'work', 'b', 60_000)).toBe(false);
    expect(await takeLease(db, 'work', 'a', 60_000)).toBe(true);
    expect(await takeLease(db, 'other', 'b', 60_000)).toBe(true);
    expect(await takeLease(db, 'brief', 'a', 1)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await takeLease(db, 'brief', 'b', 60_000)).toBe(true);
  });
});

describe('instances on one PostgreSQL', () => {
  it('start together on an empty database with one first admin', async () => {
    const handle = await database('postgres');
    const config = testConfig(handle.dataDir, handle.databaseUrl);
    const services = (await Promise.all([buildService(config), buildService(config), buildService(config)])).map(keep);
    expect(await countUsers(services[0].db)).toBe(1);
    expect(services.filter((service) => service.firstAdmin !== undefined)).toHaveLength(1);
  });

  it('serve any request: a token signed by one is accepted by the other, which reads what the first wrote', async () => {
    const handle = await database('postgres');
    const config = testConfig(handle.dataDir, handle.databaseUrl);
    const [a, b] = await Promise.all([buildService(config), buildService(config)]).then((both) => both.map(keep));
    const [urlA, urlB] = await Promise.all([a.listen(), b.listen()]);
    const login = await new Client(urlA).post('/api/token-auth/', { username: ADMIN.username, password: ADMIN.password });
    expect(login.status).toBe(200);
    const onA = new Client(urlA, login.body.token);
    const onB = new Client(urlB, login.body.token);
    const created = await onA.post('/api/projects/', { name: 'shared across instances' });
    expect(created.status).toBe(201);
    const read = await onB.get(`/api/projects/${created.body.id}/`);
    expect(read.status).toBe(200);
    expect(read.body.name).toBe('shared across instances');
    expect((await onB.patch(`/api/projects/${created.body.id}/`, { name: 'renamed on B' })).status).toBe(200);
    expect((await onA.get(`/api/projects/${created.body.id}/`)).body.name).toBe('renamed on B');
    // A token signed with another key is refused (403 with a detail, as the spec has it for bad tokens).
    const stranger = await buildService({ ...testConfig(handle.dataDir, handle.databaseUrl), secretKey: 'another key' }).then(keep);
    const foreign = await new Client(await stranger.listen()).post('/api/token-auth/', { username: ADMIN.username, password: ADMIN.password });
    expect((await new Client(urlB, foreign.body.token).get('/api/projects/')).body.detail).toBe('Error decoding signature.');
  });

  it('refresh the processing nodes from one instance at a time', async () => {
    let infoRequests = 0;
    const node = createServer((request, response) => {
      if (request.url?.startsWith('/info')) infoRequests += 1;
      const body = request.url?.startsWith('/options') ? [] : { version: '2.2.0', taskQueueCount: 0, engine: 'odm' };
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => node.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => node.close(() => resolve())));
    const handle = await database('postgres');
    const config = testConfig(handle.dataDir, handle.databaseUrl, { nodeRefreshIntervalMs: 100 });
    const first = keep(await buildService(config));
    await first.db
      .insertInto('processing_nodes')
      .values({ hostname: '127.0.0.1', port: (node.address() as AddressInfo).port, max_images: null, last_refreshed: null, created_at: new Date().toISOString() })
      .execute();
    keep(await buildService(config));
    keep(await buildService(config));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // At most 15 rounds of 100 ms (fewer on a busy machine): three refreshing instances would ask about 45 times.
    expect(infoRequests).toBeGreaterThanOrEqual(3);
    expect(infoRequests).toBeLessThanOrEqual(18);
  });
});
