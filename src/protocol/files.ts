// What a task is made of on both APIs: the photographs a client may upload, and the results a finished task
// offers, under the asset names of WebODM's API at ODM's paths in the task's results (NodeODM's all.zip).
import path from 'node:path';

// Camera RAW files (DNG and the makers' formats) are photographs too: the engine develops them.
const RAW_EXTENSIONS = ['.dng', '.cr2', '.cr3', '.nef', '.arw', '.raf', '.rw2', '.orf', '.pef', '.srw'];
const IMAGE_EXTENSIONS = new Set(['.jpg', '.jpeg', '.tif', '.tiff', '.png', ...RAW_EXTENSIONS]);

/** An earlier survey's elevation model or point cloud uploaded to align to (ODM's names): not a photograph. */
export const ALIGN_FILE = /^align\.(tif|las|laz)$/i;

/** Whether a file of this name is taken as a photograph of the survey. */
export function isImageName(name: string): boolean {
  return IMAGE_EXTENSIONS.has(path.extname(name).toLowerCase()) && !ALIGN_FILE.test(name);
}

const VIDEO_EXTENSIONS = new Set(['.mp4', '.mov', '.avi']);

/** Whether a file of this name is a video, whose frames the engine takes as photographs (a DJI .srt beside it,
 * of the same name, places them). */
export function isVideoName(name: string): boolean {
  return VIDEO_EXTENSIONS.has(path.extname(name).toLowerCase());
}

/** The photographs a task's files count for: each photograph, and each video as two at least (it yields more
 * frames, as many as it holds views; the engine refuses a survey that ends with fewer than two). */
export function photographCount(names: string[]): number {
  return names.filter(isImageName).length + 2 * names.filter(isVideoName).length;
}

/** A single file, or a folder offered as a zip built on the fly (with the files to leave out). */
export type AssetSource = { file: string } | { folder: string; exclude?: RegExp };

export const ASSETS: Record<string, AssetSource> = {
  'all.zip': { folder: '.' },
  'orthophoto.tif': { file: 'odm_orthophoto/odm_orthophoto.tif' },
  'orthophoto.png': { file: 'odm_orthophoto/odm_orthophoto.png' },
  'orthophoto.mbtiles': { file: 'odm_orthophoto/odm_orthophoto.mbtiles' },
  'orthophoto.kmz': { file: 'odm_orthophoto/odm_orthophoto.kmz' },
  'cutline.gpkg': { file: 'odm_orthophoto/cutline.gpkg' },
  'georeferenced_model.las': { file: 'odm_georeferencing/odm_georeferenced_model.las' },
  'georeferenced_model.laz': { file: 'odm_georeferencing/odm_georeferenced_model.laz' },
  'georeferenced_model.ply': { file: 'odm_georeferencing/odm_georeferenced_model.ply' },
  'georeferenced_model.csv': { file: 'odm_georeferencing/odm_georeferenced_model.csv' },
  'textured_model.zip': { folder: 'odm_texturing', exclude: /\.glb$/i },
  'textured_model.glb': { file: 'odm_texturing/odm_textured_model_geo.glb' },
  // With 3d-tiles: the model reduced to a phone's measure (a coarse level of its tiles).
  'textured_model_safe.glb': { file: 'odm_texturing/odm_textured_model_geo_safe.glb' },
  '3d_tiles_model.zip': { folder: '3d_tiles/model' },
  '3d_tiles_pointcloud.zip': { folder: '3d_tiles/pointcloud' },
  'dsm.tif': { file: 'odm_dem/dsm.tif' },
  'dtm.tif': { file: 'odm_dem/dtm.tif' },
  'orthophoto_tiles.zip': { folder: 'orthophoto_tiles' },
  'dsm_tiles.zip': { folder: 'dsm_tiles' },
  'dtm_tiles.zip': { folder: 'dtm_tiles' },
  'cameras.json': { file: 'cameras.json' },
  'shots.geojson': { file: 'odm_report/shots.geojson' },
  'report.pdf': { file: 'odm_report/report.pdf' },
  'ground_control_points.geojson': { file: 'odm_georeferencing/ground_control_points.geojson' },
};
