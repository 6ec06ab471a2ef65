// The query of a tile request as WebODM's map sends it (`size`, `@2x`, `rescale`, `color_map`, `hillshade`, and a
// `cache` number that only defeats browser caches), reduced to what decides the picture: its size in pixels and
// a style, or no style for the pyramid's own.
import { createHash } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import { HttpError } from '../errors.ts';
import { TILE_LAYERS, type TileLayer } from './service.ts';

const NUMBER = '-?(\\d+\\.?\\d*|\\.\\d+)([eE][-+]?\\d+)?';

export const TileQuery = Type.Object(
  {
    size: Type.Optional(Type.Unsafe<256 | 512>({ type: 'integer', enum: [256, 512], description: 'Tile size in pixels (default 256)' })),
    rescale: Type.Optional(
      Type.String({ pattern: `^${NUMBER},${NUMBER}$`, description: 'min,max: the values the colour ramp spans (elevation) or that are stretched to 0-255 (orthophoto)' }),
    ),
    color_map: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_]{1,32}$', description: 'Elevation only: a colour ramp (viridis, jet, terrain, rdylgn, spectral, magma, ...; _r reverses)' })),
    hillshade: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1000, description: 'Elevation only: hillshade with this vertical exaggeration' })),
  },
  { additionalProperties: true },
);
export type TileQuery = Static<typeof TileQuery>;

export interface TileStyle {
  rescale: [number, number] | null;
  colorMap: string | null;
  hillshade: number | null;
  /** Names the style in cache keys and ETags. */
  key: string;
}

const badRequest = (detail: string) => new HttpError(400, { detail });

/** The tile's size: `size` (256 or 512), doubled by an `@2x` suffix of y. */
export function tileSize(query: TileQuery, y: string): number {
  return (query.size ?? 256) * (y.includes('@2x') ? 2 : 1);
}

/** The style a query asks for; null for the pyramid's own (no style parameter). */
export function tileStyle(layer: TileLayer, query: TileQuery): TileStyle | null {
  const { elevation } = TILE_LAYERS[layer];
  const { rescale, color_map: colorMap, hillshade } = query;
  if (rescale === undefined && colorMap === undefined && hillshade === undefined) return null;
  if (!elevation && (colorMap !== undefined || hillshade !== undefined)) {
    throw badRequest(`color_map and hillshade apply to the dsm and dtm layers, not to the ${layer}.`);
  }
  let range: [number, number] | null = null;
  if (rescale !== undefined) {
    range = rescale.split(',').map(Number) as [number, number];
    if (!range.every(Number.isFinite) || range[0] >= range[1]) throw badRequest('rescale must be min,max with min below max.');
  }
  const style = { rescale: range, colorMap: colorMap?.toLowerCase() ?? null, hillshade: hillshade ?? null };
  const key = createHash('sha1').update(JSON.stringify(style)).digest('hex').slice(0, 16);
  return { ...style, key };
}
