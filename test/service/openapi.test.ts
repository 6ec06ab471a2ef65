import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type TestService, startService } from './helpers.ts';

interface Parameter {
  name: string;
  in: string;
  schema: { type?: string; maximum?: number; enum?: string[] };
}
type Operations = Record<string, Record<string, { parameters?: Parameter[]; responses: Record<string, unknown> }>>;

/** Every operation of the document: its method, path template and path parameters. */
async function operations(client: Client) {
  const paths = (await client.get('/api/openapi.json')).body.paths as Operations;
  return Object.entries(paths).flatMap(([template, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({
      method: method.toUpperCase(),
      template,
      operation,
      pathParameters: (operation.parameters ?? []).filter((p) => p.in === 'path'),
    })),
  );
}

/** A path of this template whose integer parameters are one beyond PostgreSQL's integer, the others valid. */
function beyondRange(template: string, parameters: Parameter[]): string {
  const value = (p: Parameter) => (p.schema.type === 'integer' ? '2147483648' : (p.schema.enum?.[0] ?? (p.name === 'layer' ? 'orthophoto' : '1')));
  return parameters.reduce((url, p) => url.replace(`{${p.name}}`, value(p)), template);
}

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

  it('documents a 400 for every operation, and bounds every id in a path to the columns\' range', async () => {
    for (const { method, template, operation, pathParameters } of await operations(t.anonymous)) {
      expect(operation.responses, `${method} ${template}`).toHaveProperty(['400']);
      for (const p of pathParameters.filter((p) => p.schema.type === 'integer' && p.name !== 'z' && p.name !== 'x')) {
        expect(p.schema.maximum, `${method} ${template} ${p.name}`).toBe(2147483647);
      }
    }
  });

  it('has browsable docs', async () => {
    const page = await t.anonymous.get('/api/docs');
    expect(page.status).toBe(200);
    expect(page.body).toContain('swagger');
  });
});

describe('ids beyond the integer columns on PostgreSQL', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService('postgres');
  });
  afterAll(() => t?.close());

  it('answers 404 on every route', async () => {
    const checked = [];
    for (const { method, template, pathParameters } of await operations(t.admin)) {
      if (!pathParameters.some((p) => p.schema.type === 'integer')) continue;
      const path = beyondRange(template, pathParameters);
      const reply = await t.admin.request(method, path, method === 'GET' ? {} : { json: {} });
      expect(reply.status, `${method} ${path}`).toBe(404);
      checked.push(path);
    }
    expect(checked).toContain('/api/projects/2147483648/tasks/2147483648/orthophoto/tiles.json');
  });

  it('refuses an integer filter beyond them with a 400 naming it', async () => {
    const project = (await t.admin.post('/api/projects/', { name: 'Survey' })).body.id;
    const reply = await t.admin.get(`/api/projects/${project}/tasks/`, { status: 2147483648 });
    expect(reply).toMatchObject({ status: 400, body: { status: ['Ensure this value is less than or equal to 2147483647.'] } });
  });
});
