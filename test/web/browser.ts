// A real Chromium (Debian's package) driven by playwright-core, for the web application's end-to-end tests.
// Pages that throw, and resources the security policy refuses, are failures: every such error is collected and
// checked by the tests.
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeJwt } from 'jose';
import { type Browser, type Page, chromium } from 'playwright-core';

export const CHROMIUM = process.env.AEROMAP_CHROMIUM ?? '/usr/bin/chromium';
/** Where the tests leave their screenshots, for people to look at. */
export const SCREENSHOTS = fileURLToPath(new URL('../../dist/screenshots', import.meta.url));
export const VIEWPORTS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;
export type ViewportName = keyof typeof VIEWPORTS;

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`No Chromium at ${CHROMIUM}: \`make install\` installs Debian's chromium package`);
  await mkdir(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--disable-background-networking'],
  });
}

/** A page that records its errors; signed in to the service on 127.0.0.1 with `token` when given, as POST
 * /api/session/ signs a browser in: the token in the session cookie, who it names in the application's storage. */
export async function openPage(browser: Browser, viewport: ViewportName, token?: string): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: VIEWPORTS[viewport], acceptDownloads: true });
  if (token) {
    const { user_id, username, exp } = decodeJwt(token);
    await context.addCookies([{ name: 'aeromap_session', value: token, domain: '127.0.0.1', path: '/api/', httpOnly: true, sameSite: 'Strict' }]);
    await context.addInitScript((value) => localStorage.setItem('aeromap.session', value), JSON.stringify({ user_id, username, exp }));
  }
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  // A resource the security policy refused is a page that does not work as built.
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) errors.push(message.text());
  });
  return { page, errors };
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: false });
}

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/** The page's serious and critical accessibility failures by axe-core's rules (labels, contrast, roles...). */
export async function accessibilityFailures(page: Page): Promise<string[]> {
  // Evaluated through the browser's debugging protocol: the application's policy rightly refuses inline scripts.
  await page.evaluate(await readFile(AXE, 'utf8'));
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document): Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] }> } }).axe;
    return (await axe.run(document)).violations;
  });
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.help}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 5).join(', ')}`);
}

/** Where the map draws a longitude and latitude, in the canvas's pixels. */
export function pixelOf(page: Page, lonLat: number[]): Promise<{ x: number; y: number }> {
  return page.evaluate((p) => {
    const pixel = (window as unknown as { __aeromapMap: { project(p: number[]): { x: number; y: number } } }).__aeromapMap.project(p);
    return { x: pixel.x, y: pixel.y };
  }, lonLat);
}
