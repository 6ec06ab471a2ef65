// resize_to as WebODM does it: the RESIZE action (4) reduces the photographs before they go to a node (longest
// side to resize_to, EXIF and XMP kept), resize_progress going from 0 to 1, and the GCP list's pixel positions
// scaled with them, once, also when a resize cut short resumes. Real DJI photographs; the node's own copy of them
// is what is checked.
import { existsSync } from 'node:fs';
import { readFile, readdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningNode } from '../../src/node/index.ts';
import { resizeFolder } from '../../src/service/tasks/resize.ts';
import { BACKENDS, type TestService, startService } from './helpers.ts';
import { TaskStatus, brightonCopies, fakeNode, finished, imageForm, postForm, python, waitForTask } from './taskhelpers.ts';

const NAMES = ['DJI_0018.JPG', 'DJI_0019.JPG', 'DJI_0020.JPG'];

/** Each photograph's size, GPS position (degrees, minutes, seconds as floats) and whether it has XMP. */
function photoFacts(files: string[]): { size: [number, number]; gps: number[][]; make: string; xmp: boolean }[] {
  return JSON.parse(
    python(
      `import sys, json
from PIL import Image
out = []
for f in sys.argv[1:]:
    with Image.open(f) as img:
        gps = img.getexif().get_ifd(0x8825)
        out.append({"size": img.size, "gps": [[float(v) for v in gps[2]], [float(v) for v in gps[4]]],
                    "make": img.getexif().get(0x010F), "xmp": bool(img.info.get("xmp"))})
print(json.dumps(out))`,
      ...files,
    ),
  );
}

describe.each(BACKENDS)('resize_to on %s', (backend) => {
  let t: TestService;
  let node: RunningNode;
  let work: string;
  let photos: string[];

  beforeAll(async () => {
    t = await startService(backend);
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-resize-'));
    ({ node } = await fakeNode(t, path.join(work, 'node')));
    photos = await brightonCopies(path.join(work, 'photos'), NAMES, 800);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await node?.close();
    await rm(work, { recursive: true, force: true });
  });

  it('sends the node reduced photographs with their GPS EXIF and XMP, and scales the GCP list', async () => {
    const gcp = path.join(work, 'gcp_list.txt');
    await writeFile(gcp, `EPSG:4326\n-0.1 50.8 10 400 300 ${NAMES[0]} gcp1\n-0.1 50.8 10 100 200 ${NAMES[1]} gcp1\n`);
    const projectId = (await t.admin.post('/api/projects/', { name: 'beach' })).body.id;
    const url = `/api/projects/${projectId}/tasks/`;
    const created = await postForm(t.admin, url, await imageForm([...photos, gcp], { resize_to: '400', name: 'small' }));
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ resize_to: 400, resize_progress: 0, images_count: 3 });
    const progress: number[] = [];
    const done = await waitForTask(t.admin, `${url}${created.body.id}/`, finished, 60_000, (seen) => progress.push(seen.resize_progress));
    expect(done.status, done.last_error).toBe(TaskStatus.COMPLETED);
    expect(done).toMatchObject({ resize_to: 400, resize_progress: 1, images_count: 3 });
    expect(progress.every((p, i) => i === 0 || p >= progress[i - 1])).toBe(true);

    // What the node received.
    const nodeImages = path.join(work, 'node', 'tasks', done.uuid, 'images');
    const received = (await readdir(nodeImages)).sort();
    expect(received).toEqual(NAMES);
    const before = photoFacts(photos);
    const after = photoFacts(NAMES.map((name) => path.join(nodeImages, name)));
    for (const [i, facts] of after.entries()) {
      const [w, h] = before[i].size;
      expect(Math.max(...facts.size)).toBe(400);
      expect(facts.size[1]).toBe(Math.round((h * 400) / w));
      expect(facts.gps).toEqual(before[i].gps);
      expect(facts.make).toBe(before[i].make);
      expect(facts.xmp).toBe(before[i].xmp);
    }
    expect(before[0].xmp).toBe(true);
    // The node keeps the GCP list beside images/.
    expect(await readFile(path.join(nodeImages, '..', 'gcp_list.txt'), 'utf8')).toBe(
      `EPSG:4326\n-0.1 50.8 10 200 150 ${NAMES[0]} gcp1\n-0.1 50.8 10 50 100 ${NAMES[1]} gcp1\n`,
    );
  });

  it('refuses a resize_to that is no size', async () => {
    const projectId = (await t.admin.post('/api/projects/', { name: 'bad sizes' })).body.id;
    for (const bad of ['0', '-5', 'big', '70000']) {
      const reply = await postForm(t.admin, `/api/projects/${projectId}/tasks/`, await imageForm(photos.slice(0, 2), { resize_to: bad }));
      expect(reply.status, bad).toBe(400);
      expect(JSON.stringify(reply.body)).toMatch(/resize_to/);
    }
    expect((await t.admin.get(`/api/projects/${projectId}/tasks/`)).body).toEqual([]);
    // Without resize_to nothing is resized.
    const plain = await t.admin.post(`/api/projects/${projectId}/tasks/`, { partial: true });
    expect(plain.body).toMatchObject({ resize_to: -1, pending_action: null });
  });
});

describe('a resize cut short', () => {
  it('resumes from the sizes the photographs had first, and scales the GCP list once', async () => {
    const work = await mkdtemp(path.join(tmpdir(), 'aeromap-resize-cut-'));
    try {
      const images = path.join(work, 'images');
      const photos = await brightonCopies(images, NAMES, 800);
      await writeFile(path.join(images, 'gcp_list.txt'), `EPSG:4326\n-0.1 50.8 10 400 300 ${NAMES[0]} gcp1\n-0.1 50.8 10 100 200 ${NAMES[2]} gcp1\n`);
      const plan = path.join(work, 'work', 'resize.json');
      // The first run stops after one photograph, as a service that stops half-way.
      const stop = new AbortController();
      const cut = resizeFolder(images, plan, 400, (fraction) => fraction > 0 && stop.abort(), stop.signal);
      await expect(cut).rejects.toThrow();
      expect(photoFacts(photos).map((facts) => Math.max(...facts.size))).toEqual([400, 800, 800]);
      await resizeFolder(images, plan, 400, () => {}, new AbortController().signal);
      expect(photoFacts(photos).map((facts) => Math.max(...facts.size))).toEqual([400, 400, 400]);
      expect(await readFile(path.join(images, 'gcp_list.txt'), 'utf8')).toBe(
        `EPSG:4326\n-0.1 50.8 10 200 150 ${NAMES[0]} gcp1\n-0.1 50.8 10 50 100 ${NAMES[2]} gcp1\n`,
      );
      expect(existsSync(plan)).toBe(false);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
});
