// Every downloadable asset of src/protocol/files.ts has a producer: one real engine run on five Brighton Beach
// photographs, scaled down, with options that between them make every product (and a control-point list, for
// ground_control_points.geojson), archived as a node archives a task; every name in ASSETS must then be in the
// archive. An asset added to ASSETS fails here until an option makes it and RUN_OPTIONS turns that option on.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fromFile } from 'geotiff';
import proj4 from 'proj4';
import yauzl from 'yauzl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_OUTPUTS, buildArchive } from '../src/node/archive.ts';
import { defaultEnginePath, spawnEngine } from '../src/protocol/engine.ts';
import { ASSETS } from '../src/protocol/files.ts';
import { epsgFromGeoKeys, proj4Definition } from '../web/src/map/crs.ts';
import { brightonCopies } from './service/taskhelpers.ts';
import { readTileset } from './tiles3d.ts';

const NAMES = ['DJI_0027.JPG', 'DJI_0028.JPG', 'DJI_0029.JPG', 'DJI_0030.JPG', 'DJI_0031.JPG'];
const WIDTH = 800; // of the copies; the photographs are 4000 px wide
// Small and quick: the products' quality is not what this test looks at.
const RUN_OPTIONS: Record<string, string | number | boolean> = {
  'feature-quality': 'high',
  'pc-quality': 'lowest',
  'mesh-size': 20000,
  'orthophoto-resolution': 20,
  'dem-resolution': 20,
  // The options that make the assets a default run does not.
  dsm: true,
  dtm: true,
  'pc-las': true,
  'pc-csv': true,
  'orthophoto-png': true,
  'orthophoto-kmz': true,
  'orthophoto-cutline': true,
  tiles: true,
  '3d-tiles': true,
};
// Five tie points of the survey, marked in the full-size photographs (pixel centres from 0), at their positions in
// the GPS-georeferenced model: control points that agree with the photographs, for ground_control_points.geojson.
const CONTROL_POINTS = `EPSG:32615
576686.521 5188140.240 159.731 2428.4 1018.0 DJI_0029.JPG gcp1
576686.521 5188140.240 159.731 2478.7 1824.5 DJI_0028.JPG gcp1
576686.521 5188140.240 159.731 1046.5 1213.1 DJI_0030.JPG gcp1
576686.521 5188140.240 159.731 952.0 1991.1 DJI_0031.JPG gcp1
576701.304 5188134.511 158.168 3184.8 604.6 DJI_0029.JPG gcp2
576701.304 5188134.511 158.168 3234.4 1405.9 DJI_0028.JPG gcp2
576701.304 5188134.511 158.168 1872.5 836.0 DJI_0030.JPG gcp2
576701.304 5188134.511 158.168 1816.6 1699.0 DJI_0031.JPG gcp2
576701.304 5188134.511 158.168 3315.7 2098.4 DJI_0027.JPG gcp2
576680.818 5188155.989 160.778 1510.6 675.0 DJI_0029.JPG gcp3
576680.818 5188155.989 160.778 1583.0 1473.9 DJI_0028.JPG gcp3
576680.818 5188155.989 160.778 135.7 819.4 DJI_0030.JPG gcp3
576680.818 5188155.989 160.778 113.4 1496.3 DJI_0031.JPG gcp3
576701.427 5188153.411 159.245 2482.9 696.5 DJI_0028.JPG gcp4
576701.427 5188153.411 159.245 1106.8 84.1 DJI_0030.JPG gcp4
576701.427 5188153.411 159.245 1165.8 880.5 DJI_0031.JPG gcp4
576701.427 5188153.411 159.245 2537.2 1452.3 DJI_0027.JPG gcp4
576694.410 5188145.537 158.825 2478.1 488.1 DJI_0029.JPG gcp5
576694.410 5188145.537 158.825 2541.5 1285.2 DJI_0028.JPG gcp5
576694.410 5188145.537 158.825 2623.4 2023.9 DJI_0027.JPG gcp5
576694.410 5188145.537 158.825 1159.6 684.8 DJI_0030.JPG gcp5
576694.410 5188145.537 158.825 1137.8 1466.0 DJI_0031.JPG gcp5
`;

/** The control-point list with its marks moved to photographs scaled to `width` px (pixel centres kept). */
function scaledControlPoints(width: number): string {
  const scale = width / 4000;
  return CONTROL_POINTS.split('\n')
    .map((line, n) => {
      const fields = line.split(' ');
      if (n === 0 || fields.length < 7) return line;
      const [x, y, z, col, row, ...rest] = fields;
      const px = (v: string): string => ((Number(v) + 0.5) * scale - 0.5).toFixed(2);
      return [x, y, z, px(col!), px(row!), ...rest].join(' ');
    })
    .join('\n');
}

/** The entries of a zip and their sizes. */
function zipEntries(file: string): Promise<Map<string, number>> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: false }, (err, zip) => {
      if (err || !zip) return reject(err);
      const entries = new Map<string, number>();
      zip.on('entry', (e: yauzl.Entry) => entries.set(e.fileName, e.uncompressedSize));
      zip.on('end', () => resolve(entries));
      zip.on('error', reject);
    });
  });
}

/** The centre of a GeoTIFF's extent in WGS84 (longitude, latitude), and its CRS for proj4. */
async function rasterCentre(file: string): Promise<{ centre: [number, number]; crs: string }> {
  const image = await (await fromFile(file)).getImage();
  const [west, south, east, north] = image.getBoundingBox();
  const crs = proj4Definition(epsgFromGeoKeys(image.getGeoKeys() ?? {})!)!;
  return { centre: proj4(crs, 'EPSG:4326', [(west! + east!) / 2, (south! + north!) / 2]) as [number, number], crs };
}

/** The centre of a georeferenced GLB's extent in WGS84, from its positions' bounds and its CESIUM_RTC offset. */
async function glbCentre(file: string, crs: string): Promise<[number, number]> {
  const glb = await readFile(file);
  const gltf = JSON.parse(glb.subarray(20, 20 + glb.readUInt32LE(12)).toString('utf8')) as {
    extensions: { CESIUM_RTC: { center: number[] } };
    meshes: { primitives: { attributes: { POSITION: number } }[] }[];
    accessors: { min: number[]; max: number[] }[];
  };
  const bounds = gltf.meshes.flatMap((m) => m.primitives.map((p) => gltf.accessors[p.attributes.POSITION]!));
  const [x, y] = [0, 1].map((axis) => {
    const low = Math.min(...bounds.map((b) => b.min[axis]!));
    const high = Math.max(...bounds.map((b) => b.max[axis]!));
    return gltf.extensions.CESIUM_RTC.center[axis]! + (low + high) / 2;
  });
  return proj4(crs, 'EPSG:4326', [x!, y!]) as [number, number];
}

/** A LAS 1.4 file's point count and the centre of its extent (in its CRS), from the header. */
function lasExtent(header: Buffer): { points: number; centre: [number, number] } {
  const [maxX, minX, maxY, minY] = [179, 187, 195, 203].map((at) => header.readDoubleLE(at));
  return { points: Number(header.readBigUInt64LE(247)), centre: [(minX! + maxX!) / 2, (minY! + maxY!) / 2] };
}

/** Metres between two nearby WGS84 positions, on the plane tangent to the first. */
function metresApart([lon1, lat1]: number[], [lon2, lat2]: number[]): number {
  const perDegree = 111_320;
  return Math.hypot((lon2! - lon1!) * perDegree * Math.cos((lat1! * Math.PI) / 180), (lat2! - lat1!) * perDegree);
}

describe('the asset map', () => {
  let work: string;
  let entries: Map<string, number>;
  let lines: string[];

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-assets-'));
    const task = path.join(work, 'task');
    await brightonCopies(path.join(task, 'images'), NAMES, WIDTH);
    await writeFile(path.join(task, 'gcp_list.txt'), scaledControlPoints(WIDTH));
    const optionsFile = path.join(work, 'options.json');
    await writeFile(optionsFile, JSON.stringify(Object.entries(RUN_OPTIONS).map(([name, value]) => ({ name, value }))));
    lines = [];
    const run = spawnEngine(
      defaultEnginePath(),
      task,
      optionsFile,
      { allowPrivateUrls: false, maxMemoryBytes: null },
      { onLine: (line) => lines.push(line), onProgress: () => undefined },
    );
    const exit = await run.exited;
    expect(exit.code, lines.slice(-30).join('\n')).toBe(0);
    const archive = path.join(work, 'all.zip');
    await buildArchive(task, DEFAULT_OUTPUTS, archive);
    entries = await zipEntries(archive);
  }, 300_000);
  afterAll(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('names only results that some option makes, in the archive a node sends', () => {
    const missing = Object.entries(ASSETS).flatMap(([name, source]) => {
      if ('file' in source) return (entries.get(source.file) ?? 0) > 0 ? [] : [name];
      const prefix = source.folder === '.' ? '' : `${source.folder}/`;
      const held = [...entries].some(
        ([entry, size]) => entry.startsWith(prefix) && size > 0 && !source.exclude?.test(entry),
      );
      return held ? [] : [name];
    });
    expect(missing).toEqual([]);
    // Both textured models, as ODM makes them: the 2.5D one has no asset of its own, only its folder in all.zip.
    for (const file of ['odm_textured_model_geo.obj', 'odm_textured_model_geo.glb']) {
      expect(entries.get(`odm_texturing/${file}`)).toBeGreaterThan(0);
      expect(entries.get(`odm_texturing_25d/${file}`)).toBeGreaterThan(0);
    }
  });

  it('made the tile folders in the TMS layout and the control points in WGS84', async () => {
    for (const folder of ['orthophoto_tiles', 'dsm_tiles', 'dtm_tiles']) {
      expect(entries.has(`${folder}/tilemapresource.xml`)).toBe(true);
      // Brighton Beach lies at about 46.84 N, 91.99 W: tile row 84886 counted from the south at zoom 17.
      expect(entries.has(`${folder}/17/32041/84886.png`) || entries.has(`${folder}/17/32042/84886.png`)).toBe(true);
    }
    const task = path.join(work, 'task');
    const gcps = JSON.parse(
      await readFile(path.join(task, 'odm_georeferencing', 'ground_control_points.geojson'), 'utf8'),
    ) as { features: { properties: { id: string }; geometry: { coordinates: number[] } }[] };
    expect(gcps.features.map((f) => f.properties.id).sort()).toEqual(['gcp1', 'gcp2', 'gcp3', 'gcp4', 'gcp5']);
    for (const { geometry } of gcps.features) {
      expect(geometry.coordinates[0]).toBeCloseTo(-91.994, 2);
      expect(geometry.coordinates[1]).toBeCloseTo(46.842, 2);
    }
  });

  it('writes 3D Tiles that an independent reader walks, where the products are', async () => {
    const task = path.join(work, 'task');
    const ortho = await rasterCentre(path.join(task, 'odm_orthophoto', 'odm_orthophoto.tif'));
    const laz = lasExtent(await readFile(path.join(task, 'odm_georeferencing', 'odm_georeferenced_model.laz')));
    const model = await readTileset(path.join(task, '3d_tiles', 'model'));
    const cloud = await readTileset(path.join(task, '3d_tiles', 'pointcloud'));
    expect(model.problems).toEqual([]);
    expect(cloud.problems).toEqual([]);
    // The model's tiles lie where its GLB does: the 3D mesh, which covers what the points cover (the
    // orthophoto, the whole surveyed area: its centre is some metres away); the cloud's extent is its own.
    const glb = await glbCentre(path.join(task, 'odm_texturing', 'odm_textured_model_geo.glb'), ortho.crs);
    expect(metresApart(model.centre, glb)).toBeLessThan(1);
    expect(metresApart(model.centre, ortho.centre)).toBeLessThan(10);
    expect(metresApart(cloud.centre, proj4(ortho.crs, 'EPSG:4326', laz.centre))).toBeLessThan(1);
    expect(model.vertices).toBeGreaterThan(1000);
    expect(model.textures).toBeGreaterThan(0);
    // Refined by adding: every point of the cloud in exactly one tile.
    expect(cloud.points).toBe(laz.points);
  });
});
