// A task's backup (GET .../backup, WebODM's layout) restored by tasks/import into a second service with a
// data folder of its own: the same assets, statistics, extent, CRS, console, options, name and tags. A backup
// whose entries would land outside the task's folder is refused with a 400.
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningNode } from '../../src/node/index.ts';
import { QUICK_BACKENDS, type Client, type TestService, startService } from './helpers.ts';
import {
  TaskStatus,
  completedTask,
  download,
  fakeNode,
  finished,
  imageForm,
  makeJpegs,
  orthophotoZip,
  postForm,
  python,
  waitForTask,
} from './taskhelpers.ts';

const GRADIENT = 'rgba = np.full((4, 128, 128), 255, np.uint8); rgba[0] = np.arange(128, dtype=np.uint8)';

/** The entries of a zip and the text of one of them. */
function zipContents(file: string, member: string): { names: string[]; text: string } {
  return JSON.parse(
    python(
      `import sys, json, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    names = z.namelist()
    print(json.dumps({"names": names, "text": z.read(sys.argv[2]).decode() if sys.argv[2] in names else ""}))`,
      file,
      member,
    ),
  );
}

async function postZip(client: Client, url: string, file: string) {
  const { readFile } = await import('node:fs/promises');
  const reply = await fetch(new URL(url, client.baseUrl), {
    method: 'POST',
    headers: { authorization: `JWT ${client.token}`, 'content-type': 'application/zip' },
    body: await readFile(file),
  });
  return { status: reply.status, body: (await reply.json()) as any };
}

describe.each(QUICK_BACKENDS)('backup and restore on %s', (backend) => {
  let source: TestService;
  let target: TestService;
  let node: RunningNode;
  let work: string;

  beforeAll(async () => {
    [source, target] = await Promise.all([startService(backend), startService(backend)]);
    expect(target.dataDir).not.toBe(source.dataDir);
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-backup-'));
    ({ node } = await fakeNode(source, path.join(work, 'node')));
  }, 60_000);

  afterAll(async () => {
    await Promise.all([source?.close(), target?.close()]);
    await node?.close();
    await rm(work, { recursive: true, force: true });
  });

  // The files' round trip is the same on either database (the rows' is in the other tests): SQLite alone.
  it.runIf(backend === 'sqlite')('restores a processed task and an imported orthophoto in another service, as they were', async () => {
    const projectId = (await source.admin.post('/api/projects/', { name: 'origin' })).body.id;
    const done = await completedTask(source.admin, projectId, await makeJpegs(path.join(work, 'images'), 3), {
      name: 'Harbour survey',
      tags: '["harbour", ".archived"]',
      options: JSON.stringify([{ name: 'fake-seconds', value: 0.1 }]),
    });
    const crop = { type: 'Polygon', coordinates: [[[-0.1, 50.8], [-0.09, 50.8], [-0.09, 50.81], [-0.1, 50.8]]] };
    const processed = (await source.admin.patch(`/api/projects/${projectId}/tasks/${done.id}/`, { crop })).body;
    expect(processed.crop).toEqual(crop);
    // A real orthophoto in UTM 15N, with the engine's report: extent, statistics and EPSG code.
    const zipDir = path.join(work, 'ortho');
    await rm(zipDir, { recursive: true, force: true });
    await (await import('node:fs/promises')).mkdir(zipDir, { recursive: true });
    const ortho = orthophotoZip(zipDir, GRADIENT, 0.5);
    python(
      `import sys, json, zipfile
stats = {"orthophoto": {"bounds_wgs84": [-92.1, 41.2, -92.09, 41.21]}, "processing_statistics": {"area": 4096.0},
         "odm_processing_statistics": {"average_gsd": 50.0}}
with zipfile.ZipFile(sys.argv[1], "a") as z:
    z.writestr("odm_report/stats.json", json.dumps(stats))`,
      ortho,
    );
    const imported = await postForm(source.admin, `/api/projects/${projectId}/tasks/import`, await imageForm([ortho], { name: 'Field' }, 'file'));
    expect(imported.status).toBe(201);
    const field = await waitForTask(source.admin, `/api/projects/${projectId}/tasks/${imported.body.id}/`, finished);
    expect(field.status, field.last_error).toBe(TaskStatus.COMPLETED);
    expect(field).toMatchObject({ epsg: 32615, wkt: null, extent: [-92.1, 41.2, -92.09, 41.21] });
    expect(processed).toMatchObject({ epsg: null, wkt: null });

    const targetProject = (await target.admin.post('/api/projects/', { name: 'restored' })).body.id;
    for (const task of [processed, field]) {
      const url = `/api/projects/${projectId}/tasks/${task.id}/`;
      const backup = await download(source.admin, `${url}backup`);
      expect(backup.status).toBe(200);
      expect(backup.headers.get('content-type')).toBe('application/zip');
      expect(backup.headers.get('content-disposition')).toMatch(/^attachment; filename=".*backup\.zip"$/);
      const file = path.join(work, `backup-${task.id}.zip`);
      await writeFile(file, backup.bytes);
      const { names, text } = zipContents(file, 'data/backup.json');
      expect(names).toContain('assets/odm_orthophoto/odm_orthophoto.tif');
      expect(JSON.parse(text)).toMatchObject({ name: task.name, options: task.options, tags: task.tags.join(' '), resize_to: -1, crop: task.crop });
      expect(JSON.parse(text).created_at).toBeCloseTo(Date.parse(task.created_at) / 1000, 3);

      const restored = await postZip(target.admin, `/api/projects/${targetProject}/tasks/import`, file);
      expect(restored.status).toBe(201);
      const back = await waitForTask(target.admin, `/api/projects/${targetProject}/tasks/${restored.body.id}/`, finished);
      expect(back.status, back.last_error).toBe(TaskStatus.COMPLETED);
      for (const key of ['name', 'available_assets', 'statistics', 'extent', 'options', 'tags', 'epsg', 'wkt', 'images_count', 'created_at', 'processing_time', 'crop']) {
        expect(back[key], key).toEqual(task[key]);
      }
      const [before, after] = await Promise.all([
        source.admin.get(`${url}output/`),
        target.admin.get(`/api/projects/${targetProject}/tasks/${back.id}/output/`),
      ]);
      expect(after.body).toBe(before.body);
      const [a, b] = await Promise.all([
        download(source.admin, `${url}download/orthophoto.tif`),
        download(target.admin, `/api/projects/${targetProject}/tasks/${back.id}/download/orthophoto.tif`),
      ]);
      expect(b.bytes).toEqual(a.bytes);
    }
    // The processed task's backup carries its photographs and console.
    const { names } = zipContents(path.join(work, `backup-${processed.id}.zip`), 'data/backup.json');
    expect(names).toEqual(expect.arrayContaining(['IMG_0000.JPG', 'IMG_0002.JPG', 'data/console_output.txt']));
    expect(processed.images_count).toBe(3);

    // Read access as the task's downloads: a stranger and the anonymous see nothing of a task that is not public.
    const { client: stranger } = await source.createUser(`stranger-${backend}`);
    expect((await stranger.get(`/api/projects/${projectId}/tasks/${processed.id}/backup`)).status).toBe(404);
    expect((await source.anonymous.get(`/api/projects/${projectId}/tasks/${processed.id}/backup`)).status).toBe(404);
  }, 180_000); // a task processed, backed up and restored twice: past a minute while the engine's suite runs beside

  it('refuses a backup that climbs out of its folder (400) and fails one with wrong fields', async () => {
    const projectId = (await target.admin.post('/api/projects/', { name: 'guarded' })).body.id;
    const slip = path.join(work, 'slip.zip');
    const wrong = path.join(work, 'wrong.zip');
    python(
      `import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("data/backup.json", '{"name": "evil"}')
    z.writestr("assets/odm_orthophoto/odm_orthophoto.tif", b"II*\\0")
    z.writestr("../../../escape.txt", b"out")
with zipfile.ZipFile(sys.argv[2], "w") as z:
    z.writestr("data/backup.json", '{"name": 5}')
    z.writestr("assets/odm_orthophoto/odm_orthophoto.tif", b"II*\\0")`,
      slip,
      wrong,
    );
    const before = (await target.admin.get(`/api/projects/${projectId}/tasks/`)).body.length;
    const refused = await postForm(target.admin, `/api/projects/${projectId}/tasks/import`, await imageForm([slip], {}, 'file'));
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toMatch(/cannot be imported: .*escape\.txt/);
    const asBody = await postZip(target.admin, `/api/projects/${projectId}/tasks/import`, slip);
    expect(asBody.status).toBe(400);
    expect((await target.admin.get(`/api/projects/${projectId}/tasks/`)).body.length).toBe(before);
    const taskDirs = await readdir(path.join(target.dataDir, 'media', 'project', String(projectId), 'task')).catch(() => []);
    expect(taskDirs).toEqual([]);
    await expect(readdir(path.join(target.dataDir, 'escape.txt'))).rejects.toThrow();

    const failed = await postZip(target.admin, `/api/projects/${projectId}/tasks/import`, wrong);
    expect(failed.status).toBe(201);
    const done = await waitForTask(target.admin, `/api/projects/${projectId}/tasks/${failed.body.id}/`, finished);
    expect(done.status).toBe(TaskStatus.FAILED);
    expect(done.last_error).toMatch(/backup cannot be restored: data\/backup\.json: \/name/);
  });
});
