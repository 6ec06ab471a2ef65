// The OpenAPI 3.1 document at /api/openapi.json and browsable docs at /api/docs, both generated from the
// routes' TypeBox schemas.
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { App } from './typed-app.ts';

export async function registerOpenApi(app: App, version: string): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Aeromap API',
        version,
        description:
          'The WebODM-compatible API of Aeromap. Obtain a token at POST /api/token-auth/ and send it as "Authorization: JWT <token>" or ?jwt=<token>.',
      },
      components: {
        securitySchemes: {
          jwtHeader: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'JWT <token>' },
          jwtQuery: { type: 'apiKey', in: 'query', name: 'jwt' },
        },
      },
      security: [{ jwtHeader: [] }, { jwtQuery: [] }],
    },
    // Shared schemas keep their $id as their name under components/schemas.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (json.$id as string) || `def-${i}` },
  });
  // The docs page brings a policy of its own for its scripts; it is not framed either, takes the inline styles the
  // page sets, and leaves plain-HTTP installs on plain HTTP (its default upgrades every request to HTTPS).
  await app.register(swaggerUi, {
    routePrefix: '/api/docs',
    staticCSP: true,
    transformStaticCSP: (policy) =>
      policy
        .split(';')
        .map((directive) => directive.trim())
        .filter((directive) => directive && directive !== 'upgrade-insecure-requests')
        .map((directive) => (directive.startsWith('frame-ancestors') ? "frame-ancestors 'none'" : directive))
        .map((directive) => (directive.startsWith('style-src') ? `${directive} 'unsafe-inline'` : directive))
        .join('; '),
  });
  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
