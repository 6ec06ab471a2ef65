// /api/health answers without credentials: the database and the nodes as counts; a 503 when the database is gone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, type TestService, startService } from './helpers.ts';

describe.each(BACKENDS)('health on %s', (backend) => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService(backend);
  });
  afterAll(() => t?.close());

  it('says whether the instance can serve', async () => {
    expect(await t.anonymous.get('/api/health')).toMatchObject({ status: 200, body: { status: 'ok', database: 'ok', nodes: { online: 0, total: 0 } } });
    expect((await t.admin.post('/api/processingnodes/', { hostname: 'nowhere.invalid', port: 3000 })).status).toBe(201);
    expect((await t.anonymous.get('/api/health')).body.nodes).toEqual({ online: 0, total: 1 });
    await t.service.db.destroy();
    expect(await t.anonymous.get('/api/health')).toMatchObject({ status: 503, body: { status: 'unavailable', database: 'unreachable' } });
  });
});
