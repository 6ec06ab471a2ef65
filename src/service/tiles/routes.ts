// The tile layer routes of the spec: {orthophoto|dsm|dtm}/tiles.json (TileJSON 2.1.0), .../metadata (what WebODM's
// map reads before drawing a layer: statistics, colour maps, vegetation indices) and
// {orthophoto|dsm|dtm}/tiles/{z}/{x}/{y}[@2x][.png] with WebODM's query (size, rescale, color_map, hillshade,
// formula and bands), .../bounds, and the task's thumbnail (its orthophoto in small). Read by whoever may read the
// task: its viewers, and anyone when it is public (`?jwt=` works, as map clients cannot send headers). Tiles carry
// an ETag and may be cached by the browser.
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { ANONYMOUS, OPTIONAL_SECURITY, optionalUser } from '../auth.ts';
import { HttpError, notFound } from '../errors.ts';
import type { App } from '../typed-app.ts';
import { TaskParams } from '../tasks/schema.ts';
import type { TaskRules } from '../tasks/tasks.ts';
import { PlantQuery, TileQuery, asksForIndex, plantIndex, tileSize, tileStyle } from './query.ts';
import { TILE_LAYERS, type TileLayer, type TileService, servedZooms } from './service.ts';
import { RasterMetadata } from './worker.ts';

const Layer = Type.Union(Object.keys(TILE_LAYERS).map((layer) => Type.Literal(layer)));
const LayerParams = Type.Object({ ...TaskParams.properties, layer: Layer });
const TileParams = Type.Object({
  ...LayerParams.properties,
  z: Type.Integer({ minimum: 0, maximum: 30 }),
  x: Type.Integer({ minimum: 0 }),
  y: Type.String({ pattern: '^\\d+(@[12]x)?(\\.png)?$', description: 'Y, with an optional .png' }),
});

const TileJson = Type.Object({
  tilejson: Type.Literal('2.1.0'),
  name: Type.String(),
  version: Type.String(),
  scheme: Type.Literal('xyz'),
  tiles: Type.Array(Type.String()),
  minzoom: Type.Integer(),
  maxzoom: Type.Integer(),
  bounds: Type.Array(Type.Number(), { description: '[west, south, east, north] in degrees' }),
  center: Type.Array(Type.Number(), { description: '[longitude, latitude, zoom]' }),
  value_range: Type.Optional(Type.Array(Type.Number(), { description: 'Elevation models: the heights the colour ramp spans, in metres' })),
  color_map: Type.Optional(Type.String()),
});

const Metadata = Type.Object({
  name: Type.String(),
  scheme: Type.Literal('xyz'),
  tiles: Type.Array(Type.String()),
  minzoom: Type.Integer(),
  maxzoom: Type.Integer(),
  bounds: Type.Object({ value: Type.Array(Type.Number(), { description: '[west, south, east, north]' }), crs: Type.String() }),
  ...RasterMetadata.properties,
});

/** Query parameters a layer's tile URL passes on, as WebODM's tiles.json and metadata do; the tiles check them. */
const STYLE_PARAMETERS = ['formula', 'bands', 'rescale', 'color_map', 'hillshade'] as const;
const LayerQuery = Type.Object(
  {
    ...PlantQuery,
    rescale: Type.Optional(Type.String({ description: 'Passed on to the tile URL' })),
    color_map: Type.Optional(Type.String({ description: 'Passed on to the tile URL' })),
    hillshade: Type.Optional(Type.String({ description: 'Passed on to the tile URL' })),
  },
  { additionalProperties: true },
);

function tileUrl(task: { id: number; project_id: number }, layer: TileLayer, query: Static<typeof LayerQuery>): string {
  const url = `/api/projects/${task.project_id}/tasks/${task.id}/${layer}/tiles/{z}/{x}/{y}.png`;
  const passed = new URLSearchParams();
  for (const name of STYLE_PARAMETERS) {
    const value = query[name];
    if (value) passed.set(name, value);
  }
  return passed.size > 0 ? `${url}?${passed}` : url;
}

type LayerRequest = { project_id: number; task_id: number; layer: TileLayer };

const Bounds = Type.Object({
  url: Type.String({ description: "The layer's tile URL template" }),
  bounds: Type.Array(Type.Number(), { description: '[west, south, east, north] in degrees' }),
});

const ThumbnailQuery = Type.Object({
  size: Type.Integer({ minimum: 1, maximum: 1024, default: 256, description: 'Pixels of the longer side (at most: a small orthophoto is not enlarged)' }),
});

export async function tileRoutes(app: App, rules: TaskRules, tiles: TileService): Promise<void> {
  const tags = ['tiles'];
  const base = '/api/projects/:project_id/tasks/:task_id/:layer';

  const formulasFor = (query: { formula?: string; bands?: string }) => (asksForIndex(query) ? tiles.formulas() : undefined);

  const pyramidOf = async (request: FastifyRequest, layer = (request.params as LayerRequest).layer) => {
    const { project_id: projectId, task_id: taskId } = request.params as LayerRequest;
    const { task } = await rules.readable(optionalUser(request), projectId, taskId);
    const folder = rules.folder(task);
    const pyramid = await tiles.pyramids.get(folder.assets, layer);
    if (!pyramid) {
      const assets = JSON.parse(task.available_assets) as string[];
      const hasRaster = assets.includes(`${layer}.tif`);
      if (hasRaster) throw new HttpError(404, { detail: `The ${layer} tiles of this task are not built yet.` });
      throw notFound(`This task has no ${layer}.`);
    }
    return { task, folder, pyramid, layer };
  };

  app.get(
    `${base}/tiles.json`,
    {
      ...ANONYMOUS,
      schema: {
        security: OPTIONAL_SECURITY,
        tags,
        summary: "A tile layer's TileJSON",
        params: LayerParams,
        querystring: LayerQuery,
        response: { 200: TileJson, 403: Type.Ref('Error'), 404: Type.Ref('Error') },
      },
    },
    async (request) => {
      const { task, pyramid, layer } = await pyramidOf(request);
      const { info } = pyramid;
      return {
        tilejson: '2.1.0' as const,
        name: task.name || `Task #${task.id}`,
        version: '1.0.0',
        scheme: 'xyz' as const,
        tiles: [tileUrl(task, layer, request.query)],
        ...servedZooms(info),
        bounds: info.bounds,
        center: info.center,
        ...(info.valueRange ? { value_range: info.valueRange, color_map: info.colorMap ?? 'viridis' } : {}),
      };
    },
  );

  app.get(
    `${base}/metadata`,
    {
      ...ANONYMOUS,
      schema: {
        security: OPTIONAL_SECURITY,
        tags,
        summary: "A tile layer's statistics and choices, as WebODM's map reads them; of a vegetation index with formula and bands",
        params: LayerParams,
        querystring: LayerQuery,
        response: { 200: Metadata, 400: Type.Ref('Error'), 403: Type.Ref('Error'), 404: Type.Ref('Error'), 503: Type.Ref('Error') },
      },
    },
    async (request) => {
      const { task, folder, pyramid, layer } = await pyramidOf(request);
      const described = await tiles.metadata(folder, layer, plantIndex(layer, request.query, await formulasFor(request.query)));
      return {
        ...described,
        name: task.name || `Task #${task.id}`,
        scheme: 'xyz' as const,
        tiles: [tileUrl(task, layer, request.query)],
        ...servedZooms(pyramid.info),
        bounds: { value: pyramid.info.bounds, crs: 'EPSG:4326' },
      };
    },
  );

  app.get(
    `${base}/bounds`,
    {
      ...ANONYMOUS,
      schema: {
        tags,
        security: OPTIONAL_SECURITY,
        summary: "A tile layer's bounds and tile URL, as WebODM answers them",
        params: LayerParams,
        querystring: LayerQuery,
        response: { 200: Bounds, 403: Type.Ref('Error'), 404: Type.Ref('Error') },
      },
    },
    async (request) => {
      const { task, pyramid, layer } = await pyramidOf(request);
      return { url: tileUrl(task, layer, request.query), bounds: pyramid.info.bounds };
    },
  );

  app.get(
    '/api/projects/:project_id/tasks/:task_id/thumbnail',
    {
      ...ANONYMOUS,
      schema: {
        tags,
        security: OPTIONAL_SECURITY,
        summary: "The task's orthophoto in small: PNG, or WebP when the Accept header takes image/webp",
        params: TaskParams,
        querystring: ThumbnailQuery,
        response: { 400: Type.Ref('Error'), 403: Type.Ref('Error'), 404: Type.Ref('Error') },
      },
    },
    async (request, reply) => {
      const { pyramid } = await pyramidOf(request, 'orthophoto');
      const format = /image\/webp/.test(request.headers.accept ?? '') ? 'webp' : 'png';
      const data = await tiles.thumbnail(pyramid, request.query.size, format);
      return reply.type(`image/${format}`).header('cache-control', 'private, max-age=3600').header('vary', 'Accept').send(data);
    },
  );

  app.get(
    `${base}/tiles/:z/:x/:y`,
    {
      ...ANONYMOUS,
      schema: {
        security: OPTIONAL_SECURITY,
        tags,
        summary: 'A PNG tile (XYZ scheme), 256 px unless size=512 or @2x',
        params: TileParams,
        querystring: TileQuery,
        response: {
          304: Type.Null({ description: 'Not modified (If-None-Match)' }),
          400: Type.Ref('Error'),
          403: Type.Ref('Error'),
          404: Type.Ref('Error'),
          503: Type.Ref('Error', { description: 'Every tile worker is busy and the queue is full: try again after Retry-After seconds' }),
        },
      },
    },
    async (request, reply) => {
      const { folder, pyramid, layer } = await pyramidOf(request);
      const { z, x, y } = request.params;
      const style = tileStyle(layer, request.query, await formulasFor(request.query));
      const tileRequest = { layer, z, x, y: Number.parseInt(y, 10), size: tileSize(request.query, y), style };
      const { data, etag } = await tiles.tile(folder, pyramid, tileRequest);
      reply.header('etag', etag).header('cache-control', 'private, max-age=86400');
      if (request.headers['if-none-match'] === etag) return reply.code(304).send(null);
      return reply.type('image/png').send(data);
    },
  );
}
