// The query of a tile request as WebODM's map sends it (`size`, `@2x`, `rescale`, `color_map`, `hillshade`,
// `formula` and `bands` for a vegetation index, and a `cache` number that only defeats browser caches), reduced to
// what decides the picture: its size in pixels and a style, or no style for the pyramid's own.
import { createHash } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import { HttpError } from '../errors.ts';
import type { FormulaList } from './formulas.ts';
import { TILE_LAYERS, type TileLayer } from './service.ts';

const NUMBER = '-?(\\d+\\.?\\d*|\\.\\d+)([eE][-+]?\\d+)?';

/** WebODM's Plant Health parameters, of tiles and of a layer's metadata. */
export const PlantQuery = {
  formula: Type.Optional(
    Type.String({
      maxLength: 32,
      description: 'Orthophoto only, with bands: draw this vegetation index (NDVI, VARI, GLI, EXG, ...; the metadata lists them as algorithms) on a colour ramp, gray over rescale -1,1 unless asked otherwise',
    }),
  ),
  bands: Type.Optional(
    Type.String({
      maxLength: 32,
      description: "With formula: the orthophoto's bands in order, as letters R, G, B, N (near infrared), Re (red edge), L (thermal), such as RGB, RGN or RGBN; auto for the orthophoto's own (RGB for Aeromap's)",
    }),
  ),
};

export const TileQuery = Type.Object(
  {
    size: Type.Optional(Type.Unsafe<256 | 512>({ type: 'integer', enum: [256, 512], description: 'Tile size in pixels (default 256)' })),
    rescale: Type.Optional(
      Type.String({
        pattern: `^${NUMBER},${NUMBER}$`,
        description: 'min,max: the values the colour ramp spans (elevation, a formula) or that are stretched to 0-255 (orthophoto)',
      }),
    ),
    color_map: Type.Optional(
      Type.String({ pattern: '^[A-Za-z0-9_]{1,32}$', description: 'Elevation or a formula: a colour ramp (viridis, jet, terrain, rdylgn, spectral, magma, ...; _r reverses)' }),
    ),
    hillshade: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1000, description: 'Elevation only: hillshade with this vertical exaggeration' })),
    ...PlantQuery,
  },
  { additionalProperties: true },
);
export type TileQuery = Static<typeof TileQuery>;

/** A vegetation index: the formula and the order of the orthophoto's bands it is read with. */
export interface PlantIndex {
  formula: string;
  bands: string;
}

export interface TileStyle {
  rescale: [number, number] | null;
  colorMap: string | null;
  hillshade: number | null;
  index: PlantIndex | null;
  /** Names the style in cache keys and ETags. */
  key: string;
}

const badRequest = (detail: string) => new HttpError(400, { detail });

/** Whether a query asks for a vegetation index, so that the engine's formulas are needed to check it. */
export const asksForIndex = (query: { formula?: string; bands?: string }): boolean => Boolean(query.formula || query.bands);

/** Whether `bands` is a band order such as GRReN: known letters, each once. */
function isBandOrder(bands: string, letters: string[]): boolean {
  const split = bands.match(/[A-Z][a-z]*/g) ?? [];
  return split.join('') === bands && split.every((letter) => letters.includes(letter)) && new Set(split).size === split.length;
}

/**
 * The vegetation index a query asks for (WebODM leaves empty values out), or null; `formulas` is the engine's list,
 * needed whenever asksForIndex. The engine refuses what depends on the raster: a band the orthophoto lacks.
 */
export function plantIndex(layer: TileLayer, query: { formula?: string; bands?: string }, formulas?: FormulaList): PlantIndex | null {
  const formula = query.formula || undefined;
  const bands = query.bands || undefined;
  if (formula === undefined && bands === undefined) return null;
  if (formula === undefined || bands === undefined) throw badRequest('formula and bands go together: give both, or neither.');
  if (TILE_LAYERS[layer].elevation) throw badRequest(`formula and bands apply to the orthophoto, not to the ${layer}.`);
  if (!formulas) throw new Error('the engine\'s formulas are needed to check a formula');
  if (!formulas.formulas.includes(formula)) throw badRequest(`Unknown formula ${formula}: the formulas are ${formulas.formulas.join(', ')}.`);
  if (bands !== 'auto' && !isBandOrder(bands, formulas.bands)) {
    throw badRequest(`Unknown bands ${bands}: give auto, or the orthophoto's bands in order, each once, as the letters ${formulas.bands.join(', ')} (such as RGB, RGN, NRG or RGBN).`);
  }
  return { formula, bands };
}

/** The tile's size: `size` (256 or 512), doubled by an `@2x` suffix of y. */
export function tileSize(query: TileQuery, y: string): number {
  return (query.size ?? 256) * (y.includes('@2x') ? 2 : 1);
}

/** The style a query asks for; null for the pyramid's own (no style parameter). See plantIndex for `formulas`. */
export function tileStyle(layer: TileLayer, query: TileQuery, formulas?: FormulaList): TileStyle | null {
  const { elevation } = TILE_LAYERS[layer];
  const { rescale, color_map: colorMap, hillshade } = query;
  const index = plantIndex(layer, query, formulas);
  if (rescale === undefined && colorMap === undefined && hillshade === undefined && index === null) return null;
  if (!elevation && hillshade !== undefined) throw badRequest(`hillshade applies to the dsm and dtm layers, not to the ${layer}.`);
  if (!elevation && colorMap !== undefined && index === null) {
    throw badRequest(`color_map applies to the dsm and dtm layers and to a formula, not to the ${layer}'s own colours.`);
  }
  let range: [number, number] | null = null;
  if (rescale !== undefined) {
    range = rescale.split(',').map(Number) as [number, number];
    if (!range.every(Number.isFinite) || range[0] >= range[1]) throw badRequest('rescale must be min,max with min below max.');
  }
  const style = { rescale: range, colorMap: colorMap?.toLowerCase() ?? null, hillshade: hillshade ?? null };
  // An index is named only when there is one: other styles keep their keys, and the tiles cached under them.
  const named = index ? { ...style, ...index } : style;
  const key = createHash('sha1').update(JSON.stringify(named)).digest('hex').slice(0, 16);
  return { ...style, index, key };
}
