// The task tools of the web application in Chromium, against the real service and a processing node: tags shown
// and edited, the #tag search of the projects, Duplicate, Backup, Compact in the task's actions, and a backup
// restored through the project's Import dialog. Screenshots go to dist/screenshots.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningNode } from '../../src/node/index.ts';
import { WEB_DIR, webAppBuilt } from '../../src/service/web.ts';
import { type TestService, startService } from '../service/helpers.ts';
import { TaskStatus, completedTask, fakeNode, finished, makeJpegs, waitForTask } from '../service/taskhelpers.ts';
import { accessibilityFailures, launchBrowser, openPage, screenshot } from './browser.ts';

describe('task tools in Chromium', () => {
  let t: TestService;
  let node: RunningNode;
  let work: string;
  let browser: Browser;

  beforeAll(async () => {
    if (!webAppBuilt()) throw new Error(`The web application is not built in ${WEB_DIR}: run \`make build\``);
    t = await startService('sqlite');
    work = await mkdtemp(path.join(tmpdir(), 'aeromap-web-tools-'));
    ({ node } = await fakeNode(t, path.join(work, 'node')));
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await node?.close();
    await t?.close();
    await rm(work, { recursive: true, force: true });
  });

  it('edits tags, searches by #tag, duplicates, backs up, compacts and restores a task', async () => {
    const projectId = (await t.admin.post('/api/projects/', { name: 'Cliffs', tags: ['coast'] })).body.id;
    await t.admin.post('/api/projects/', { name: 'Quarry', tags: ['inland'] });
    const task = await completedTask(t.admin, projectId, await makeJpegs(path.join(work, 'images'), 3), { name: 'Cliff flight', tags: '["north"]' });
    const { page, errors } = await openPage(browser, 'desktop', t.admin.token);

    // The dashboard: tags on projects and tasks; the search asks the API, in WebODM's syntax.
    await page.goto(`${t.url}/dashboard/`);
    const cliffs = page.getByRole('article', { name: 'Cliffs' });
    await cliffs.getByRole('list', { name: 'Tags of Cliffs' }).getByText('#coast').waitFor();
    await cliffs.getByRole('list', { name: 'Tags of Cliff flight' }).getByText('#north').waitFor();
    await page.getByLabel('Search projects').fill('#inland');
    await page.getByRole('article', { name: 'Quarry' }).waitFor();
    await cliffs.waitFor({ state: 'detached' });
    await page.getByLabel('Search projects').fill('##north');
    await cliffs.waitFor();
    expect(await page.getByRole('article').count()).toBe(1);
    await screenshot(page, 'tag-search-desktop');

    // The task page: tags edited in place.
    await page.goto(`${t.url}/project/${projectId}/task/${task.id}/`);
    await page.getByRole('button', { name: 'Edit tags' }).click();
    await page.getByLabel('Tags, separated by spaces').fill('north #cliff .draft');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('list', { name: 'Tags' }).getByText('#cliff').waitFor();
    expect((await t.admin.get(`/api/projects/${projectId}/tasks/${task.id}/`)).body.tags).toEqual(['north', 'cliff', '.draft']);
    expect(await page.getByText('#.draft').count()).toBe(0);
    await screenshot(page, 'task-tools-desktop');
    expect(await accessibilityFailures(page)).toEqual([]);

    // Backup downloads the task's zip.
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Backup' }).click()]);
    const backup = path.join(work, 'backup.zip');
    await download.saveAs(backup);
    expect(download.suggestedFilename()).toBe('Cliff-flight-backup.zip');

    // Compact, after confirming: the photographs go, the results stay.
    await page.getByRole('button', { name: 'Compact', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Compact task' }).click();
    await page.getByText('removed by Compact').waitFor({ timeout: 20_000 });
    await page.getByRole('button', { name: 'Compact', exact: true }).waitFor({ state: 'detached' });
    await screenshot(page, 'task-compacted-desktop');

    // Duplicate opens the copy's page.
    await page.getByRole('button', { name: 'Duplicate' }).click();
    await page.getByRole('heading', { name: 'Copy of Cliff flight' }).waitFor();
    const copies = (await t.admin.get(`/api/projects/${projectId}/tasks/`, { search: 'Copy' })).body;
    expect(copies).toHaveLength(1);
    expect(copies[0]).toMatchObject({ status: TaskStatus.COMPLETED, compacted: true, tags: ['north', 'cliff', '.draft'] });

    // The backup restored through the project's Import dialog.
    await page.goto(`${t.url}/dashboard/`);
    const quarry = page.getByRole('article', { name: 'Quarry' });
    await quarry.getByRole('button', { name: 'Import' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Zip file').setInputFiles(backup);
    await screenshot(page, 'import-dialog-desktop');
    await dialog.getByRole('button', { name: 'Import' }).click();
    await dialog.waitFor({ state: 'detached' });
    const quarryId = (await t.admin.get('/api/projects/', { search: 'Quarry' })).body.results[0].id;
    const [imported] = (await t.admin.get(`/api/projects/${quarryId}/tasks/`)).body;
    const done = await waitForTask(t.admin, `/api/projects/${quarryId}/tasks/${imported.id}/`, finished);
    expect(done).toMatchObject({ name: 'Cliff flight', status: TaskStatus.COMPLETED, tags: ['north', 'cliff', '.draft'], images_count: 3 });
    await quarry.getByRole('link', { name: 'Cliff flight' }).waitFor({ timeout: 10_000 });
    expect(errors).toEqual([]);
    await page.context().close();
  }, 120_000);
});
