// An independent reading of OGC 3D Tiles: tileset.json checked against a JSON schema written from the 3D Tiles
// 1.1 specification (the parts a tileset of glTF and pnts content uses), the rules the schema cannot say (the
// root's refinement, geometric errors that shrink with depth, children inside their parent), and every tile's
// content decoded by loaders.gl, a reader the engine has no part in.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from '@loaders.gl/core';
import { Tiles3DLoader } from '@loaders.gl/3d-tiles';
import { Ajv } from 'ajv';
import proj4 from 'proj4';

const numbers = (count: number) => ({ type: 'array', items: { type: 'number' }, minItems: count, maxItems: count });

const SCHEMA = {
  $id: 'tileset',
  type: 'object',
  required: ['asset', 'geometricError', 'root'],
  properties: {
    asset: {
      type: 'object',
      required: ['version'],
      properties: { version: { type: 'string' }, tilesetVersion: { type: 'string' }, generator: { type: 'string' } },
    },
    geometricError: { type: 'number', minimum: 0 },
    root: { $ref: '#/$defs/tile' },
    extensionsUsed: { type: 'array', items: { type: 'string' }, uniqueItems: true },
    extensionsRequired: { type: 'array', items: { type: 'string' }, uniqueItems: true },
  },
  $defs: {
    boundingVolume: {
      type: 'object',
      minProperties: 1,
      properties: { box: numbers(12), region: numbers(6), sphere: numbers(4) },
      additionalProperties: false,
    },
    tile: {
      type: 'object',
      required: ['boundingVolume', 'geometricError'],
      properties: {
        boundingVolume: { $ref: '#/$defs/boundingVolume' },
        viewerRequestVolume: { $ref: '#/$defs/boundingVolume' },
        geometricError: { type: 'number', minimum: 0 },
        refine: { enum: ['ADD', 'REPLACE'] },
        transform: numbers(16),
        content: {
          type: 'object',
          required: ['uri'],
          properties: { uri: { type: 'string', minLength: 1 }, boundingVolume: { $ref: '#/$defs/boundingVolume' } },
        },
        children: { type: 'array', items: { $ref: '#/$defs/tile' }, minItems: 1 },
      },
    },
  },
} as const;

const validate = new Ajv({ allErrors: true, strict: false }).compile(SCHEMA);

interface Tile {
  boundingVolume: { box?: number[] };
  geometricError: number;
  refine?: string;
  transform?: number[];
  content?: { uri: string };
  children?: Tile[];
}

export interface TilesetReading {
  /** Schema and specification rules broken, in words. */
  problems: string[];
  tiles: number;
  points: number;
  /** Vertices and textures of the glTF contents. */
  vertices: number;
  textures: number;
  /** The root bounding box's centre in WGS84: longitude, latitude, height. */
  centre: [number, number, number];
}

/** Whether box `inner` lies inside box `outer` (both axis-aligned in one frame), within `slack` metres. */
function inside(inner: number[], outer: number[], slack: number): boolean {
  return [0, 1, 2].every((axis) => {
    const half = (box: number[]) => Math.abs(box[3 + axis * 4]!);
    return (
      inner[axis]! - half(inner) >= outer[axis]! - half(outer) - slack &&
      inner[axis]! + half(inner) <= outer[axis]! + half(outer) + slack
    );
  });
}

/** The tileset in `folder` (tileset.json and its contents), read and checked. */
export async function readTileset(folder: string): Promise<TilesetReading> {
  const json = JSON.parse(await readFile(path.join(folder, 'tileset.json'), 'utf8')) as { root: Tile };
  const problems = validate(json) ? [] : (validate.errors ?? []).map((e: { instancePath: string; message?: string }) => `${e.instancePath} ${e.message}`);
  if (!json.root.refine) problems.push('the root tile has no refine');
  const reading: TilesetReading = { problems, tiles: 0, points: 0, vertices: 0, textures: 0, centre: [0, 0, 0] };
  // Decoded by loaders.gl as a viewer would load it: the tileset, then each content.
  const parsed = (await parse(await readFile(path.join(folder, 'tileset.json')), Tiles3DLoader, {
    '3d-tiles': { isTileset: true },
  })) as { root: Tile };
  const walk = async (tile: Tile, parent: Tile | null, where: string): Promise<void> => {
    reading.tiles++;
    if (parent) {
      if (tile.geometricError > parent.geometricError) problems.push(`${where}: geometric error above its parent's`);
      const box = tile.boundingVolume.box;
      if (box && parent.boundingVolume.box && !inside(box, parent.boundingVolume.box, 0.01)) problems.push(`${where}: outside its parent`);
    }
    if (tile.content) {
      const bytes = await readFile(path.join(folder, tile.content.uri));
      const content = (await parse(bytes, Tiles3DLoader, {
        '3d-tiles': { isTileset: false, loadGLTF: true },
        gltf: { loadImages: false },
      })) as { type: string; pointsLength?: number; gltf?: { meshes: { primitives: { attributes: Record<string, { count: number }> }[] }[]; images?: unknown[] } };
      if (content.type === 'pnts') reading.points += content.pointsLength ?? 0;
      else if (content.type === 'glTF' && content.gltf) {
        for (const mesh of content.gltf.meshes) for (const p of mesh.primitives) reading.vertices += p.attributes.POSITION?.count ?? 0;
        reading.textures += content.gltf.images?.length ?? 0;
      } else problems.push(`${where}: content of type ${content.type}`);
    }
    for (const [i, child] of (tile.children ?? []).entries()) await walk(child, tile, `${where}/${i}`);
  };
  await walk(parsed.root, null, 'root');
  reading.centre = rootCentre(json.root);
  return reading;
}

/** The root box's centre moved by the root's transform (column-major, into Earth-centred coordinates), in WGS84. */
function rootCentre(root: Tile): [number, number, number] {
  const [x, y, z] = root.boundingVolume.box!;
  const m = root.transform ?? [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1];
  const ecef = [0, 1, 2].map((r) => m[r]! * x! + m[4 + r]! * y! + m[8 + r]! * z! + m[12 + r]!);
  return proj4('+proj=geocent +datum=WGS84 +units=m +no_defs', 'EPSG:4326', ecef) as [number, number, number];
}
