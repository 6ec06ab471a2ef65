// URLs that users give reach only public addresses unless the operator allows private ones: the address table,
// names that resolve to loopback, redirects, and an import by URL on a service that does not allow them.
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskStatus } from '../../src/protocol/status.ts';
import { OutboundError, isPrivateAddress, outboundFetch } from '../../src/net/outbound.ts';
import { type TestService, startService, testConfig } from './helpers.ts';
import { finished, waitForTask } from './taskhelpers.ts';

describe('outbound requests', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    // /hop/N redirects N more times, then answers with the method it was asked with.
    server = createServer((request, response) => {
      const hops = /^\/hop\/(\d+)$/.exec(request.url ?? '');
      if (hops && Number(hops[1]) > 0) {
        response.writeHead(request.method === 'POST' ? 303 : 302, { location: `/hop/${Number(hops[1]) - 1}` }).end();
        return;
      }
      response.end(request.method);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('tells private addresses from public ones', () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '172.20.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', 'fe80::1', 'fd00::1', '::ffff:10.0.0.1', 'not an address']) {
      expect(isPrivateAddress(address), address).toBe(true);
    }
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700::1111']) expect(isPrivateAddress(address), address).toBe(false);
  });

  it('refuses loopback, by address and by name, unless private networks are allowed', async () => {
    const closed = { allowPrivate: false };
    await expect(outboundFetch(`${base}/hop/0`, {}, closed)).rejects.toThrow(OutboundError);
    const byName = outboundFetch(`${base.replace('127.0.0.1', 'localhost')}/hop/0`, {}, closed);
    await expect(byName).rejects.toMatchObject({ cause: expect.any(OutboundError) });
    await expect(outboundFetch('file:///etc/passwd', {}, { allowPrivate: true })).rejects.toThrow(/only http and https/);
    expect(await (await outboundFetch(`${base}/hop/0`, {}, { allowPrivate: true })).text()).toBe('GET');
  });

  it('follows up to five redirects, a 303 after a POST with a GET', async () => {
    const open = { allowPrivate: true };
    expect(await (await outboundFetch(`${base}/hop/5`, {}, open)).text()).toBe('GET');
    expect(await (await outboundFetch(`${base}/hop/2`, { method: 'POST', body: 'x' }, open)).text()).toBe('GET');
    await expect(outboundFetch(`${base}/hop/6`, {}, open)).rejects.toThrow(/more than 5 redirects/);
  });
});

describe('imports by URL on a service that keeps to public addresses', () => {
  let t: TestService;
  beforeAll(async () => {
    const defaults = testConfig('', undefined).tasks;
    t = await startService('sqlite', { tasks: { ...defaults, allowPrivateUrls: false } });
  });
  afterAll(() => t?.close());

  it('fails the import with the reason and the setting that allows it', async () => {
    const project = (await t.admin.post('/api/projects/', { name: 'imports' })).body.id as number;
    const tasks = `/api/projects/${project}/tasks/`;
    const created = await t.admin.post(`${tasks}import`, { url: `${t.url}/api/` });
    expect(created.status).toBe(201);
    const task = await waitForTask(t.admin, `${tasks}${created.body.id}/`, finished);
    expect(task.status).toBe(TaskStatus.FAILED);
    expect(task.last_error).toMatch(/127\.0\.0\.1 is on a private network; set ALLOW_PRIVATE_URLS=true/);
  });
});
