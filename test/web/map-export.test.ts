// The map's Export dialog logic: layers and formats a task offers, request bodies, and a job polled to its end.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Task } from '../../web/src/api.ts';
import { describeIndex, drawsElevation, exportBody, exportFormats, exportLayers, runExport } from '../../web/src/map/export.ts';
import type { PlantStyle } from '../../web/src/map/plant.ts';

// The API client keeps the session in localStorage, which Node lacks; no session is needed here.
vi.hoisted(() => {
  const storage = new Map<string, string>();
  Object.assign(globalThis, {
    localStorage: { getItem: (key: string) => storage.get(key) ?? null, setItem: (key: string, value: string) => storage.set(key, value), removeItem: (key: string) => storage.delete(key) },
  });
});

const task = { id: 7, project: 3, available_assets: ['orthophoto.tif', 'dsm.tif', 'georeferenced_model.laz', 'all.zip'] } as Task;
const contours = { interval: '1', simplify: '0.1' };
const style = { colorMap: 'jet', hillshade: true, plant: null, contours };
const ndvi: PlantStyle = { formula: 'NDVI', bands: 'auto', colorMap: 'rdylgn', rescale: [0.183456, 0.84] };

describe('map exports', () => {
  afterEach(() => vi.unstubAllGlobals());

  it("offer the task's layers, each in its formats", () => {
    expect(exportLayers(task).map(({ layer }) => layer)).toEqual(['orthophoto', 'dsm', 'georeferenced_model']);
    expect(exportFormats('georeferenced_model').map(({ format }) => format)).toEqual(['laz', 'las', 'ply', 'csv']);
    expect(exportFormats('orthophoto').map(({ format }) => format)).toEqual(['gtiff', 'gtiff-rgb', 'jpg', 'png', 'kmz']);
    expect(exportFormats('dsm').map(({ format }) => format)).toEqual(['gtiff', 'gtiff-rgb', 'jpg', 'png', 'kmz', 'contours:GPKG', 'contours:DXF', 'contours:ESRI Shapefile', 'contours:GeoJSON']);
    expect(drawsElevation('dsm', 'png')).toBe(true);
    expect(drawsElevation('dsm', 'gtiff')).toBe(false);
    expect(drawsElevation('orthophoto', 'png')).toBe(false);
  });

  it('build the request of a CRS choice, or say what is wrong with it', () => {
    expect(exportBody('orthophoto', 'gtiff', { kind: 'task' }, style)).toEqual({ format: 'gtiff' });
    expect(exportBody('orthophoto', 'gtiff', { kind: 'epsg', code: ' EPSG:27700 ' }, style)).toEqual({ format: 'gtiff', epsg: '27700' });
    expect(exportBody('georeferenced_model', 'las', { kind: 'proj', text: ' +proj=longlat ' }, style)).toEqual({ format: 'las', proj: '+proj=longlat' });
    expect(exportBody('dsm', 'png', { kind: 'task' }, { ...style, hillshade: false })).toEqual({ format: 'png', color_map: 'jet', hillshade: '0' });
    expect(exportBody('orthophoto', 'gtiff', { kind: 'epsg', code: 'utm' }, style)).toHaveProperty('error');
    expect(exportBody('orthophoto', 'gtiff', { kind: 'proj', text: '  ' }, style)).toHaveProperty('error');
  });

  it('ask for contours at an interval, in an EPSG code or the task\'s CRS', () => {
    expect(exportBody('dsm', 'contours:DXF', { kind: 'task' }, style)).toEqual({ format: 'DXF', interval: 1, simplify: 0.1 });
    expect(exportBody('dtm', 'contours:ESRI Shapefile', { kind: 'epsg', code: '4326' }, { ...style, contours: { interval: '0.5', simplify: '' } })).toEqual({
      format: 'ESRI Shapefile',
      interval: 0.5,
      simplify: 0,
      epsg: 4326,
    });
    expect(exportBody('dsm', 'contours:GPKG', { kind: 'task' }, { ...style, contours: { interval: '0', simplify: '0' } })).toEqual({ error: expect.stringMatching(/interval/) });
    expect(exportBody('dsm', 'contours:GPKG', { kind: 'task' }, { ...style, contours: { interval: '1', simplify: '-1' } })).toEqual({ error: expect.stringMatching(/tolerance/) });
    expect(exportBody('dsm', 'contours:GPKG', { kind: 'proj', text: '+proj=longlat' }, style)).toEqual({ error: expect.stringMatching(/EPSG code/) });
  });

  it("carry the orthophoto's vegetation index as the map draws it: values in a GeoTIFF, colours elsewhere", () => {
    const drawn = { ...style, plant: ndvi };
    expect(exportBody('orthophoto', 'gtiff', { kind: 'epsg', code: '4326' }, drawn)).toEqual({ format: 'gtiff', epsg: '4326', formula: 'NDVI', bands: 'auto' });
    expect(exportBody('orthophoto', 'png', { kind: 'task' }, drawn)).toEqual({ format: 'png', formula: 'NDVI', bands: 'auto', rescale: '0.1835,0.84', color_map: 'rdylgn' });
    expect(exportBody('orthophoto', 'gtiff-rgb', { kind: 'task' }, drawn)).toMatchObject({ rescale: '0.1835,0.84', color_map: 'rdylgn' });
    // The index belongs to the orthophoto: an elevation model keeps its own colour map.
    expect(exportBody('dsm', 'png', { kind: 'task' }, drawn)).toEqual({ format: 'png', color_map: 'jet', hillshade: '6' });
  });

  it('say what an index export holds', () => {
    expect(describeIndex(ndvi, 'png')).toBe('NDVI (bands auto), rdylgn over 0.18–0.84');
    expect(describeIndex(ndvi, 'gtiff')).toBe('NDVI (bands auto) values');
    expect(describeIndex({ formula: 'Thermal C', bands: 'L', colorMap: 'magma', rescale: [21.5, 38] }, 'kmz')).toBe('Thermal C (bands L), magma over 22–38 °C');
  });

  it('poll a job until it is ready, and throw the error of one that failed', async () => {
    const replies: Record<string, unknown[]> = {
      '/api/projects/3/tasks/7/orthophoto/export': [{ celery_task_id: 'abc', filename: 'x-orthophoto.tif' }, { celery_task_id: 'bad', filename: 'x.tif' }],
      '/api/workers/check/abc': [{ ready: false }, { ready: true }],
      '/api/workers/check/bad': [{ ready: true, error: 'It lies outside the area that CRS covers' }],
    };
    const fetch = vi.fn(async (url: string, _init?: RequestInit) => new Response(JSON.stringify(replies[url].shift()), { headers: { 'content-type': 'application/json' } }));
    vi.stubGlobal('fetch', fetch);
    const signal = new AbortController().signal;
    await expect(runExport(task, 'orthophoto', 'gtiff', { format: 'gtiff', epsg: '27700' }, signal, 1)).resolves.toEqual({
      url: '/api/workers/get/abc?filename=x-orthophoto.tif',
      filename: 'x-orthophoto.tif',
    });
    expect(fetch.mock.calls[0][1]).toMatchObject({ method: 'POST', body: JSON.stringify({ format: 'gtiff', epsg: '27700' }) });
    await expect(runExport(task, 'orthophoto', 'gtiff', { format: 'gtiff' }, signal, 1)).rejects.toThrow('outside the area');
    replies['/api/projects/3/tasks/7/dsm/contours'] = [{ celery_task_id: 'abc', filename: 'x-dsm-contours.gpkg' }];
    replies['/api/workers/check/abc'] = [{ ready: true }];
    await expect(runExport(task, 'dsm', 'contours:GPKG', { format: 'GPKG', interval: 1 }, signal, 1)).resolves.toMatchObject({ filename: 'x-dsm-contours.gpkg' });
  });
});
