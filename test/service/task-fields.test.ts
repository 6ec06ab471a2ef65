// WebODM's task fields beside the spec's: crop (a GeoJSON polygon, checked), resize_to, epsg, wkt and
// compacted (set by the service, not by clients), on create, update and in the OpenAPI document.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, type TestService, startService } from './helpers.ts';

const SQUARE = { type: 'Polygon', coordinates: [[[-92.1, 41.2], [-92.09, 41.2], [-92.09, 41.21], [-92.1, 41.2]]] };

describe.each(BACKENDS)('task fields on %s', (backend) => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService(backend);
  });
  afterAll(() => t?.close());

  it('takes a crop polygon on create and update, refuses a malformed one, and keeps service fields read-only', async () => {
    const projectId = (await t.admin.post('/api/projects/', { name: 'fields' })).body.id;
    const url = `/api/projects/${projectId}/tasks/`;
    const created = await t.admin.post(url, { partial: true, crop: SQUARE, tags: ['x'] });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ crop: SQUARE, tags: ['x'], resize_to: -1, epsg: null, wkt: null, compacted: false });
    const taskUrl = `${url}${created.body.id}/`;

    // As JSON text (forms), with a third coordinate dropped; null removes it.
    const withHeight = { type: 'Polygon', coordinates: [SQUARE.coordinates[0].map(([x, y]) => [x, y, 12])] };
    const form = await t.admin.request('PATCH', taskUrl, { form: { crop: JSON.stringify(withHeight) } });
    expect(form.status).toBe(200);
    expect(form.body.crop).toEqual(SQUARE);
    expect((await t.admin.patch(taskUrl, { crop: null })).body.crop).toBeNull();

    const open = { type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 1]]] };
    for (const bad of [open, { type: 'Point', coordinates: [0, 0] }, { type: 'Polygon', coordinates: [[[0, 0], [200, 0], [0, 1], [0, 0]]] }, 'not json']) {
      const reply = await t.admin.patch(taskUrl, { crop: bad });
      expect(reply.status, JSON.stringify(bad)).toBe(400);
      expect(reply.body.crop?.[0] ?? JSON.stringify(reply.body)).toMatch(/GeoJSON Polygon|crop/);
    }

    // What the service computes is not the client's to set.
    const patched = await t.admin.patch(taskUrl, { epsg: 4326, wkt: 'x', compacted: true, resize_to: 10 });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ epsg: null, wkt: null, compacted: false, resize_to: -1 });
  });

  it('documents the fields in the OpenAPI document', async () => {
    const { body } = await t.anonymous.get('/api/openapi.json');
    const task = body.components.schemas.Task.properties;
    for (const field of ['tags', 'resize_to', 'epsg', 'wkt', 'crop', 'compacted']) expect(task, field).toHaveProperty(field);
    expect(body.components.schemas.Project.properties).toHaveProperty('tags');
    expect(Object.keys(body.paths)).toEqual(
      expect.arrayContaining([
        '/api/projects/{id}/duplicate/',
        '/api/projects/{project_id}/tasks/{task_id}/duplicate/',
        '/api/projects/{project_id}/tasks/{task_id}/compact/',
        '/api/projects/{project_id}/tasks/{task_id}/backup',
      ]),
    );
  });
});
