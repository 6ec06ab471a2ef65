import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestService, startService } from './helpers.ts';

describe('OpenAPI document', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService('sqlite');
  });
  afterAll(() => t?.close());

  it('answers a path parameter of any length as documented (404), not with the router\'s 414', async () => {
    const reply = await t.admin.get(`/api/projects/1/tasks/1/download/${'a'.repeat(300)}`);
    expect(reply.status).toBe(404);
  });

  it('is served as OpenAPI 3.1 without a token and covers the API', async () => {
    const reply = await t.anonymous.get('/api/openapi.json');
    expect(reply.status).toBe(200);
    const doc = reply.body;
    expect(doc.openapi).toBe('3.1.0');
    for (const path of [
      '/api/token-auth/',
      '/api/projects/',
      '/api/projects/{id}/',
      '/api/projects/{id}/permissions/',
      '/api/projects/{id}/edit/',
      '/api/presets/{id}/',
      '/presets/{id}/',
      '/api/processingnodes/',
      '/api/processingnodes/options/',
      '/api/admin/users/{id}/',
      '/api/admin/groups/',
    ]) {
      expect(doc.paths, path).toHaveProperty([path]);
    }
    expect(Object.keys(doc.paths['/api/projects/{id}/']).sort()).toEqual(['delete', 'get', 'patch', 'put']);
    expect(Object.keys(doc.paths['/presets/{id}/'])).toEqual(['patch']);
    expect(doc.components.schemas.Project.properties.permissions.type).toBe('array');
    expect(doc.components.schemas.ProcessingNode.properties.max_images.type).toEqual(['integer', 'null']);
  });

  it('documents the same schemas that validate requests', async () => {
    const doc = (await t.anonymous.get('/api/openapi.json')).body;
    const create = doc.paths['/api/projects/'].post;
    const body = create.requestBody.content['application/json'].schema;
    expect(body.required).toEqual(['name']);
    expect(body.properties.name.maxLength).toBe(255);
    const list = doc.paths['/api/projects/'].get.parameters.map((p: { name: string }) => p.name);
    expect(list).toEqual(expect.arrayContaining(['id', 'name', 'description', 'created_at', 'ordering', 'page', 'page_size']));
    const nodeFilters = doc.paths['/api/processingnodes/'].get.parameters.map((p: { name: string }) => p.name);
    expect(nodeFilters).toEqual(
      expect.arrayContaining(['id', 'hostname', 'port', 'api_version', 'queue_count', 'max_images', 'engine_version', 'engine', 'has_available_options', 'ordering']),
    );
    // What the document says is required is what the API enforces.
    expect((await t.admin.post('/api/projects/', { description: 'no name' })).body).toEqual({ name: ['This field is required.'] });
  });

  it('has browsable docs', async () => {
    const page = await t.anonymous.get('/api/docs');
    expect(page.status).toBe(200);
    expect(page.body).toContain('swagger');
  });
});
