// The summary after a run: the products with their paths and sizes, the quality figures the engine reported
// (odm_report/stats.json) and the time per stage.
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { ASSETS } from '../protocol/files.ts';

type Stats = Record<string, Record<string, unknown> | undefined>;

const megabytes = (bytes: number) => (bytes >= 1e6 ? `${(bytes / 2 ** 20).toFixed(1)} MB` : `${(bytes / 1024).toFixed(1)} kB`);

async function products(projectDir: string): Promise<string[]> {
  const rows: string[] = [];
  for (const [name, source] of Object.entries(ASSETS)) {
    if (!('file' in source)) continue;
    const size = await stat(path.join(projectDir, source.file)).then((info) => info.size, () => undefined);
    if (size !== undefined) rows.push(`  ${name.padEnd(30)} ${source.file.padEnd(54)} ${megabytes(size).padStart(10)}`);
  }
  return rows;
}

function figure(label: string, value: unknown, format: (v: number) => string): string[] {
  return typeof value === 'number' && Number.isFinite(value) ? [`  ${label.padEnd(22)} ${format(value)}`] : [];
}

/** The checkpoints' root mean square errors: the model's accuracy where surveyed points were kept out of it. */
function checkpoints(residuals: { rmse_horizontal?: number; rmse_vertical?: number } | null): string[] {
  const { rmse_horizontal: h, rmse_vertical: v } = residuals ?? {};
  return figure('checkpoints RMSE', h, (value) => `${value.toFixed(3)} m horizontal, ${(v ?? Number.NaN).toFixed(3)} m vertical`);
}

function quality(stats: Stats): string[] {
  const sfm = stats.reconstruction ?? {};
  const registered = typeof sfm.images_registered === 'number' ? [`  ${'images registered'.padEnd(22)} ${sfm.images_registered} of ${sfm.images_total}`] : [];
  return [
    ...registered,
    ...figure('reprojection error', sfm.mean_reprojection_error_px, (v) => `${v.toFixed(2)} px`),
    ...figure('GPS residual', (sfm.gps_residual_m as { mean?: number } | null)?.mean, (v) => `${v.toFixed(2)} m mean`),
    ...figure('GCP residual', (sfm.gcp_residual_m as { mean?: number } | null)?.mean, (v) => `${v.toFixed(2)} m mean`),
    ...checkpoints(sfm.checkpoint_residual_m as { rmse_horizontal?: number; rmse_vertical?: number } | null),
    ...figure('ground sample distance', sfm.gsd_cm, (v) => `${v.toFixed(2)} cm`),
    ...figure('area', stats.point_cloud?.area_m2, (v) => `${Math.round(v).toLocaleString('en')} m²`),
    ...figure('points', stats.point_cloud?.points, (v) => v.toLocaleString('en')),
  ];
}

function stageTimes(stats: Stats): string[] {
  const stages = Object.entries((stats.stages ?? {}) as Record<string, { seconds?: number }>);
  const total = stages.reduce((sum, [, stage]) => sum + (stage.seconds ?? 0), 0);
  return [
    ...stages.map(([name, stage]) => `  ${name.padEnd(22)} ${(stage.seconds ?? 0).toFixed(1).padStart(7)} s`),
    `  ${'total'.padEnd(22)} ${total.toFixed(1).padStart(7)} s`,
  ];
}

export async function summary(projectDir: string): Promise<string> {
  const stats = (await readFile(path.join(projectDir, 'odm_report', 'stats.json'), 'utf8').then(JSON.parse, () => ({}))) as Stats;
  const found = await products(projectDir);
  return [
    `Products in ${projectDir}:`,
    ...(found.length ? found : ['  (none)']),
    'Quality:',
    ...quality(stats),
    'Time per stage:',
    ...stageTimes(stats),
  ].join('\n');
}
