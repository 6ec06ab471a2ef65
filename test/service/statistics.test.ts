// A task's `statistics` as WebODM shows them, read from the sections ODM's report writes in stats.json, so that
// an archive from ODM and one from Aeromap read alike.
import { mkdtemp, mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readAssetFacts, webodmStatistics } from '../../src/service/tasks/assets.ts';

const odmStats = {
  processing_statistics: { area: 21834.5, start_date: '24/08/2021 at 14:01:12', end_date: '24/08/2021 at 14:04:40' },
  odm_processing_statistics: { average_gsd: 1.62, total_time: 240.1 },
  point_cloud_statistics: { dense: true, stats: { statistic: [{ count: 1049339 }] } },
  reconstruction_statistics: { reconstructed_points_count: 5130 },
};

describe('WebODM statistics', () => {
  it('takes the dense point count, GSD, area and capture dates', () => {
    expect(webodmStatistics(odmStats)).toEqual({
      pointcloud: { points: 1049339 },
      gsd: 1.62,
      area: 21834.5,
      start_date: '24/08/2021 at 14:01:12',
      end_date: '24/08/2021 at 14:04:40',
    });
  });

  it('falls back to the sparse point count when the cloud is not dense', () => {
    const sparse = { ...odmStats, point_cloud_statistics: { dense: false } };
    expect(webodmStatistics(sparse).pointcloud).toEqual({ points: 5130 });
  });

  it('gives nulls, not errors, for a report without those sections', () => {
    expect(webodmStatistics({ reconstruction: { images_registered: 18 } })).toEqual({
      pointcloud: { points: null }, gsd: null, area: null, start_date: null, end_date: null,
    });
  });

  it('serves them beside the engine sections of an extracted report; no report gives none', async () => {
    const assets = await mkdtemp(path.join(os.tmpdir(), 'aeromap-stats-'));
    expect((await readAssetFacts(assets)).statistics).toEqual({});
    await mkdir(path.join(assets, 'odm_report'));
    await writeFile(path.join(assets, 'odm_report', 'stats.json'), JSON.stringify({ ...odmStats, reconstruction: { gsd_cm: 1.6 } }));
    const { statistics } = await readAssetFacts(assets);
    expect(statistics.gsd).toBe(1.62);
    expect(statistics.pointcloud).toEqual({ points: 1049339 });
    expect(statistics.reconstruction).toEqual({ gsd_cm: 1.6 });
  });
});
