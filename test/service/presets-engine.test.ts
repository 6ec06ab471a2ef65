// WebODM's presets against the real engine: each one's options are values the engine accepts or names it does
// not know, and a task made with each is accepted and sent to a node that runs the real engine, whose console
// then names the options it ignored.
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEBODM_PRESETS } from '../../src/db/migrations.ts';
import { type RunningNode, defaultEnginePath, startNode } from '../../src/node/index.ts';
import { type EngineOption, validateOptions } from '../../src/protocol/options.ts';
import { type TestService, startService } from './helpers.ts';
import { LONG, TaskStatus, brightonCopies, finished, imageForm, postForm, waitForTask } from './taskhelpers.ts';

const engineOptions = JSON.parse(execFileSync(defaultEnginePath(), ['options'], { encoding: 'utf8' })) as EngineOption[];
const known = new Set(engineOptions.map((option) => option.name));
const unknownIn = (options: { name: string }[]) => options.map((option) => option.name).filter((name) => !known.has(name));

describe("WebODM's presets", () => {
  it.each(WEBODM_PRESETS.map((preset) => [preset.name, preset.options] as const))('%s: values the engine accepts', (_, options) => {
    expect(validateOptions(engineOptions, options)).toMatchObject({ ok: true });
  });

  it('name only options the engine knows, the multispectral calibration included', () => {
    expect(WEBODM_PRESETS.flatMap((preset) => unknownIn(preset.options))).toEqual([]);
    expect(validateOptions(engineOptions, [{ name: 'radiometric-calibration', value: 'camera+sun' }])).toMatchObject({ ok: true });
    expect(validateOptions(engineOptions, [{ name: 'radiometric-calibration', value: 'sun' }])).toMatchObject({ ok: false });
  });

  it('refuses at submission the values the engine would refuse when it runs', () => {
    // The engine refuses fewer than 100 features and a split into one submodel; the published domains say so.
    expect(validateOptions(engineOptions, [{ name: 'min-num-features', value: 50 }])).toMatchObject({ ok: false });
    expect(validateOptions(engineOptions, [{ name: 'split', value: 1 }])).toMatchObject({ ok: false });
    expect(validateOptions(engineOptions, [{ name: 'sfm-algorithm', value: 'bogus' }])).toMatchObject({ ok: false });
    expect(validateOptions(engineOptions, [{ name: 'split-overlap', value: 12.5 }])).toMatchObject({ ok: true });
    expect(validateOptions(engineOptions, [{ name: 'rolling-shutter-readout', value: 32.5 }])).toMatchObject({ ok: true });
  });

  describe('submitted with two photographs to a node running the real engine', () => {
    let t: TestService;
    let node: RunningNode;
    let work: string;
    let images: string[];
    let projectId: number;

    beforeAll(async () => {
      t = await startService('sqlite');
      work = await mkdtemp(path.join(tmpdir(), 'aeromap-presets-'));
      node = await startNode({ dataDir: path.join(work, 'node'), port: 0, host: '127.0.0.1', token: 'secret', log: () => {} });
      expect((await t.admin.post('/api/processingnodes/', { hostname: '127.0.0.1', port: node.port, token: 'secret' })).status).toBe(201);
      await t.service.refresher.refreshAll();
      images = await brightonCopies(path.join(work, 'images'), ['DJI_0028.JPG', 'DJI_0029.JPG'], 320);
      projectId = (await t.admin.post('/api/projects/', { name: 'Presets' })).body.id;
    }, 60_000);

    afterAll(async () => {
      await t?.close();
      await node?.close();
      await rm(work, { recursive: true, force: true });
    });

    it.each(WEBODM_PRESETS.map((preset) => [preset.name, preset.options] as const))(
      '%s: 201, and the console names what was ignored',
      async (name, options) => {
        const url = `/api/projects/${projectId}/tasks/`;
        const created = await postForm(t.admin, url, await imageForm(images, { name, options: JSON.stringify(options) }));
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        expect(created.body.options).toEqual(options);
        const taskUrl = `${url}${created.body.id}/`;
        const sent = await waitForTask(t.admin, taskUrl, (task) => task.uuid !== '' || task.status !== null, 60_000);
        expect(sent.last_error).toBeNull();
        const output = (await t.admin.get(`${taskUrl}output/`)).body as string;
        const warnings = output.split('\n').filter((line) => line.includes('does not know'));
        const ignored = unknownIn(options);
        if (ignored.length === 0) expect(warnings).toEqual([]);
        else expect(warnings).toEqual([expect.stringMatching(new RegExp(`ignored: ${ignored.join(', ')}$`))]);
        expect((await t.admin.post(`${taskUrl}remove/`)).status).toBe(200);
      },
      90_000,
    );

    // The engine's suite checks the planar algorithm's placement; this run adds the preset's path to it.
    it.runIf(LONG)('Field maps Brighton Beach with the planar algorithm it names', async () => {
      const field = WEBODM_PRESETS.find((preset) => preset.name === 'Field');
      const names = ['DJI_0020.JPG', 'DJI_0021.JPG', 'DJI_0022.JPG', 'DJI_0025.JPG', 'DJI_0026.JPG', 'DJI_0027.JPG'];
      const photos = await brightonCopies(path.join(work, 'field'), names, 800);
      const url = `/api/projects/${projectId}/tasks/`;
      const created = await postForm(t.admin, url, await imageForm(photos, { name: 'Field', options: JSON.stringify(field?.options) }));
      expect(created.status).toBe(201);
      const done = await waitForTask(t.admin, `${url}${created.body.id}/`, finished, 480_000);
      expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
      expect(done.statistics.reconstruction).toMatchObject({ sfm_algorithm: 'planar', images_registered: names.length });
      expect(done.available_assets).toContain('orthophoto.tif');
      // Brighton Beach, Duluth (Minnesota): the map lies there.
      const [west, south, east, north] = done.extent;
      expect(west).toBeGreaterThan(-92.0);
      expect(east).toBeLessThan(-91.98);
      expect(south).toBeGreaterThan(46.83);
      expect(north).toBeLessThan(46.85);
      const output = (await t.admin.get(`${url}${created.body.id}/output/`)).body as string;
      expect(output).not.toContain('Mapping incrementally instead');
    }, 500_000);
  });
});
