// `aeromap process --node https://...` against a node stand-in served over TLS (a certificate made for the test,
// trusted through NODE_EXTRA_CA_CERTS) whose first polls fail: the token never travels in clear, and a few
// failed polls during processing do not end the run.
import { execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZipFile } from 'yazl';
import { REPO, makeJpegs } from './service/taskhelpers.ts';

const ORTHOPHOTO = Buffer.alloc(200_000, 7);

async function allZip(): Promise<Buffer> {
  const zip = new ZipFile();
  zip.addBuffer(ORTHOPHOTO, 'odm_orthophoto/odm_orthophoto.tif');
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function aeromapProcess(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(path.join(REPO, 'bin', 'aeromap'), ['process', ...args], { env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

describe('aeromap process on a node over https', () => {
  let work: string;
  let server: ReturnType<typeof createServer>;
  let port: number;
  const seen: { path: string; token: string | null }[] = [];
  let polls = 0;

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-https-'));
    const key = path.join(work, 'key.pem');
    const cert = path.join(work, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    const zip = await allZip();
    server = createServer({ key: await readFile(key), cert: await readFile(cert) }, (request, response) => {
      const url = new URL(request.url ?? '/', 'https://node');
      seen.push({ path: url.pathname, token: url.searchParams.get('token') });
      request.resume();
      const json = (body: unknown, status = 200) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (url.pathname === '/task/new/init' || url.pathname.startsWith('/task/new/commit/')) return json({ uuid: 'f00d' });
      if (url.pathname.startsWith('/task/new/upload/')) return request.once('end', () => json({ success: true }));
      if (url.pathname === '/task/f00d/info') {
        polls++;
        // The first polls fail: a dropped connection, then a proxy's 502s.
        if (polls === 1) return void request.socket.destroy();
        if (polls <= 3) return void response.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad Gateway</h1>');
        const code = polls < 5 ? 20 : 40;
        return json({ uuid: 'f00d', processingTime: 1, status: { code }, imagesCount: 2, progress: code === 40 ? 100 : 50, output: [] });
      }
      if (url.pathname === '/task/f00d/download/all.zip') return void response.writeHead(200, { 'content-type': 'application/zip', 'content-length': zip.length }).end(zip);
      json({ error: 'not found' }, 404);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    await writeFile(path.join(work, 'ca.pem'), await readFile(cert));
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await rm(work, { recursive: true, force: true });
  });

  it('talks TLS to the node, rides out failed polls, and downloads the products', async () => {
    const folder = path.join(work, 'survey');
    await mkdir(folder);
    await makeJpegs(folder, 2);
    const run = await aeromapProcess([folder, '--node', `https://127.0.0.1:${port}`, '--token', 'secret'], { NODE_EXTRA_CA_CERTS: path.join(work, 'ca.pem') });
    expect(run.code, run.stderr).toBe(0);
    expect(polls).toBeGreaterThanOrEqual(5);
    expect(seen.length).toBeGreaterThan(5);
    expect(seen.every((request) => request.token === 'secret')).toBe(true);
    expect(await readFile(path.join(folder, 'odm_orthophoto', 'odm_orthophoto.tif'))).toEqual(ORTHOPHOTO);
    expect((await stat(path.join(folder, 'odm_orthophoto', 'odm_orthophoto.tif'))).size).toBe(ORTHOPHOTO.length);
  }, 120_000);

  it('refuses a node URL that is not http or https, with exit status 2', async () => {
    const folder = path.join(work, 'other');
    await mkdir(folder);
    await makeJpegs(folder, 1);
    const run = await aeromapProcess([folder, '--node', 'ftp://127.0.0.1:21'], {});
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--node: only http and https URLs are allowed (ftp://127.0.0.1:21)');
  }, 60_000);
});
