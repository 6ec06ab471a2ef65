import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Migrator } from 'kysely';
import { openDatabase } from '../../src/db/connect.ts';
import { MIGRATIONS, migrateToLatest } from '../../src/db/migrations.ts';
import { BACKENDS, type Client, ISO_TIMESTAMP, type TestService, startService } from './helpers.ts';

// WebODM's system presets, in the order it creates them.
const STARTER = ['Default', 'Fast Orthophoto', 'Field', 'DSM + DTM', 'High Resolution', 'Volume Analysis', '3D Model', 'Buildings', 'Forest', 'Multispectral'];

describe.each(BACKENDS)('presets (%s)', (backend) => {
  let t: TestService;
  let alice: Client;
  let bob: Client;
  beforeAll(async () => {
    t = await startService(backend);
    alice = (await t.createUser('alice')).client;
    bob = (await t.createUser('bob')).client;
  });
  afterAll(() => t?.close());

  it('starts with the system presets, visible to every user', async () => {
    const reply = await alice.get('/api/presets/');
    expect(reply.status).toBe(200);
    expect(reply.body.map((p: { name: string }) => p.name)).toEqual(STARTER);
    for (const preset of reply.body) {
      expect(preset).toMatchObject({ system: true, created_at: expect.stringMatching(ISO_TIMESTAMP) });
      expect(preset.options.length).toBeGreaterThan(0);
      for (const option of preset.options) expect(Object.keys(option).sort()).toEqual(['name', 'value']);
    }
    const fast = reply.body.find((p: { name: string }) => p.name === 'Fast Orthophoto');
    expect(fast.options).toEqual([{ name: 'auto-boundary', value: true }, { name: 'fast-orthophoto', value: true }]);
    const field = reply.body.find((p: { name: string }) => p.name === 'Field');
    expect(field.options).toEqual([
      { name: 'sfm-algorithm', value: 'planar' },
      { name: 'fast-orthophoto', value: true },
      { name: 'matcher-neighbors', value: 4 },
    ]);
    expect((await t.anonymous.get('/api/presets/')).status).toBe(403);
  });

  it('keeps a user preset to its owner, with option values as sent', async () => {
    const options = [
      { name: 'dsm', value: true },
      { name: 'mesh-size', value: 300000 },
      { name: 'pc-quality', value: 'high' },
      { name: 'dem-resolution', value: '5' },
    ];
    const created = await alice.post('/api/presets/', { name: 'Mine', options });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Mine', options, system: false });
    const id = created.body.id;
    expect((await alice.get(`/api/presets/${id}/`)).body.options).toEqual(options);
    expect((await bob.get(`/api/presets/${id}/`)).status).toBe(404);
    expect((await bob.get('/api/presets/')).body.some((p: { id: number }) => p.id === id)).toBe(false);
    expect((await bob.patch(`/api/presets/${id}/`, { name: 'stolen' })).status).toBe(404);
    expect((await bob.delete(`/api/presets/${id}/`)).status).toBe(404);
  });

  it('updates with PATCH at /api/presets/{id}/ and at /presets/{id}/, and with PUT', async () => {
    const { body } = await alice.post('/api/presets/', { name: 'Draft', options: [{ name: 'dsm', value: true }] });
    const patched = await alice.patch(`/api/presets/${body.id}/`, { name: 'Draft 2' });
    expect(patched.body).toMatchObject({ name: 'Draft 2', options: [{ name: 'dsm', value: true }] });
    // The spec's path, with the fields a client reads back.
    const spec = await alice.patch(`/presets/${body.id}/`, { ...patched.body, name: 'Final', options: [] });
    expect(spec.status).toBe(200);
    expect(spec.body).toMatchObject({ id: body.id, name: 'Final', options: [], system: false });
    expect((await alice.patch(`/presets/${body.id}`, { name: 'No slash' })).body.name).toBe('No slash');
    const put = await alice.put(`/api/presets/${body.id}/`, { name: 'Put', options: [{ name: 'dtm', value: true }] });
    expect(put.body).toMatchObject({ name: 'Put', options: [{ name: 'dtm', value: true }] });
    expect((await bob.patch(`/presets/${body.id}/`, { name: 'x' })).status).toBe(404);
    expect((await t.anonymous.patch(`/presets/${body.id}/`, { name: 'x' })).status).toBe(403);
  });

  it('refuses malformed options and names', async () => {
    expect(await alice.post('/api/presets/', { name: 'Bad', options: [{ name: 'dsm' }] })).toMatchObject({
      status: 400,
      body: { options: ['0.value: This field is required.'] },
    });
    expect(await alice.post('/api/presets/', { name: 'Bad', options: [{ name: '', value: 1 }] })).toMatchObject({
      status: 400,
      body: { options: ['0.name: This field may not be blank.'] },
    });
    expect((await alice.post('/api/presets/', { name: 'Bad', options: [{ name: 'a', value: { deep: 1 } }] })).status).toBe(400);
    expect((await alice.post('/api/presets/', { name: 'Bad', options: 'dsm=true' })).status).toBe(400);
    expect(await alice.post('/api/presets/', { options: [] })).toMatchObject({
      status: 400,
      body: { name: ['This field is required.'] },
    });
  });

  it('lets only admins create, change and delete system presets', async () => {
    const system = (await alice.get('/api/presets/', { system: true })).body;
    expect(system).toHaveLength(STARTER.length);
    const defaultPreset = system[0];
    const denied = { status: 403, body: { detail: 'Only administrators can manage system presets.' } };
    expect(await alice.patch(`/api/presets/${defaultPreset.id}/`, { name: 'Hijacked' })).toMatchObject(denied);
    expect(await alice.patch(`/presets/${defaultPreset.id}/`, { name: 'Hijacked' })).toMatchObject(denied);
    expect(await alice.delete(`/api/presets/${defaultPreset.id}/`)).toMatchObject(denied);
    expect(await alice.post('/api/presets/', { name: 'Global', system: true })).toMatchObject(denied);
    const own = (await alice.post('/api/presets/', { name: 'Own' })).body;
    expect(await alice.patch(`/api/presets/${own.id}/`, { system: true })).toMatchObject(denied);
    expect((await alice.get(`/api/presets/${defaultPreset.id}/`)).body.name).toBe('Default');

    const created = await t.admin.post('/api/presets/', { name: 'Team standard', system: true, options: [] });
    expect(created).toMatchObject({ status: 201, body: { system: true } });
    expect((await bob.get(`/api/presets/${created.body.id}/`)).status).toBe(200);
    expect((await t.admin.patch(`/api/presets/${created.body.id}/`, { name: 'Team v2' })).body.name).toBe('Team v2');
    expect((await t.admin.delete(`/api/presets/${created.body.id}/`)).status).toBe(204);
    expect((await bob.get(`/api/presets/${created.body.id}/`)).status).toBe(404);
  });

  it('deletes own presets (204) and answers 404 for missing ones', async () => {
    const { body } = await bob.post('/api/presets/', { name: 'Temporary' });
    expect((await bob.delete(`/api/presets/${body.id}/`)).status).toBe(204);
    expect((await bob.get(`/api/presets/${body.id}/`)).status).toBe(404);
    expect((await bob.delete('/api/presets/999999/')).status).toBe(404);
  });

  it('filters and orders the list', async () => {
    const byName = await alice.get('/api/presets/', { name: 'Forest' });
    expect(byName.body.map((p: { name: string }) => p.name)).toEqual(['Forest']);
    const own = await alice.get('/api/presets/', { system: false });
    expect(own.body.every((p: { system: boolean }) => !p.system)).toBe(true);
    expect(own.body.length).toBeGreaterThan(0);
    const names = async (ordering: string) =>
      (await alice.get('/api/presets/', { system: true, ordering })).body.map((p: { name: string }) => p.name);
    const ascending = await names('name');
    expect([...ascending].sort()).toEqual([...STARTER].sort());
    expect(ascending).not.toEqual(STARTER);
    expect(await names('-name')).toEqual([...ascending].reverse());
    expect((await alice.get('/api/presets/', { ordering: 'owner_id' })).status).toBe(400);
    expect((await alice.get('/api/presets/', { system: 'maybe' })).status).toBe(400);
  });
});

describe("the migration to WebODM's presets", () => {
  it("replaces the first release's presets, keeping one an administrator changed", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'aeromap-presets-'));
    const { db } = openDatabase(undefined, dataDir);
    try {
      // A database as the first release left it, with one of its presets changed.
      const { error } = await new Migrator({ db, provider: { getMigrations: async () => MIGRATIONS } }).migrateTo('0005_user_quotas');
      expect(error).toBeUndefined();
      const before = await db.selectFrom('presets').select(['name', 'options']).orderBy('id').execute();
      expect(before.map((p) => p.name)).toEqual(['Default', 'Fast Orthophoto', 'DSM + DTM', 'High Resolution', '3D Model', 'Forest', 'Buildings']);
      await db.updateTable('presets').set({ options: '[{"name":"min-num-features","value":30000}]' }).where('name', '=', 'Forest').execute();

      await migrateToLatest(db);
      const after = await db.selectFrom('presets').select(['name', 'options', 'system']).orderBy('id').execute();
      expect(after.map((p) => p.name).sort()).toEqual([...STARTER].sort());
      expect(after.every((p) => p.system === 1)).toBe(true);
      const options = (name: string) => JSON.parse(after.find((p) => p.name === name)?.options ?? 'null');
      expect(options('Default')).toEqual([{ name: 'auto-boundary', value: true }, { name: 'dsm', value: true }]);
      expect(options('Forest')).toEqual([{ name: 'min-num-features', value: 30000 }]);
    } finally {
      await db.destroy();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
