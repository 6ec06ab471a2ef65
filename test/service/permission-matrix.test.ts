// Every operation of /api/openapi.json called by six callers: anonymous, the owner of a project, another user, a
// member of a group the project is shared with (view only), a staff user and a superuser. Each operation has a
// rule (who may) and the status its success answers; a caller the rule refuses gets 403 when it may know that the
// object exists (or for admin-only routes) and 404 when it may not. An operation added to the API without a row
// here fails the test.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUICK_BACKENDS, type Client, ROLES, type Reply, type Role, type TestService, createCallers, startService } from './helpers.ts';
import { TaskStatus, finished, imageForm, makeJpegs, orthophotoZip, postForm, waitForTask } from './taskhelpers.ts';


/** open: anyone; user: any signed-in user; admin: staff and superusers; superuser: superusers only; view, change, delete: that permission on
 * the project; own: the owner of a preset, who alone sees it; read: "view", a 404 to anyone else, signed in or not,
 * as the reads a public task opens to everyone answer (on a task that is not public); scene: "change" the same way. */
type Rule = 'open' | 'user' | 'admin' | 'superuser' | 'view' | 'change' | 'delete' | 'own' | 'read' | 'scene';

const REFUSED: Record<Rule, Partial<Record<Role, number>>> = {
  open: {},
  user: { anonymous: 403 },
  admin: { anonymous: 403, owner: 403, other: 403, member: 403 },
  superuser: { anonymous: 403, owner: 403, other: 403, member: 403, staff: 403 },
  view: { anonymous: 403, other: 404, staff: 404 },
  change: { anonymous: 403, other: 404, staff: 404, member: 403 },
  delete: { anonymous: 403, other: 404, staff: 404, member: 403 },
  own: { anonymous: 403, other: 404, member: 404, staff: 404, superuser: 404 },
  read: { anonymous: 404, other: 404, staff: 404 },
  scene: { anonymous: 404, other: 404, staff: 404, member: 403 },
};

interface Fixtures {
  project: number;
  /** A new task of the shared project: partial, with two photographs uploaded by the owner. */
  partialTask(): Promise<number>;
  /** A new partial task of the shared project, made public by the owner. */
  publicTask(): Promise<number>;
  /** A new partial task whose ground control points the owner saved. */
  gcpTask(): Promise<number>;
  /** A new task waiting for a processing node (there is none), and one canceled. */
  queuedTask(): Promise<number>;
  canceledTask(): Promise<number>;
  /** A completed task of the shared project, with an orthophoto and its tiles (imported once). */
  completed: number;
  tile: string;
  newProject(): Promise<number>;
  newPreset(): Promise<number>;
  newNode(): Promise<number>;
  newUser(): Promise<number>;
  newGroup(): Promise<number>;
  photo: string;
}

type Call = (client: Client, fx: Fixtures) => Promise<Reply>;
interface Row {
  rule: Rule;
  ok: number;
  call: Call;
}

const GCP_LIST = 'EPSG:32632\n500000 5000000 100 10 10 IMG_0000.JPG a\n500000 5000000 100 12 10 IMG_0001.JPG a\n';
const tasksOf = (fx: Fixtures) => `/api/projects/${fx.project}/tasks/`;
const onNew = (task: 'partialTask' | 'queuedTask' | 'canceledTask', method: 'post' | 'patch' | 'put', suffix: string, body?: unknown): Call =>
  async (client, fx) => client[method](`${tasksOf(fx)}${await fx[task]()}/${suffix}`, body);
const onCompleted = (suffix: string): Call => (client, fx) => client.get(`${tasksOf(fx)}${fx.completed}/${suffix}`);
const sceneWrite = (suffix: string, body: unknown): Call => (client, fx) => client.post(`${tasksOf(fx)}${fx.completed}/3d/${suffix}`, body);

const MATRIX: Record<string, Row> = {
  'POST /api/token-auth/': { rule: 'open', ok: 400, call: (c) => c.post('/api/token-auth/', { username: 'nobody', password: 'wrong' }) },
  'POST /api/session/': { rule: 'open', ok: 400, call: (c) => c.post('/api/session/', { username: 'nobody-else', password: 'wrong' }) },
  'DELETE /api/session/': { rule: 'open', ok: 204, call: (c) => c.delete('/api/session/') },
  'GET /api/health': { rule: 'open', ok: 200, call: (c) => c.get('/api/health') },

  'GET /api/projects/': { rule: 'user', ok: 200, call: (c) => c.get('/api/projects/') },
  'POST /api/projects/': { rule: 'user', ok: 201, call: (c) => c.post('/api/projects/', { name: 'New' }) },
  'GET /api/projects/{id}/': { rule: 'view', ok: 200, call: (c, fx) => c.get(`/api/projects/${fx.project}/`) },
  'PUT /api/projects/{id}/': { rule: 'change', ok: 200, call: (c, fx) => c.put(`/api/projects/${fx.project}/`, { name: 'Field', description: 'put' }) },
  'PATCH /api/projects/{id}/': { rule: 'change', ok: 200, call: (c, fx) => c.patch(`/api/projects/${fx.project}/`, { description: 'patched' }) },
  'DELETE /api/projects/{id}/': { rule: 'delete', ok: 204, call: async (c, fx) => c.delete(`/api/projects/${await fx.newProject()}/`) },
  'GET /api/projects/{id}/permissions/': { rule: 'change', ok: 200, call: (c, fx) => c.get(`/api/projects/${fx.project}/permissions/`) },
  'POST /api/projects/{id}/edit/': { rule: 'change', ok: 200, call: (c, fx) => c.post(`/api/projects/${fx.project}/edit/`, { description: 'edited' }) },
  'POST /api/projects/{id}/duplicate/': { rule: 'change', ok: 200, call: async (c, fx) => c.post(`/api/projects/${await fx.newProject()}/duplicate/`) },

  'GET /api/presets/': { rule: 'user', ok: 200, call: (c) => c.get('/api/presets/') },
  'POST /api/presets/': { rule: 'user', ok: 201, call: (c) => c.post('/api/presets/', { name: 'Mine', options: [] }) },
  'GET /api/presets/{id}/': { rule: 'own', ok: 200, call: async (c, fx) => c.get(`/api/presets/${await fx.newPreset()}/`) },
  'PUT /api/presets/{id}/': { rule: 'own', ok: 200, call: async (c, fx) => c.put(`/api/presets/${await fx.newPreset()}/`, { name: 'Put' }) },
  'PATCH /api/presets/{id}/': { rule: 'own', ok: 200, call: async (c, fx) => c.patch(`/api/presets/${await fx.newPreset()}/`, { name: 'Patched' }) },
  'DELETE /api/presets/{id}/': { rule: 'own', ok: 204, call: async (c, fx) => c.delete(`/api/presets/${await fx.newPreset()}/`) },
  'PATCH /presets/{id}/': { rule: 'own', ok: 200, call: async (c, fx) => c.patch(`/presets/${await fx.newPreset()}/`, { name: 'Patched' }) },

  'GET /api/processingnodes/options/': { rule: 'user', ok: 200, call: (c) => c.get('/api/processingnodes/options/') },
  'GET /api/processingnodes/': { rule: 'user', ok: 200, call: (c) => c.get('/api/processingnodes/') },
  'GET /api/processingnodes/{id}/': { rule: 'user', ok: 200, call: async (c, fx) => c.get(`/api/processingnodes/${await fx.newNode()}/`) },
  'POST /api/processingnodes/': { rule: 'admin', ok: 201, call: (c) => c.post('/api/processingnodes/', { hostname: 'node.example.org', port: 3000 }) },
  'PUT /api/processingnodes/{id}/': { rule: 'admin', ok: 200, call: async (c, fx) => c.put(`/api/processingnodes/${await fx.newNode()}/`, { hostname: 'other.example.org', port: 3001 }) },
  'PATCH /api/processingnodes/{id}/': { rule: 'admin', ok: 200, call: async (c, fx) => c.patch(`/api/processingnodes/${await fx.newNode()}/`, { port: 3002 }) },
  'DELETE /api/processingnodes/{id}/': { rule: 'admin', ok: 204, call: async (c, fx) => c.delete(`/api/processingnodes/${await fx.newNode()}/`) },

  'GET /api/admin/users/': { rule: 'admin', ok: 200, call: (c) => c.get('/api/admin/users/') },
  'POST /api/admin/users/': { rule: 'admin', ok: 201, call: (c) => c.post('/api/admin/users/', { username: `u${Math.random().toString(36).slice(2, 10)}`, password: 'a-password' }) },
  'GET /api/admin/users/{id}/': { rule: 'admin', ok: 200, call: async (c, fx) => c.get(`/api/admin/users/${await fx.newUser()}/`) },
  'PUT /api/admin/users/{id}/': { rule: 'admin', ok: 200, call: async (c, fx) => {
    const id = await fx.newUser();
    return c.put(`/api/admin/users/${id}/`, { username: `put${id}`, password: 'another-password' });
  } },
  'PATCH /api/admin/users/{id}/': { rule: 'admin', ok: 200, call: async (c, fx) => c.patch(`/api/admin/users/${await fx.newUser()}/`, { first_name: 'Ada' }) },
  'DELETE /api/admin/users/{id}/': { rule: 'admin', ok: 204, call: async (c, fx) => c.delete(`/api/admin/users/${await fx.newUser()}/`) },
  'GET /api/admin/profiles/': { rule: 'admin', ok: 200, call: (c) => c.get('/api/admin/profiles/') },
  'GET /api/admin/profiles/{user_id}/': { rule: 'admin', ok: 200, call: async (c, fx) => c.get(`/api/admin/profiles/${await fx.newUser()}/`) },
  'PUT /api/admin/profiles/{user_id}/': { rule: 'superuser', ok: 200, call: async (c, fx) => c.put(`/api/admin/profiles/${await fx.newUser()}/`, { quota: 100 }) },
  'PATCH /api/admin/profiles/{user_id}/': { rule: 'superuser', ok: 200, call: async (c, fx) => c.patch(`/api/admin/profiles/${await fx.newUser()}/`, { quota: 100 }) },
  'GET /api/admin/profiles/{user_id}/used_quota/': { rule: 'admin', ok: 200, call: async (c, fx) => c.get(`/api/admin/profiles/${await fx.newUser()}/used_quota/`) },
  'GET /api/admin/groups/': { rule: 'admin', ok: 200, call: (c) => c.get('/api/admin/groups/') },
  'POST /api/admin/groups/': { rule: 'admin', ok: 201, call: (c) => c.post('/api/admin/groups/', { name: `g${Math.random().toString(36).slice(2, 10)}` }) },
  'GET /api/admin/groups/{id}/': { rule: 'admin', ok: 200, call: async (c, fx) => c.get(`/api/admin/groups/${await fx.newGroup()}/`) },
  'PUT /api/admin/groups/{id}/': { rule: 'admin', ok: 200, call: async (c, fx) => {
    const id = await fx.newGroup();
    return c.put(`/api/admin/groups/${id}/`, { name: `put${id}` });
  } },
  'PATCH /api/admin/groups/{id}/': { rule: 'admin', ok: 200, call: async (c, fx) => {
    const id = await fx.newGroup();
    return c.patch(`/api/admin/groups/${id}/`, { name: `patched${id}` });
  } },
  'DELETE /api/admin/groups/{id}/': { rule: 'admin', ok: 204, call: async (c, fx) => c.delete(`/api/admin/groups/${await fx.newGroup()}/`) },

  'GET /api/projects/{project_id}/tasks/': { rule: 'view', ok: 200, call: (c, fx) => c.get(tasksOf(fx)) },
  'POST /api/projects/{project_id}/tasks/': { rule: 'change', ok: 201, call: (c, fx) => c.post(tasksOf(fx), { partial: true, name: 'new' }) },
  'GET /api/projects/{project_id}/tasks/{task_id}/': { rule: 'read', ok: 200, call: onCompleted('') },
  'PATCH /api/projects/{project_id}/tasks/{task_id}/': { rule: 'change', ok: 200, call: onNew('partialTask', 'patch', '', { name: 'renamed' }) },
  'PUT /api/projects/{project_id}/tasks/{task_id}/': { rule: 'change', ok: 200, call: onNew('partialTask', 'put', '', { name: 'replaced' }) },
  'POST /api/projects/{project_id}/tasks/{task_id}/upload/': { rule: 'change', ok: 200, call: async (c, fx) =>
    postForm(c, `${tasksOf(fx)}${await fx.partialTask()}/upload/`, await imageForm([fx.photo])) },
  'POST /api/projects/{project_id}/tasks/{task_id}/commit/': { rule: 'change', ok: 200, call: onNew('partialTask', 'post', 'commit/') },
  'POST /api/projects/{project_id}/tasks/{task_id}/cancel/': { rule: 'change', ok: 200, call: onNew('queuedTask', 'post', 'cancel/') },
  'POST /api/projects/{project_id}/tasks/{task_id}/remove/': { rule: 'delete', ok: 200, call: onNew('partialTask', 'post', 'remove/') },
  'POST /api/projects/{project_id}/tasks/{task_id}/restart/': { rule: 'change', ok: 200, call: onNew('canceledTask', 'post', 'restart/') },
  'POST /api/projects/{project_id}/tasks/{task_id}/duplicate/': { rule: 'change', ok: 200, call: onNew('canceledTask', 'post', 'duplicate/') },
  'POST /api/projects/{project_id}/tasks/{task_id}/compact/': { rule: 'delete', ok: 200, call: onNew('canceledTask', 'post', 'compact/') },
  'GET /api/projects/{project_id}/tasks/{task_id}/backup': { rule: 'read', ok: 200, call: onCompleted('backup') },
  'GET /api/projects/{project_id}/tasks/{task_id}/output/': { rule: 'view', ok: 200, call: onCompleted('output/') },
  'GET /api/projects/{project_id}/tasks/{task_id}/download/{asset}': { rule: 'read', ok: 200, call: onCompleted('download/orthophoto.tif') },
  'GET /api/projects/{project_id}/tasks/{task_id}/assets/{*}': { rule: 'read', ok: 200, call: onCompleted('assets/odm_orthophoto/odm_orthophoto.tif') },
  'GET /api/projects/{project_id}/tasks/{task_id}/{layer}/tiles.json': { rule: 'read', ok: 200, call: onCompleted('orthophoto/tiles.json') },
  'GET /api/projects/{project_id}/tasks/{task_id}/{layer}/metadata': { rule: 'read', ok: 200, call: onCompleted('orthophoto/metadata') },
  'GET /api/projects/{project_id}/tasks/{task_id}/{layer}/tiles/{z}/{x}/{y}': { rule: 'read', ok: 200, call: (c, fx) => onCompleted(`orthophoto/tiles/${fx.tile}.png`)(c, fx) },
  'GET /api/projects/{project_id}/tasks/{task_id}/{layer}/bounds': { rule: 'read', ok: 200, call: onCompleted('orthophoto/bounds') },
  'GET /api/projects/{project_id}/tasks/{task_id}/thumbnail': { rule: 'read', ok: 200, call: onCompleted('thumbnail?size=32') },
  'GET /api/projects/{project_id}/tasks/{task_id}/textured_model/': { rule: 'read', ok: 200, call: onCompleted('textured_model/') },
  'POST /api/projects/{project_id}/tasks/{task_id}/{layer}/export': { rule: 'read', ok: 200, call: (c, fx) =>
    c.post(`${tasksOf(fx)}${fx.completed}/orthophoto/export`, { format: 'gtiff' }) },
  // The task has no elevation model: past the permission check, these are refused for what it lacks.
  'POST /api/projects/{project_id}/tasks/{task_id}/volume': { rule: 'read', ok: 400, call: (c, fx) =>
    c.post(`${tasksOf(fx)}${fx.completed}/volume`, { area: { type: 'Polygon', coordinates: [[[0, 0], [0.001, 0], [0, 0.001], [0, 0]]] } }) },
  'POST /api/projects/{project_id}/tasks/{task_id}/{layer}/contours': { rule: 'read', ok: 400, call: (c, fx) =>
    c.post(`${tasksOf(fx)}${fx.completed}/dsm/contours`, { interval: 1 }) },
  'POST /api/projects/{project_id}/tasks/{task_id}/{layer}/difference': { rule: 'read', ok: 400, call: (c, fx) =>
    c.post(`${tasksOf(fx)}${fx.completed}/dsm/difference`, { reference_project: fx.project, reference_task: fx.completed }) },
  'GET /api/projects/{project_id}/tasks/{task_id}/gcp/': { rule: 'read', ok: 200, call: async (c, fx) => c.get(`${tasksOf(fx)}${await fx.gcpTask()}/gcp/`) },
  'PUT /api/projects/{project_id}/tasks/{task_id}/gcp/': { rule: 'change', ok: 200, call: onNew('partialTask', 'put', 'gcp/', { gcp_list: GCP_LIST }) },
  'POST /api/projects/{project_id}/tasks/{task_id}/gcp/sightings': { rule: 'read', ok: 200, call: onNew('partialTask', 'post', 'gcp/sightings', {
    crs: 'EPSG:32632', points: [{ name: 'a', x: 500000, y: 5000000, z: 100 }] }) },
  'GET /api/workers/check/{id}': { rule: 'open', ok: 200, call: (c) => c.get('/api/workers/check/00000000-0000-4000-8000-000000000000') },
  'GET /api/workers/get/{id}': { rule: 'open', ok: 200, call: (c) => c.get('/api/workers/get/00000000-0000-4000-8000-000000000000') },
  'GET /api/projects/{project_id}/tasks/{task_id}/images/download/{filename}': { rule: 'read', ok: 200, call: async (c, fx) =>
    c.get(`${tasksOf(fx)}${await fx.partialTask()}/images/download/IMG_0000.JPG`) },
  'GET /api/projects/{project_id}/tasks/{task_id}/images/thumbnail/{filename}': { rule: 'read', ok: 200, call: async (c, fx) =>
    c.get(`${tasksOf(fx)}${await fx.partialTask()}/images/thumbnail/IMG_0000.JPG?size=16`) },
  'GET /api/projects/{project_id}/tasks/{task_id}/3d/scene': { rule: 'read', ok: 200, call: onCompleted('3d/scene') },
  'POST /api/projects/{project_id}/tasks/{task_id}/3d/scene': { rule: 'scene', ok: 200, call: sceneWrite('scene', { type: 'Potree', version: 1.7 }) },
  'POST /api/projects/{project_id}/tasks/{task_id}/3d/cameraview': { rule: 'scene', ok: 200, call: sceneWrite('cameraview', { position: [0, 0, 10] }) },
  'GET /public/task/{task_id}/json/': { rule: 'open', ok: 200, call: async (c, fx) => c.get(`/public/task/${await fx.publicTask()}/json/`) },
  'POST /api/projects/{project_id}/tasks/import': { rule: 'change', ok: 200, call: (c, fx) => postForm(c, `${tasksOf(fx)}import`, chunkForm()) },
  'POST /api/projects/{project_id}/tasks/import/external/init': { rule: 'change', ok: 200, call: (c, fx) => c.post(`${tasksOf(fx)}import/external/init`) },
  'POST /api/projects/{project_id}/tasks/import/external/upload': { rule: 'change', ok: 200, call: externalUpload },
  // A commit of nothing: 400 for those who may import, refused before the check for the others.
  'POST /api/projects/{project_id}/tasks/import/external/commit': {
    rule: 'change',
    ok: 400,
    call: async (c, fx) => c.post(`${tasksOf(fx)}import/external/commit`, { uuid: (await c.post(`${tasksOf(fx)}import/external/init`)).body.uuid }),
  },
};

/** A DSM's upload into an external import the caller begins (the file is checked only at commit). */
async function externalUpload(client: Client, fx: Fixtures): Promise<Reply> {
  const uuid = (await client.post(`${tasksOf(fx)}import/external/init`)).body.uuid ?? '00000000-0000-4000-8000-000000000000';
  const form = new FormData();
  form.append('uuid', uuid);
  form.append('dsm', new Blob([Buffer.from('II*\0')]), 'dsm.tif');
  return postForm(client, `${tasksOf(fx)}import/external/upload`, form);
}

/** The first of two Dropzone chunks of an import: accepted ({"uploaded": true}) without a task yet. */
function chunkForm(): FormData {
  const form = new FormData();
  form.append('dzuuid', `c${Math.random().toString(36).slice(2)}`);
  form.append('dzchunkindex', '0');
  form.append('dztotalchunkcount', '2');
  form.append('dzchunkbyteoffset', '0');
  form.append('file', new Blob([Buffer.from('PK\x03\x04')]), 'all.zip');
  return form;
}

/** The orthophoto of the completed task: 256 px square, red growing eastwards. */
const GRADIENT = 'rgba = np.full((4, 256, 256), 255, np.uint8); rgba[0] = np.arange(256, dtype=np.uint8)';

/** A tile inside the layer: the one under the middle of its bounds at its lowest zoom. */
function middleTile(layer: { bounds: number[]; minzoom: number }): string {
  const [west, south, east, north] = layer.bounds;
  const lon = (west + east) / 2;
  const lat = ((south + north) / 2) * (Math.PI / 180);
  const n = 2 ** layer.minzoom;
  const x = Math.floor(((lon + 180) / 360) * n);
  const y = Math.floor(((1 - Math.log(Math.tan(lat) + 1 / Math.cos(lat)) / Math.PI) / 2) * n);
  return `${layer.minzoom}/${x}/${y}`;
}

describe.each(QUICK_BACKENDS)('the permission matrix over the whole API (%s)', (backend) => {
  let t: TestService;
  let callers: Record<Role, Client>;
  let fx: Fixtures;

  beforeAll(async () => {
    t = await startService(backend);
    const work = path.join(t.dataDir, 'matrix');
    await mkdir(work, { recursive: true });
    callers = await createCallers(t);
    const { owner } = callers;
    const shared = async () => {
      const id = (await owner.post('/api/projects/', { name: 'Field' })).body.id as number;
      await owner.post(`/api/projects/${id}/edit/`, { permissions: [{ groupname: 'surveyors', permissions: ['view'] }] });
      return id;
    };
    const project = await shared();
    const photos = await makeJpegs(path.join(work, 'photos'), 2);
    const imported = await postForm(owner, `/api/projects/${project}/tasks/import`, await imageForm([orthophotoZip(work, GRADIENT, 0.5, true)], { name: 'done' }, 'file'));
    const done = await waitForTask(owner, `/api/projects/${project}/tasks/${imported.body.id}/`, finished);
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    const layer = (await owner.get(`/api/projects/${project}/tasks/${done.id}/orthophoto/tiles.json`)).body;
    let counter = 0;
    fx = {
      project,
      completed: done.id,
      tile: middleTile(layer),
      photo: photos[0],
      async partialTask() {
        const id = (await owner.post(`/api/projects/${project}/tasks/`, { partial: true, name: 'flight' })).body.id as number;
        expect((await postForm(owner, `/api/projects/${project}/tasks/${id}/upload/`, await imageForm(photos))).status).toBe(200);
        return id;
      },
      async gcpTask() {
        const id = await this.partialTask();
        expect((await owner.put(`/api/projects/${project}/tasks/${id}/gcp/`, { gcp_list: GCP_LIST })).status).toBe(200);
        return id;
      },
      async publicTask() {
        const id = await this.partialTask();
        expect((await owner.patch(`/api/projects/${project}/tasks/${id}/`, { public: true })).status).toBe(200);
        return id;
      },
      async queuedTask() {
        const id = await this.partialTask();
        expect((await owner.post(`/api/projects/${project}/tasks/${id}/commit/`)).status).toBe(200);
        return id;
      },
      async canceledTask() {
        const id = await this.queuedTask();
        expect((await owner.post(`/api/projects/${project}/tasks/${id}/cancel/`)).status).toBe(200);
        await waitForTask(owner, `/api/projects/${project}/tasks/${id}/`, finished);
        return id;
      },
      newProject: shared,
      newPreset: async () => (await owner.post('/api/presets/', { name: 'Owner preset' })).body.id,
      newNode: async () => (await t.admin.post('/api/processingnodes/', { hostname: `n${++counter}.example.org`, port: 3000 })).body.id,
      newUser: async () => (await t.admin.post('/api/admin/users/', { username: `target${++counter}`, password: 'a-password' })).body.id,
      newGroup: async () => (await t.admin.post('/api/admin/groups/', { name: `team${++counter}` })).body.id,
    };
  }, 120_000);
  afterAll(() => t?.close());

  it('has a row for every operation of the OpenAPI document', async () => {
    const doc = (await t.anonymous.get('/api/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.entries(doc.paths).flatMap(([route, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${route}`));
    expect(operations.sort()).toEqual(Object.keys(MATRIX).sort());
  });

  it.each(Object.entries(MATRIX))('%s', async (operation, { rule, ok, call }) => {
    const answers: Record<string, number> = {};
    const expected: Record<string, number> = {};
    for (const role of ROLES) {
      answers[role] = (await call(callers[role], fx)).status;
      expected[role] = REFUSED[rule][role] ?? ok;
    }
    expect(answers, `${operation} (${rule})`).toEqual(expected);
  }, 60_000);

  it('opens the reads of a public project\'s tasks to everyone, and the scene writes with public_edit', async () => {
    const answers = async (rule: Rule) => {
      const seen: Record<string, Record<string, number>> = {};
      for (const [operation, row] of Object.entries(MATRIX).filter(([, entry]) => entry.rule === rule)) {
        seen[operation] = {};
        for (const role of ROLES) seen[operation][role] = (await row.call(callers[role], fx)).status;
      }
      return seen;
    };
    const everyone = (rule: Rule, refused: Partial<Record<Role, number>> = {}) =>
      Object.fromEntries(
        Object.entries(MATRIX)
          .filter(([, entry]) => entry.rule === rule)
          .map(([operation, { ok }]) => [operation, Object.fromEntries(ROLES.map((role) => [role, refused[role] ?? ok]))]),
      );
    const project = `/api/projects/${fx.project}/`;
    expect((await callers.owner.patch(project, { public: true })).status).toBe(200);
    expect(await answers('read')).toEqual(everyone('read'));
    expect(await answers('scene')).toEqual(everyone('scene', { anonymous: 403, other: 403, staff: 403, member: 403 }));
    expect((await callers.owner.patch(project, { public_edit: true })).status).toBe(200);
    expect(await answers('scene')).toEqual(everyone('scene'));
    expect((await callers.owner.patch(project, { public: false, public_edit: false })).status).toBe(200);
  }, 120_000);
});
