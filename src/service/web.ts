// The web application (web/, built by `make build` into dist/web) at / on the API's port. Its pages are client
// routes (/dashboard/, /map/project/1/task/2/, ...): any GET outside /api that names no built file answers
// index.html, and the application draws the page. Hashed bundles are cached for good; index.html never.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from './typed-app.ts';

export const WEB_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'web');

const IMMUTABLE = /^\/assets\//;

/** Whether the application is built (without a build, the API alone is served). */
export const webAppBuilt = (webDir = WEB_DIR): boolean => existsSync(path.join(webDir, 'index.html'));

export async function registerWebApp(app: App, webDir = WEB_DIR): Promise<void> {
  await app.register(fastifyStatic, {
    root: webDir,
    prefix: '/',
    wildcard: false,
    index: false,
    // The build writes .br and .gz copies (web/vite.config.ts): sent to browsers that accept them.
    preCompressed: true,
    cacheControl: false,
    setHeaders: (res, filePath) => {
      const relative = `/${path.relative(webDir, filePath).split(path.sep).join('/')}`;
      res.header('cache-control', IMMUTABLE.test(relative) ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
}

/** Whether a request that matched no route is a page of the application (rather than an API call). */
export function isPageRequest(request: FastifyRequest): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  const pathname = request.url.split('?')[0];
  return !pathname.startsWith('/api/') && pathname !== '/api' && !IMMUTABLE.test(pathname);
}

export function sendPage(reply: FastifyReply) {
  return reply.header('cache-control', 'no-cache').type('text/html; charset=utf-8').sendFile('index.html');
}
