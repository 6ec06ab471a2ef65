// What the browser is told about everything the service sends. Task results are files that users upload (an
// imported zip may hold any file), so a result must never run as a page of the application's origin, where a
// script could read a signed-in user's token: results are served with a sandboxing policy, as attachments unless
// their type is inert, and never sniffed. The application's own pages load scripts from the origin alone and
// cannot be framed (clickjacking), but for the iframe pages of public tasks, which exist to be embedded.
import type { FastifyReply } from 'fastify';
import type { App } from './typed-app.ts';

// The application: its bundles, MapLibre's and the 3D view's workers (blob: for MapLibre's), the WebAssembly
// decoders (laz-perf, Draco), and the OpenStreetMap base layer.
const BASE_MAP = 'https://tile.openstreetmap.org';
export const APP_POLICY = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "worker-src 'self' blob:",
  "style-src 'self' 'unsafe-inline'",
  `img-src 'self' data: blob: ${BASE_MAP}`,
  `connect-src 'self' data: blob: ${BASE_MAP}`,
  "font-src 'self' data:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

// The pages made to be embedded in other sites (a public task's /iframe/ map and 3D view): any site may frame them.
// They show only what anyone may see, and sign nobody in.
export const FRAMEABLE_APP_POLICY = APP_POLICY.replace("frame-ancestors 'none'", 'frame-ancestors *');

// A result opened in the browser: no script, no plugin, an origin of its own (sandbox), nothing fetched.
export const RESULT_POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox; frame-ancestors 'none'";

// Types a browser shows without running anything; any other result is downloaded, whatever its name says (a PDF
// too: viewers run its scripts, and a sandboxed document cannot show one).
const INERT_TYPES = /^(image\/(png|jpeg|gif|webp|tiff)|text\/(plain|csv)|application\/(json|geo\+json|octet-stream))\s*(;|$)/i;

export function installSecurityHeaders(app: App): void {
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'same-origin');
    if (!reply.hasHeader('content-security-policy')) {
      reply.header('content-security-policy', APP_POLICY);
      reply.header('x-frame-options', 'DENY');
    }
    return payload;
  });
}

/**
 * Headers of a task's result: inline only when asked for and its type is inert, else a download; sandboxed in
 * case a browser renders it anyway.
 */
export function resultHeaders(reply: FastifyReply, filename: string, inline: boolean): FastifyReply {
  const shown = inline && INERT_TYPES.test(String(reply.getHeader('content-type') ?? ''));
  const disposition = shown ? 'inline' : `attachment; filename="${filename.replace(/["\\\r\n]/g, '_')}"`;
  return reply.header('content-disposition', disposition).header('content-security-policy', RESULT_POLICY);
}
